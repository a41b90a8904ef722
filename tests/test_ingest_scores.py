"""Issue 22 part 4: scores in the forms real tools write (``store.ingest.scores``).

A judge's verdict word as ``correct``, a 1-5 rating mapped onto 0..1 by ``--score-scale``, Token-F1
computed at ingest, ``score_source`` per row; every file is written by hand and each expected number
is worked out in the comments. Bad input goes through the CLI: exit 2, one line, store unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from backend.cli import main
from store.errors import UserError
from store.ingest import scores
from store.store import Store
from tests.ingest_fixtures import ingest_quietly, private_copy
from tests.test_ingest_gate import refused

# A judge-style file: per item and budget, the generated answer, the judge's verdict word (spelled
# as judges write them) and its 1-5 rating.
#            8f: verdict, rating   16f: verdict, rating
#   q1       Correct    5          correct    4
#   q2       incorrect  2          Correct    4
#   q3       yes        3          NO         1
#   q4       no         1          Yes        3
JUDGED = [
    ("q1", "8f", "Correct", 5), ("q1", "16f", "correct", 4),
    ("q2", "8f", "incorrect", 2), ("q2", "16f", "Correct", 4),
    ("q3", "8f", "yes", 3), ("q3", "16f", "NO", 1),
    ("q4", "8f", "no", 1), ("q4", "16f", "Yes", 3),
]  # fmt: skip
JUDGE_MAP = "item_id=qid,config=budget,prediction=pred,target=answer,correct=verdict,score=rating"
CLI = ["--model", "judge-m", "--benchmark", "mlvu-gen"]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def judge_file(tmp_path: Path, rows: list[tuple] = JUDGED) -> Path:
    return write_jsonl(
        tmp_path / "judge.jsonl",
        [
            {
                "qid": q,
                "budget": c,
                "pred": f"a person opens door {i}",
                "answer": "a person opens the door",
                "verdict": v,
                "rating": r,
            }
            for i, (q, c, v, r) in enumerate(rows)
        ],
    )


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def judged_metrics(capsys, root: Path, bootstrap: str) -> dict:
    """``trajaudit metrics --json`` over the judged store's two configs; it must succeed."""
    argv = ["--store", str(root), "--models", "judge-m", "--grid", "8f,16f", "--bootstrap", bootstrap, "--json"]
    rc, out, err = cli(capsys, "metrics", *argv)
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def judged_template(tmp_path_factory) -> Path:
    """The judge file ingested once (eight rows, every score from the judge); tests take copies."""
    base = tmp_path_factory.mktemp("judged")
    argv = [str(judge_file(base)), "--store", str(base / "store"), "--map", JUDGE_MAP, *CLI]
    out = ingest_quietly(*argv, "--score-scale", "1:5", "--json")
    assert json.loads(out)["scores"] == {"judge": 8}
    return base / "store"


@pytest.fixture
def judged(judged_template, tmp_path) -> Path:
    """A private copy of the judged store (a test may write to it)."""
    return private_copy(judged_template, tmp_path)


def test_a_judge_file_ingests_and_its_numbers_are_the_hand_computation(judged, capsys):
    # Ratings mapped (r - 1) / 4:   8f: 1.0, 0.25, 0.5, 0.0     16f: 0.75, 0.75, 0.0, 0.5
    # mean score: 8f 1.75/4 = 0.4375; 16f 2.0/4 = 0.5; best fixed 16f.
    # oracle mean: per item max 1.0, 0.75, 0.5, 0.5 -> 2.75/4 = 0.6875; oracle gap 0.6875 - 0.5 = 0.1875.
    # 8f -> 16f score drops: q1 (1.0 -> 0.75), q3 (0.5 -> 0.0): regression rate 2/4.
    # Accuracy from the verdicts: 8f q1, q3 right: 2/4; 16f q1, q2, q4 right: 3/4.
    out = judged_metrics(capsys, judged, bootstrap="200")
    m = out["models"]["judge-m"]
    assert m["accuracy"] == pytest.approx({"8f": 0.5, "16f": 0.75})
    c = m["continuous"]
    assert (c["n_items"], c["n_unscored"]) == (4, 0)
    assert c["mean_score"] == pytest.approx({"8f": 0.4375, "16f": 0.5})
    assert c["best_fixed"] == {"config": "16f", "mean_score": pytest.approx(0.5)}
    assert c["oracle_mean"] == pytest.approx(0.6875)
    assert c["oracle_gap"] == pytest.approx(0.1875)
    assert [t["regression_rate"] for t in c["transitions"]] == pytest.approx([0.5])


def test_each_judged_row_records_its_source_and_mapped_score(judged):
    got = Store(judged).query("SELECT item_id, config, correct, score, score_source FROM responses")
    by = {(r.item_id, r.config): r for r in got.itertuples()}
    assert len(by) == 8 and set(got["score_source"]) == {"judge"}
    for q, c, verdict, rating in JUDGED:
        row = by[(q, c)]
        assert (row.correct, row.score) == (int(verdict.lower() in ("correct", "yes")), (rating - 1) / 4)


def test_token_f1_is_computed_where_a_file_gives_text_and_reference_but_no_score(tmp_path, capsys):
    # q1 has its own score (0.3: "file"); q2 and q3 have none: Token-F1 against the reference.
    # q2 "red car" vs "a red car": tokens {red, car} both sides -> 1.0.
    # q3 "blue car parked" vs "red car": common {car}: precision 1/3, recall 1/2 -> F1 2*(1/6)/(5/6) = 0.4.
    # No verdict anywhere: open-ended rows scored and not judged keep `correct` empty.
    path = write_jsonl(
        tmp_path / "open.jsonl",
        [
            {"item_id": "q1", "prediction": "anything", "target": "a reference", "score": 0.3},
            {"item_id": "q2", "prediction": "red car", "target": "a red car"},
            {"item_id": "q3", "prediction": "blue car parked", "target": "red car"},
        ],
    )
    root = tmp_path / "store"
    rc, out, err = cli(capsys, "ingest", str(path), "--store", str(root), *CLI, "--config", "8f", "--json")
    assert rc == 0, err
    assert json.loads(out)["scores"] == {"file": 1, "token_f1": 2}
    got = Store(root).query("SELECT item_id, correct, score, score_source FROM responses ORDER BY item_id")
    assert got["score"].tolist() == pytest.approx([0.3, 1.0, 0.4])
    assert got["score_source"].tolist() == ["file", "token_f1", "token_f1"]
    assert got["correct"].isna().all()
    rc, out, _ = cli(capsys, "ingest", str(path), "--store", str(root), *CLI, "--config", "8f")
    assert "scores: file 1, token_f1 2" in out  # the text summary names them too (nothing new stored)


def test_a_store_written_before_score_source_still_reads(judged, capsys):
    for f in (judged / "responses").glob("*.parquet"):  # as an older version wrote them
        pq.write_table(pq.read_table(f).drop_columns(["score_source"]), f)
    rc, out, err = cli(capsys, "check", "--store", str(judged), "--json")
    assert rc == 0 and json.loads(out)["sound"] is True, out + err
    got = Store(judged).query("SELECT count(*) AS n, count(score_source) AS known FROM responses")
    assert (int(got["n"][0]), int(got["known"][0])) == (8, 0)  # read as null: not recorded
    out = judged_metrics(capsys, judged, bootstrap="0")
    assert out["models"]["judge-m"]["continuous"]["oracle_gap"] == pytest.approx(0.1875)


@pytest.mark.parametrize(
    ("text", "expected"), [("1:5", (1.0, 5.0)), ("0:100", (0.0, 100.0)), (" -1 : 1 ", (-1.0, 1.0)), (None, None)]
)
def test_parse_scale(text, expected):
    assert scores.parse_scale(text) == expected


@pytest.mark.parametrize("text", ["1-5", "5:1", "3:3", "a:b", "1:inf", "nan:5", "1:5:7", ":"])
def test_a_malformed_score_scale_is_refused(judged, tmp_path, capsys, text):
    with pytest.raises(UserError, match="expected MIN:MAX"):
        scores.parse_scale(text)
    err = refused(
        judged, [str(judge_file(tmp_path / "again")), "--map", JUDGE_MAP, "--score-scale=" + text, *CLI], capsys
    )
    assert err.endswith(
        f"error: --score-scale {text!r}: expected MIN:MAX, two finite numbers with MIN < MAX (e.g. 1:5)"
    )


@pytest.mark.parametrize("rating", [7, 0, 5.5, -1e308])
def test_a_score_outside_the_declared_scale_is_refused(judged, tmp_path, capsys, rating):
    rows = list(JUDGED)
    rows[2] = ("q2", "8f", "incorrect", rating)  # on line 3
    path = judge_file(tmp_path / "bad", rows)
    err = refused(judged, [str(path), "--map", JUDGE_MAP, "--score-scale", "1:5", *CLI], capsys)
    assert f"{path} line 3: `score` {rating!r} is outside the declared --score-scale 1:5" in err


def test_an_unknown_verdict_word_is_refused(judged, tmp_path, capsys):
    rows = list(JUDGED)
    rows[5] = ("q3", "16f", "partially", 3)
    path = judge_file(tmp_path / "bad", rows)
    err = refused(judged, [str(path), "--map", JUDGE_MAP, "--score-scale", "1:5", *CLI], capsys)
    assert (
        f"{path} line 6: `correct` must be 0 or 1, got 'partially' (true/false, correct/incorrect, yes/no also read)"
        in err
    )


def test_a_rating_without_a_declared_scale_is_refused(judged, tmp_path, capsys):
    path = judge_file(tmp_path / "bad")
    err = refused(judged, [str(path), "--map", JUDGE_MAP, *CLI], capsys)
    assert (
        f"{path} line 1: `score` must be a number in [0, 1] or empty, got 5 (declare another scale: --score-scale"
        in err
    )


def test_a_declared_scale_for_a_file_without_scores_is_refused(judged, tmp_path, capsys):
    path = judge_file(tmp_path / "bad")
    no_score = JUDGE_MAP.replace(",score=rating", "")
    err = refused(judged, [str(path), "--map", no_score, "--score-scale", "1:5", *CLI], capsys)
    assert err.endswith(f"{path}: --score-scale 1:5 is given but the file has no `score`")
