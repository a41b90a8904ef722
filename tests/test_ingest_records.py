"""Issue 35, point 1: nested JSON read with documented flags alone (docs/formats.md, "Record paths").

Two shapes as their authors wrote them, generated here: an open-ended suite keyed
``{video_id: {dimension: [records]}}`` (an LLM judge's verdict and 0-5 score), and a list of
``[judge, qa]`` pairs without item ids (multiple choice, judged). Each is ingested with ``--records``,
``--record-keys``, ``--merge`` and ``--map`` only, and its numbers are checked against a hand count.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.cli import main

SUITE = {  # video -> dimension -> records: (qid, verdict at 8f, score at 8f, verdict at 32f, score at 32f)
    "1034419625": {
        "temporal": [("q1", "yes", 4, "yes", 5), ("q2", "no", 1, "yes", 3)],
        "causal": [("q1", "no", 0, "no", 2)],
    },
    "2077": {
        "temporal": [("q1", "yes", 5, "no", 2)],
        "counting": [("q1", "no", 2, "yes", 4), ("q2", "yes", 3, "yes", 3)],
    },
}


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _suite_file(tmp_path: Path, config: str) -> Path:
    at = 0 if config == "8f" else 2
    doc = {
        video: {
            dim: [
                {
                    "qid": r[0],
                    "question": f"What happens in {dim}?",
                    "reference": "The man lifts a coin.",
                    "response": f"answer {video} {r[0]}",
                    "judgement": r[1 + at],
                    "score": r[2 + at],
                }
                for r in recs
            ]
            for dim, recs in dims.items()
        }
        for video, dims in SUITE.items()
    }
    path = tmp_path / f"suite_{config}.json"
    path.write_text(json.dumps(doc))
    return path


SUITE_FLAGS = [
    "--records", "$.*.*[*]", "--record-keys", "video_id,dim",
    "--map", "item_id=video_id+dim+qid,correct=judgement,prediction=response,target=reference,task_type=dim",
    "--score-scale", "0:5", "--model", "judge-7b", "--benchmark", "suite",
]  # fmt: skip


def test_a_document_keyed_by_video_and_dimension_ingests_with_flags_alone(tmp_path, capsys):
    store = str(tmp_path / "s")
    for config in ("8f", "32f"):
        rc, out, err = _cli(
            capsys, "ingest", str(_suite_file(tmp_path, config)), "--store", store, *SUITE_FLAGS, "--config", config
        )
        assert rc == 0, err
    rc, out, err = _cli(capsys, "items", "--store", store, "--model", "judge-7b", "--json")
    ids = sorted(r["item_id"] for r in json.loads(out))
    assert ids == sorted(f"{v}/{d}/{r[0]}" for v, ds in SUITE.items() for d, rs in ds.items() for r in rs), err
    rc, out, err = _cli(capsys, "metrics", "--store", store, "--models", "judge-7b", "--json")
    m = json.loads(out)["models"]["judge-7b"]
    # by hand: 6 items; verdicts yes at 8f: 3 of 6, at 32f: 4 of 6; scores / 5
    assert m["accuracy"] == pytest.approx({"8f": 3 / 6, "32f": 4 / 6})
    assert m["continuous"]["mean_score"] == pytest.approx(
        {"8f": (4 + 1 + 0 + 5 + 2 + 3) / 30, "32f": (5 + 3 + 2 + 2 + 4 + 3) / 30}
    )


PAIRS = [  # (verdict at 16f, video, question, answer letter, prediction)
    ("correct", "clips/a.mp4", "What comes first?", "B", "B. The door opens."),
    ("incorrect", "clips/a.mp4", "What comes last?", "A", "C"),
    ("correct", "clips/b.mp4", "What comes first?", "C", "The answer is C"),
    ("Incorrect", "clips/c.mp4", "How many times?", "D", "A"),
    ("correct", "clips/c.mp4", "Is it before?", "A", "A"),
]


def _pairs_file(tmp_path: Path) -> Path:
    doc = [
        [
            {"judge_model": "gpt-4o", "verdict": verdict, "rationale": "..."},
            {"video": video, "question": q, "candidates": ["one", "two", "three", "four"], "answer": a, "pred": p},
        ]
        for verdict, video, q, a, p in PAIRS
    ]
    path = tmp_path / "judged_16f.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_list_of_judge_and_record_pairs_ingests_with_merge(tmp_path, capsys):
    store = str(tmp_path / "s")
    flags = [
        "--records", "$[*][1]", "--merge", "judge=$[*][0]",
        "--map", "item_id=video+question,options=candidates,target=answer,prediction=pred,correct=judge.verdict",
        "--model", "tr-7b", "--benchmark", "temporal", "--config", "16f",
    ]  # fmt: skip
    rc, out, err = _cli(capsys, "ingest", str(_pairs_file(tmp_path)), "--store", store, *flags, "--json")
    assert rc == 0, err
    assert json.loads(out)["flagged"] == {}  # every verdict agrees with the extracted letter
    rc, out, err = _cli(capsys, "metrics", "--store", store, "--models", "tr-7b", "--grid", "16f", "--json")
    assert json.loads(out)["models"]["tr-7b"]["accuracy"] == {"16f": 3 / 5}  # by hand: 3 verdicts "correct"


def test_record_paths_refuse_what_they_cannot_pair(tmp_path, capsys):
    path = _pairs_file(tmp_path)
    base = ["ingest", str(path), "--store", str(tmp_path / "s"), "--model", "m", "--benchmark", "b", "--config", "8f"]
    rc, _, err = _cli(capsys, *base, "--records", "$[*]")
    assert rc == 2 and err.count("\n") == 1 and "record 1: --records '$[*]' matches a list, not an object" in err
    rc, _, err = _cli(capsys, *base, "--records", "$[*][1]", "--record-keys", "video_id")  # only list positions
    assert (
        rc == 2
        and "record 1: --record-keys names 1 keys but the record sits under 0" in err
        and "list positions are no keys" in err
    )
    broken = json.loads(path.read_text())
    broken[2] = [broken[2][1]]  # a record whose judge is missing: refused, never paired with a neighbour's
    path.write_text(json.dumps(broken))
    mapped = ["--merge", "judge=$[*][0]", "--map", "item_id=video+question,correct=judge.verdict"]
    rc, _, err = _cli(capsys, *base, "--records", "$[*][-1]", *mapped)
    assert (
        rc == 2 and err.count("\n") == 1 and "record 3: --merge judge: no object beside the record at [2].[-1]" in err
    )
    rc, _, err = _cli(capsys, *base, "--records", "$[*][1]", *mapped)
    assert rc == 2 and err.count("\n") == 1 and "--merge judge: the object at [2].[0] has no record beside it" in err
    rc, _, err = _cli(capsys, *base, "--records", "$[*", "--map", "item_id=video")
    assert rc == 2 and "--records '$[*': not a JSONPath" in err
    rc, _, err = _cli(capsys, *base, "--merge", "judge=$[*][0]")
    assert rc == 2 and "pass --records too" in err
