"""Option letters: the one home for the letters an item allows, lettered option text, letter
targets, and the letter in a model's raw output (the Video-MME rule, FORMATS.md "Answer extraction").

Every layer that reads or writes a letter uses this module: the ingesters (options, targets, the
answer in raw text), the re-run prompt and its letter scoring (``backend.runtime.inference``) and
the pages. The letters are A..H in order; an item allows the first ``n_options`` of them.

Extraction: strip a leading phrase such as "The best answer is"; then the first standalone option
letter among those the item allows is the answer. No letter means no answer: it counts as wrong,
and the caller flags the row so the summary can count it. The raw text is always kept by the caller.
"""

from __future__ import annotations

import re
from typing import TypeGuard

LETTERS = "ABCDEFGH"
"""The option letters, in order; an item has at most ``len(LETTERS)`` options."""

_LETTER = f"[{LETTERS[0]}-{LETTERS[-1]}]"
# "A. text", "(A) text", "A: text": the letter, its mark, the white space after it, the option's text.
_LETTERED = re.compile(rf"^\s*\(?({_LETTER})[.):](\s*)(.*?)\s*$", re.DOTALL)
# A target written as a letter: "a", "B", "(C)", "D.", "E)" (already stripped).
_LETTER_TARGET = re.compile(rf"^\(?({_LETTER})[).:]?$", re.IGNORECASE)

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


def allowed_letters(n_options: int) -> str:
    """The letters an item with ``n_options`` options allows (A..D for four; at least A, at most H)."""
    return LETTERS[: max(1, min(int(n_options), len(LETTERS)))]


def option_letters(options: list[str]) -> list[str]:
    """Letters of the options by position (A, B, C, ...): the answer key of every stored benchmark."""
    return list(LETTERS[: len(options)])


def split_lettered(option: object, *, spaced: bool = False) -> tuple[str, str] | None:
    """(letter, text) of a lettered option ("A. Apples", "(B) Dogs", "C: cats"); None when it has no letter.

    ``spaced``: white space must follow the letter's mark, so that "A.M. radio" is a bare option.
    """
    m = _LETTERED.match(str(option))
    if m is None or (spaced and not m[2]):
        return None
    return m[1], m[3]


def letter_of(option: object) -> str | None:
    """The letter a lettered option starts with ("B. blue" -> "B"), or None."""
    found = split_lettered(option)
    return found[0] if found else None


def is_letter(value: object) -> TypeGuard[str]:
    """Whether ``value`` is one option letter ("C"; not "c", not "CD")."""
    return isinstance(value, str) and len(value) == 1 and value in LETTERS


def with_letters(texts: list[str]) -> list[str]:
    """Option texts as stored and shown: ["A. red", "B. blue", ...] (letters by position)."""
    return [f"{letter}. {text}" for letter, text in zip(LETTERS, texts)]


def lettered(options: list[str]) -> list[str]:
    """Options as shown to a model: lettered ones ("A. ...") stay; bare ones get their letter."""
    return [opt if split_lettered(opt, spaced=True) else f"{letter}. {opt}" for letter, opt in zip(LETTERS, options)]


def letter_or_text(value: object) -> str | None:
    """A target written as a letter ('a', ' B ', '(C)', 'D.') -> the letter; other text stripped
    (an open-ended reference); empty or missing -> None."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    s = str(value).strip()
    if not s:
        return None
    m = _LETTER_TARGET.match(s)
    return m[1].upper() if m else s


_BEYOND_TARGET = re.compile(rf"^\(?([{chr(ord(LETTERS[-1]) + 1)}-Z])[).:]?$", re.IGNORECASE)


def beyond_letters(value: object) -> bool:
    """Whether a target is written as one letter past the last option letter ('I', 'j', '(K)'): an option of an
    item with more than ``len(LETTERS)`` options, which the store cannot hold, far likelier than a
    one-letter open-ended answer (ingest refuses it unless the row says its answer type)."""
    return value is not None and _BEYOND_TARGET.match(str(value).strip()) is not None


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
    m = re.search(rf"(?<![A-Za-z])([{allowed_letters(n_options)}])(?![A-Za-z])", s)
    return m.group(1) if m else None


_YES_NO_TARGET = re.compile(r"^\s*(yes|no)[.!]?\s*$", re.IGNORECASE)
_YES_NO_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def yes_no_target(value: object) -> str | None:
    """``"yes"`` or ``"no"`` for a target that is that word (any case, a full stop allowed), else None: a binary
    question is judged by the word, not scored by Token-F1 like a free-text reference (issue 35)."""
    m = _YES_NO_TARGET.match(value) if isinstance(value, str) else None
    return m.group(1).lower() if m else None


def extract_yes_no(text: object) -> str | None:
    """The first standalone ``yes`` or ``no`` of a raw output (after the leading phrases the letter rule strips),
    lower-cased; None when it says neither (no answer, counted wrong like a missing letter)."""
    if not isinstance(text, str):
        return None
    m = _YES_NO_WORD.search(_PREFIX_RE.sub("", text, count=1))
    return m.group(1).lower() if m else None
