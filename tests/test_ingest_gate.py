"""Issue 9, point 3/4: every bad value is refused at ingest with its file and line, through the CLI
(exit 2, one line, no traceback), and the store is left byte-identical."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from backend.cli import main
from store.ingest import gate
from store.store import Store
from tests.ingest_fixtures import table_frame, write_answers, write_per_item, write_table, write_wide


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under the store folder."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def refused(root: Path, argv: list[str], capsys) -> str:
    """Run ``trajaudit ingest``; assert exit 2, one stderr line, store unchanged; return the line."""
    capsys.readouterr()
    before = snapshot(root)
    assert main(["ingest", *argv, "--store", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert snapshot(root) == before
    return err


@pytest.mark.parametrize("value", ["1e308", "inf", "-inf", "-3.5", "7", "Infinity"])
def test_confidence_out_of_range(seeded, tmp_path, capsys, value):
    df = table_frame("m2").astype({"confidence": object})
    df.loc[2, "confidence"] = value
    path = write_table(tmp_path / "in", df=df)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 4: `confidence` must be a number in [0, 1] or empty, got '{value}'" in err


@pytest.mark.parametrize("ext", ["jsonl", "parquet"])
def test_confidence_out_of_range_other_containers(seeded, tmp_path, capsys, ext):
    df = table_frame("m2")
    df.loc[1, "confidence"] = float("inf") if ext == "parquet" else 7.0
    path = write_table(tmp_path / "in", ext, df=df)
    err = refused(seeded, [str(path)], capsys)
    assert "`confidence` must be a number in [0, 1]" in err and ("line 2" in err or "row 2" in err)


def test_score_out_of_range(seeded, tmp_path, capsys):
    df = table_frame("m2").assign(score=[0, 0.5, 1, 1.5, 0, 0])
    err = refused(seeded, [str(write_table(tmp_path / "in", df=df))], capsys)
    assert "line 5: `score` must be a number in [0, 1] or empty, got '1.5'" in err


@pytest.mark.slow
def test_non_numeric_confidence_late_in_a_large_csv(seeded, tmp_path, capsys):
    """`confidence=high` at line 500,002 is refused with that line (never coerced to NaN)."""
    n = 500_001
    body = "".join(f"m2,videomme,{i},16f,A,A,0.5\n" for i in range(n - 1)) + f"m2,videomme,{n - 1},16f,A,A,high\n"
    path = tmp_path / "big.csv"
    path.write_text("model,benchmark,item_id,config,prediction,target,confidence\n" + body)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 500002: `confidence` must be a number, got 'high'" in err


def test_option_probs(seeded, tmp_path, capsys):
    """Probabilities: each finite in [0, 1], summing to 1 within gate.PROB_TOLERANCE."""
    good = json.dumps({"A": 0.7, "B": 0.2, "C": 0.05, "D": 0.05})
    for bad, expected in (
        ({"A": 0.7, "B": 0.2}, "must sum to 1 (within 0.01); the sum is 0.9"),
        ({"A": 1.5, "B": -0.5}, "must hold numbers in [0, 1]"),
        ([0.5, 0.5], "must be a JSON object"),
    ):
        df = table_frame("m2").assign(option_probs=good)
        df.loc[4, "option_probs"] = json.dumps(bad)
        err = refused(seeded, [str(write_table(tmp_path / "in", df=df))], capsys)
        assert "line 6: `option_probs` " + expected in err


def test_option_probs_within_tolerance_are_stored(tmp_path):
    df = table_frame("m2").assign(option_probs=json.dumps({"A": 0.705, "B": 0.3}), letter_mass=0.9)
    assert main(["ingest", str(write_table(tmp_path / "in", df=df)), "--store", str(tmp_path / "s")]) == 0
    got = Store(tmp_path / "s").query("SELECT DISTINCT option_probs, letter_mass FROM responses")
    assert len(got) == 1 and got["letter_mass"].iloc[0] == 0.9


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("frame_count", "-5", "`frames` must be an integer in 1..16,384 or empty, got '-5'"),
        ("frame_count", "2.5", "`frames` must be an integer in 1..16,384 or empty, got '2.5'"),
        ("frame_count", "many", "`frames` must be a number, got 'many'"),
        ("pixel_count", "0", "`pixels` must be an integer in 1..67,108,864 or empty, got '0'"),
    ],
)
def test_scalegrid_counts(seeded, tmp_path, capsys, column, value, message):
    path = write_per_item(tmp_path / "in")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[3, column] = value
    df.to_csv(path, index=False)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 5: {message}" in err


@pytest.mark.parametrize("cut", ["short", "long"])
def test_csv_rows_with_wrong_field_count(seeded, tmp_path, capsys, cut):
    path = write_table(tmp_path / "in", df=table_frame("m2").drop(columns=["question", "options"]))
    lines = path.read_text().splitlines()
    lines[3] = lines[3].rsplit(",", 2)[0] if cut == "short" else lines[3] + ",extra"
    path.write_text("\n".join(lines) + "\n")
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 4: {5 if cut == 'short' else 8} field(s) where the header has 7" in err


def test_wide_scalegrid_cut_mid_row(seeded, tmp_path, capsys):
    """The last row of a wide CSV cut short must fail, not store its missing cells as wrong answers."""
    path = write_wide(tmp_path / "in")
    answers = write_answers(tmp_path / "in")
    text = path.read_text()
    path.write_text(text[: text.rstrip("\n").rfind(",")])  # the last row loses its last cell
    err = refused(seeded, [str(path), "--answers", str(answers)], capsys)
    assert f"{path} line 7: 2 field(s) where the header has 3" in err


def test_oversized_field_and_file(seeded, tmp_path, capsys, monkeypatch):
    df = table_frame("m2")
    df.loc[2, "prediction"] = "A" + "x" * 200
    path = write_table(tmp_path / "in", df=df)
    monkeypatch.setattr(gate, "MAX_FIELD_CHARS", 100)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 4: `raw_output`: a field of 201 characters is above the 100-character limit" in err
    monkeypatch.setattr(gate, "MAX_FILE_BYTES", 50)
    err = refused(seeded, [str(path)], capsys)
    assert "GiB ingest limit; split it into smaller files" in err


def test_config_labels(seeded, tmp_path, capsys):
    """--config 08f stores 8f; an out-of-range label is refused with one line; so is one in the file."""
    df = table_frame("m2").drop(columns="config")
    path = write_table(tmp_path / "in", df=df)
    err = refused(seeded, [str(path), "--config", "9999999999f"], capsys)
    assert "--config: config label '9999999999f': at most 16,384 frames" in err
    bad = write_table(tmp_path / "in2", df=table_frame("m3", config="99999f"))
    err = refused(seeded, [str(bad)], capsys)
    assert f"{bad} line 2: config label '99999f'" in err
    assert main(["ingest", str(path), "--config", "08f", "--store", str(seeded)]) == 0
    stored = Store(seeded).query("SELECT DISTINCT config FROM responses WHERE model = 'm2'")["config"].tolist()
    assert stored == ["8f"]
