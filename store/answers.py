"""MCQA answer extraction, compatible with the Video-MME rule (FORMATS.md, "Answer extraction").

Strip a leading phrase such as "The best answer is"; then the first standalone option letter among
those the item allows is the answer. No letter means no answer: it counts as wrong, and the caller
flags the row so the summary can count it. The raw text is always kept by the caller.
"""

from __future__ import annotations

import re

_PREFIXES = [
    "the best answer is",
    "the correct answer is",
    "the answer is",
    "the answer",
    "best answer:",
    "answer:",
    "option:",
    "the best option is",
    "the correct option is",
]
_PREFIX_RE = re.compile(r"^\s*(?:" + "|".join(re.escape(p) for p in _PREFIXES) + r")\s*:?\s*", re.IGNORECASE)


def extract_letter(text: object, n_options: int = 4) -> str | None:
    """The option letter in a model's raw output, or None when there is none.

    ``n_options`` limits the letters considered (A..D for four options, up to H).
    """
    if text is None:
        return None
    s = str(text).strip()
    if not s:
        return None
    s = _PREFIX_RE.sub("", s, count=1)
    letters = "ABCDEFGH"[: max(1, min(n_options, 8))]
    m = re.search(rf"(?<![A-Za-z])([{letters}])(?![A-Za-z])", s)
    return m.group(1) if m else None
