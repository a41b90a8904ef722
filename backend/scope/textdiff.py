"""A word-level diff of a generated answer against its reference, in Token-F1's own terms (docs/metrics.md).

Token-F1 compares bags of words, not sequences, so the diff does too: a word is *matched* when its
normalised token is still unclaimed in the reference's multiset (claimed left to right, each reference
token at most as often as it occurs), *unmatched* when it is not, and *ignored* when normalising leaves
nothing of it (an article, punctuation alone: Token-F1 never counts those). The matched words of the
answer are then exactly Token-F1's overlap, so a reader can check the score from the marks:
``2 * matched / (answer tokens + reference tokens)``. Against several references the one with the best
Token-F1 is shown (the one the score takes).
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from backend.contracts.inspector import DiffWord, WordDiff
from store.token_f1 import normalize_tokens, token_f1

WordState = Literal["matched", "unmatched", "ignored"]


def _words(text: str | None) -> list[tuple[str, str | None]]:
    """(shown word, its token or None) for each white-space separated word: normalising word by word
    gives the same tokens as ``normalize_tokens`` on the whole text (it never joins across spaces)."""
    out = []
    for word in (text or "").split():
        token = normalize_tokens(word)
        out.append((word, token[0] if token else None))
    return out


def _mark(words: list[tuple[str, str | None]], other: list[str]) -> list[DiffWord]:
    """Each word marked against the multiset ``other``, claimed left to right."""
    left = Counter(other)
    marked: list[DiffWord] = []
    for word, token in words:
        state: WordState = "ignored"
        if token is not None:
            state = "matched" if left[token] > 0 else "unmatched"
            left[token] -= state == "matched"
        marked.append(DiffWord(text=word, state=state))
    return marked


def word_diff(prediction: str | None, references: str | list[str] | None) -> WordDiff:
    """The answer's and the best reference's words, each marked, with the overlap and its Token-F1."""
    refs = [references] if isinstance(references, str) or references is None else list(references)
    refs = refs or [""]
    pred = _words(prediction)
    pred_tokens = [t for _, t in pred if t is not None]
    ref_words = [_words(r) for r in refs]
    ref_tokens = [[t for _, t in w if t is not None] for w in ref_words]
    scores = [token_f1(prediction, r) for r in refs]
    best = max(range(len(refs)), key=scores.__getitem__)  # the first of equals, as max() in token_f1
    answer = _mark(pred, ref_tokens[best])
    return WordDiff(
        reference_index=best,
        answer_words=answer,
        reference_words=_mark(ref_words[best], pred_tokens),
        matched=sum(w.state == "matched" for w in answer),
        answer_tokens=len(pred_tokens),
        reference_tokens=len(ref_tokens[best]),
        token_f1=scores[best],
    )
