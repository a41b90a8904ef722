"""The text every family is asked: question, lettered options, and an instruction ending at the answer.

Why one place: a re-run must ask every model the same thing so that differences between budgets and
models are the model's, not the prompt's. The MCQA instruction is lmms-eval's Video-MME post-prompt;
it ends right before the answer token, which letter scoring reads. The chat template of each
checkpoint wraps this text (and the video) in the model's own conversation markup.
"""

from __future__ import annotations

import re

LETTERS = "ABCDEFGH"
MCQA_INSTRUCTION = "Answer with the option's letter from the given choices directly."
OPEN_INSTRUCTION = "Answer the question using a single word or phrase."
_LETTERED = re.compile(r"^\s*\(?([A-H])[.):]\s")


def option_letters(options: list[str]) -> list[str]:
    """Letters of the options by position (A, B, C, ...): the answer key of every stored benchmark."""
    return list(LETTERS[: len(options)])


def lettered(options: list[str]) -> list[str]:
    """Options as shown to the model: stored ones already read "A. ..."; bare ones get their letter."""
    return [opt if _LETTERED.match(opt) else f"{letter}. {opt}" for letter, opt in zip(LETTERS, options)]


def user_text(question: str, options: list[str], answer_type: str) -> str:
    """The user turn's text for an MCQA or open-ended item."""
    if answer_type == "mcqa":
        return "\n".join([question.strip(), *lettered(options), MCQA_INSTRUCTION])
    return f"{question.strip()}\n{OPEN_INSTRUCTION}"
