"""Token-F1 of a generated answer against its references (docs/metrics.md, SQuAD's normalisation).

A leaf module (it imports nothing from the project) because two layers score text with it: ingest
(``store.ingest.scores``) fills the score of an open-ended response a file gives without one, and
the worker scores the answers it generates (``backend.runtime.inference.hf``). One tokenizer for
both means a stored score means the same thing whoever wrote it.
"""

from __future__ import annotations

import re
from collections import Counter

_PUNCT = re.compile(r"[^\w\s]|_")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_tokens(text: str | None) -> list[str]:
    """Lower-case, strip punctuation and the articles a/an/the, split on white space."""
    text = _PUNCT.sub("", (text or "").lower())  # deleted, as SQuAD does: "don't" -> "dont"
    return _ARTICLES.sub(" ", text).split()


def _f1(pred: list[str], ref: list[str]) -> float:
    if not pred or not ref:
        return float(not pred and not ref)  # both empty: 1; exactly one empty: 0
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str | None, references: str | list[str] | None) -> float:
    """Token-F1 of the prediction against each reference (multisets of tokens), the best one.

    No references at all counts as one empty reference.
    """
    refs = [references] if isinstance(references, str) or references is None else list(references)
    pred = normalize_tokens(prediction)
    return max(_f1(pred, normalize_tokens(r)) for r in refs or [""])
