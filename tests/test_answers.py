"""MCQA answer extraction, Video-MME rule (FORMATS.md)."""

import pytest

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
