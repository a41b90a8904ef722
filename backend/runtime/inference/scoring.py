"""Option-letter scoring (one forward pass) and Token-F1 for open-ended answers, shared by all families.

MCQA: the next-token distribution right after the prompt, read at each option letter's token id,
gives the answer (argmax), its confidence (its renormalised probability) and the letter mass (total
probability on letters before renormalising; low mass means the model wanted to say something else).

Which token is "the letter" depends on the tokenizer and on how the prompt ends: after Qwen's
``<|im_start|>assistant\\n`` a model writes a bare ``A``; after LLaVA's ``ASSISTANT:`` it writes
``▁A`` (SentencePiece) because a space comes first. The robust rule (INFERENCE.md) takes the ids
that ``tok(prompt + " A")`` adds beyond ``tok(prompt)``; we add the space only when the prompt does
not already end in white space, because after a newline `` A`` is a *different* token (``ĠA`` in
byte-level BPE) from the bare ``A`` the model emits there. Each letter must come out as exactly one
new token, distinct per letter, or scoring refuses with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from store.errors import UserError


@dataclass(frozen=True)
class LetterScores:
    option_probs: dict[str, float]  # renormalised over the option letters
    answer: str
    confidence: float
    letter_mass: float


def letter_token_ids(tokenizer, prompt: str, letters: list[str]) -> list[int]:
    """The token id each option letter gets when written right after ``prompt``."""
    sep = "" if prompt[-1:].isspace() else " "
    base, *fulls = tokenizer([prompt, *(prompt + sep + letter for letter in letters)], add_special_tokens=False)[
        "input_ids"
    ]  # one call: the same ids as one call per text
    ids = []
    for letter, full in zip(letters, fulls):
        if len(full) != len(base) + 1 or full[: len(base)] != base:
            added = tokenizer.convert_ids_to_tokens(full[len(base) :]) if full[: len(base)] == base else full
            raise UserError(
                f"letter scoring: option {letter!r} is not one token after the prompt "
                f"(the tokenizer adds {added!r}); this tokenizer cannot be scored by letter"
            )
        ids.append(full[-1])
    if len(set(ids)) != len(ids):
        raise UserError(f"letter scoring: options {letters} share token ids {ids}")
    return ids


def score_letters(logits: torch.Tensor, letter_ids: list[int], letters: list[str]) -> LetterScores:
    """Answer, confidence and letter mass from the next-token logits ``[vocab]``."""
    logp = torch.log_softmax(logits.float(), dim=-1)[letter_ids]
    mass = float(logp.exp().sum())
    probs = torch.softmax(logp, dim=-1).tolist()
    best = max(range(len(letters)), key=probs.__getitem__)
    return LetterScores(dict(zip(letters, probs)), letters[best], probs[best], mass)
