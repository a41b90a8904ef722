"""MCQA answer extraction, Video-MME rule (FORMATS.md)."""

import pytest

from store import answers
from store.answers import extract_letter


@pytest.mark.parametrize(
    "raw, n, expected",
    [
        ("B.", 4, "B"),
        ("B", 4, "B"),
        ("The best answer is C.", 4, "C"),
        ("The correct answer is: (D) a cat", 4, "D"),
        ("Answer: A", 4, "A"),
        ("Best answer: B", 4, "B"),
        ("Option: D", 4, "D"),
        ("the answer is b", 4, None),  # lower-case letters are words, not options
        ("(A) Apples.", 4, "A"),
        ("E", 4, None),  # not an allowed option
        ("E", 5, "E"),
        ("I cannot tell from the video.", 4, None),  # "I" is not an option letter here
        ("", 4, None),
        (None, 4, None),
        ("Answer:B", 4, "B"),
    ],
)
def test_extract_letter(raw, n, expected):
    assert extract_letter(raw, n) == expected


@pytest.mark.parametrize(
    "option, loose, spaced",
    [
        ("A. Apples", ("A", "Apples"), ("A", "Apples")),
        ("(B) Dogs ", ("B", "Dogs"), ("B", "Dogs")),
        ("  C: cats", ("C", "cats"), ("C", "cats")),
        ("A.M. radio", ("A", "M. radio"), None),  # no space after the mark: a bare option when spaced
        ("D.", ("D", ""), None),
        ("I. nine", None, None),  # I is beyond H
        ("a. lower", None, None),
        ("Apples", None, None),
    ],
)
def test_split_lettered(option, loose, spaced):
    assert answers.split_lettered(option) == loose
    assert answers.split_lettered(option, spaced=True) == spaced


def test_letter_lists_and_lettering():
    assert answers.LETTERS == "ABCDEFGH"
    assert answers.allowed_letters(4) == "ABCD" and answers.allowed_letters(0) == "A"
    assert answers.allowed_letters(12) == "ABCDEFGH"
    assert answers.option_letters(["x", "y", "z"]) == ["A", "B", "C"]
    assert answers.with_letters(["red", "blue"]) == ["A. red", "B. blue"]
    assert answers.lettered(["A. Apples.", "Candles", "(C) Dogs", "A.M. radio"]) == [
        "A. Apples.",
        "B. Candles",
        "(C) Dogs",
        "D. A.M. radio",
    ]
    assert answers.letter_of("B. blue") == "B" and answers.letter_of("(C) Dogs") == "C"
    assert answers.letter_of("blue") is None


def test_letter_targets():
    got = [answers.letter_or_text(v) for v in ["a", " B ", "(C)", "D.", "E)", "", None, float("nan"), "the cat"]]
    assert got == ["A", "B", "C", "D", "E", None, None, None, "the cat"]
    assert [answers.is_letter(v) for v in ["C", "c", "CD", "I", None, ""]] == [True, False, False, False, False, False]
