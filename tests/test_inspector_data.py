"""The Inspector's chart data (``backend.scope.inspector``): a re-run joins its model's trajectory, its frames
get a strip row, and an item's cells that hold several runs say which run they show. An item's responses are
records (one dict per response, as ``item_detail`` reads them)."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from backend.present.series import dashed, frame_marks, strip_labels
from backend.scope.inspector import answer_cells, frame_plan, shown_runs, trajectory_points
from backend.scope.runs import notice
from backend.videos.decode import VideoInfo

COLUMNS = ["model", "config", "run", "answer", "correct", "confidence", "score", "rerun_note"]


def _rows(*rows: tuple) -> list[dict]:
    """(model, config, run, answer, correct, confidence) records, no score, no registry note."""
    return [dict(zip(COLUMNS, (*r, None, None), strict=True)) for r in rows]


def _records(columns: dict[str, list]) -> list[dict]:
    """Records from columns of equal length."""
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


LOGGED = _rows(
    ("m", "8f", "main", "A", 1, 0.6),
    ("m", "16f", "main", "B", 0, 0.4),
    ("m", "32f", "main", "A", 1, 0.7),
    ("n", "8f", "main", "A", 1, 0.5),
)


def _by(points: list[dict], kind: str) -> list[tuple]:
    return sorted((p["series"], p["config"], p["dash"], p["value"]) for p in points if p["kind"] == kind)


def test_a_rerun_between_two_steps_is_its_models_point_dashed_to_the_steps_either_side():
    reruns = _rows(("m", "24f", "rerun-7", "A", 1, 0.9))
    out = trajectory_points(LOGGED, reruns, ["m", "n"], ["8f", "16f", "24f", "32f"])
    dash = "m\x1flive re-run\x1f24f\x1frerun-7"
    assert _by(out["points"], "rerun") == [("m", "24f", dash, 0.9)]  # the model's own series, not a separate one
    assert _by(out["points"], "joint") == [("m", "16f", dash, 0.4), ("m", "32f", dash, 0.7)]
    assert out["series"] == ["m", "n"] and out["order"] == ["8f", "16f", "24f", "32f"]
    solid = {p["config"] for p in out["points"] if p["line"] == "m\x1f0"}
    assert solid == {"8f", "16f", "32f"}  # an overlay: the logged line does not pass through it


def test_a_rerun_of_a_logged_step_or_another_seed_is_dashed_to_that_step():
    reruns = _rows(("m", "16f", "rerun-1", "A", 1, 0.8), ("m", "16f/random-s3", "rerun-2", "B", 0, 0.3))
    out = trajectory_points(LOGGED, reruns, ["m"], ["8f", "16f", "16f/random-s3", "32f"])
    joints = _by(out["points"], "joint")
    assert joints == [
        ("m", "16f", "m\x1flive re-run\x1f16f\x1frerun-1", 0.4),
        ("m", "16f", "m\x1flive re-run\x1f16f/random-s3\x1frerun-2", 0.4),
    ]
    assert out["order"] == ["8f", "16f", "16f/random-s3", "32f"]  # another seed drawn beside its step


def test_included_reruns_fill_a_step_of_the_solid_line():
    reruns = _rows(("m", "24f", "rerun-7", "A", 1, 0.9))
    out = trajectory_points(LOGGED, reruns, ["m"], ["8f", "16f", "24f", "32f"], fill=True)
    (point,) = [p for p in out["points"] if p["kind"] == "rerun"]
    assert point["line"] == "m\x1f0" and point["dash"] is None and not _by(out["points"], "joint")


def test_answer_cells_keep_reruns_on_their_own_row():
    reruns = [r | {"rerun_note": "random weights"} for r in _rows(("m", "24f", "rerun-7", "A", 1, 0.9))]
    grid = answer_cells(LOGGED, reruns, ["m", "n"], ["8f", "16f", "24f", "32f"])
    assert grid["rows"] == ["m", "n", "m · live re-run (random weights)"] and grid["value"] == "confidence"
    assert {(c["model"], c["config"], c["text"]) for c in grid["cells"]} >= {
        ("m · live re-run (random weights)", "24f", "A")
    }


def test_a_reruns_frames_are_a_strip_row_under_its_configuration():
    responses = _records(
        {
            "model": ["m", "m", "m", "m"],
            "config": ["8f", "16f", "16f", "32f"],
            "run": ["main", "main", "rerun-3", "main"],
            "live_rerun": [False, False, True, False],
            "frame_indices": [list(range(0, 80, 10)), list(range(0, 80, 5)), [1, 2, 3], list(range(0, 80, 2)) + [79]],
            "frames_source": ["logged"] * 4,
            "sampler": [None] * 4,
        }
    )
    info = VideoInfo(n_frames=80, fps=10.0, duration_s=8.0, width=64, height=48)
    plan = frame_plan(responses, ["8f", "16f", "32f"], info)
    assert [row["config"] for row in plan] == ["8f", "16f", "16f", "32f"]
    assert [row["rerun"] for row in plan] == [None, None, "rerun-3", None]
    assert plan[2]["added"] == [1, 2, 3]  # against the logged row above it
    assert plan[3]["dropped"] == [5, 15, 25, 35, 45, 55, 65, 75]  # 32f against 16f, never against the re-run
    assert strip_labels(plan) == ["8f", "16f", "16f · re-run", "32f"]
    marks, rows = frame_marks(plan, info.fps)
    assert rows == ["8f", "16f", "16f · re-run", "32f"]
    seen = [(m["x"], m["status"]) for m in marks if m["row"] == "16f · re-run" and m["status"] != "dropped"]
    assert seen == [(0.1, "added"), (0.2, "added"), (0.3, "added")]


def test_an_items_cell_with_several_runs_shows_one_and_says_which():
    responses = _records(
        {
            "model": ["m", "m", "m", "m"],
            "config": ["8f", "8f", "16f", "8f"],
            "run": ["b-prompt", "main", "main", "rerun-1"],
            "live_rerun": [False, False, False, True],
            "seq": [2, 1, 1, 3],
            "written_at": [datetime(2026, 1, day, tzinfo=UTC) for day in (2, 1, 1, 3)],
        }
    )
    shown, choices = shown_runs(responses, None)
    assert [(c.model, c.config, c.runs, c.shown) for c in choices] == [("m", "8f", ("main", "b-prompt"), "main")]
    assert sorted(r["run"] for r in shown) == ["main", "main", "rerun-1"]  # the re-run stays: drawn apart
    picked, choices = shown_runs(responses, "b-prompt")
    assert choices[0].shown == "b-prompt" and sorted(r["run"] for r in picked) == ["b-prompt", "main", "rerun-1"]
    assert "--run RUN" in notice(choices) and "showing b-prompt" in notice(choices)
    alone, none = shown_runs([r for r in responses if r["run"] != "b-prompt"], None)
    assert none == () and len(alone) == 3


def test_dashed_tables_read_a_dash_for_missing_values():
    table = pd.DataFrame({"answer": ["A", None], "confidence": [0.51234, float("nan")]})
    assert dashed(table, {"confidence": 3}).to_dict("records") == [
        {"answer": "A", "confidence": "0.512"},
        {"answer": "—", "confidence": "—"},
    ]
