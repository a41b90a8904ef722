"""Answer extraction and target normalisation as the ingesters apply them (column-wise)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from store.answers import extract_letter
from store.ingest.common import count_flags, extract_answers, json_rows, normalise_letters
from store.ingest.lmms_eval import _response_text, config_from_model_args, parse_model_args, parse_prompt
from store.ingest.scalegrid import benchmark_of_split

CASES = [
    ("A", 4, "A"),
    (" b ", 4, None),  # lower case is not an option letter
    ("The best answer is: C", 4, "C"),
    ("The correct answer is (D).", 4, "D"),
    ("Answer: B. Because the man runs.", 4, "B"),
    ("Option: E", 4, None),  # E is beyond four options
    ("Option: E", 5, "E"),
    ("I think", 4, None),  # "I" is not among A-D
    ("I think", 8, None),  # nor with eight options: I comes after H
    ("", 4, None),
    ("!!!!!!!!!!!!!!!!", 4, None),
    ("The answer isA", 4, "A"),  # the prefix is stripped first
    ("BA", 4, None),
    ("(C) sitting", 4, "C"),
]


@pytest.mark.parametrize("text,n,expected", CASES)
def test_extract_letter_cases(text, n, expected):
    assert extract_letter(text, n) == expected


def test_column_extraction_equals_the_rule_row_by_row():
    texts = [t for t, _, _ in CASES] * 3 + [None]
    n = np.array([k for _, k, _ in CASES] * 3 + [4])
    got = np.asarray(extract_answers(pd.Series(texts, dtype="str"), n), dtype=object)
    want = [extract_letter(t, k) if t is not None else None for t, k in zip(texts, n)]
    assert [None if pd.isna(g) else g for g in got] == want


def test_rows_that_are_not_multiple_choice_get_no_answer():
    got = extract_answers(pd.Series(["A", "A"]), np.array([4, 0]))
    assert got[0] == "A" and pd.isna(got[1])


def test_target_normalisation():
    got = normalise_letters(pd.Series(["a", " B ", "(C)", "D.", "", None, "the cat sat"], dtype=object))
    assert [None if pd.isna(v) else v for v in got] == ["A", "B", "C", "D", None, None, "the cat sat"]


def test_flag_counts_add_up_each_name():
    flags = pd.Series(["no-answer", "no-answer,unparseable", None, "protocol-note", "no-answer"])
    assert count_flags(flags) == {"no-answer": 3, "protocol-note": 1, "unparseable": 1}


def test_prompt_parsing_drops_instructions_and_keeps_options():
    prompt = (
        "Select the best answer to the following multiple-choice question based on the video.\n"
        "Respond with only the letter (A, B, C, or D) of the correct option.\n"
        "What colour is the car?\nA. Red.\nB. Blue.\nC. Green.\nD. Black.\nThe best answer is:"
    )
    q, opts = parse_prompt(prompt)
    assert q == "What colour is the car?" and opts == ["A. Red.", "B. Blue.", "C. Green.", "D. Black."]
    assert parse_prompt("no options here") == (None, [])


def test_budget_from_lmms_model_args():
    assert config_from_model_args(parse_model_args("pretrained=a/b,max_frames_num=64,conv_template=x")) == "64f"
    assert config_from_model_args(parse_model_args("num_frame=8,max_pixels=602112")) == "8f@602.112k"
    assert config_from_model_args(parse_model_args("max_num_frames=32,fps=2")) == "32f/fps-2"
    assert config_from_model_args(parse_model_args("pretrained=a/b")) is None
    with pytest.raises(ValueError, match="without a frame count"):
        config_from_model_args({"fps": "1"})


def test_response_text_from_every_spelling_of_filtered_resps():
    assert _response_text(["B."]) == "B."
    assert _response_text([["C"]]) == "C"
    assert _response_text("['D. Because']") == "D. Because"  # a Python repr of the list
    assert _response_text("A plain answer") == "A plain answer"
    assert _response_text([]) is None and _response_text(None) is None


def test_json_rows_survive_line_separators_inside_values():
    df = pd.DataFrame({"note": ["a\nb", "c\u2028d", None], "n": [1, 2, 3]})
    got = [json.loads(x) for x in json_rows(df)]
    assert got == [{"note": "a\nb", "n": 1}, {"note": "c\u2028d", "n": 2}, {"note": None, "n": 3}]
    assert json_rows(df[[]]).isna().all()


def test_scalegrid_splits_name_their_benchmark():
    got = benchmark_of_split(pd.Series(["V1_short", "V2_medium", "MLVU", "other"]))
    assert [None if pd.isna(v) else v for v in got] == ["videomme", "videomme", "mlvu", None]
