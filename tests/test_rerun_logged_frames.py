"""Issue 20, build 4: a re-run with "the same frames as the logged answer" (``--frames logged``, label
``<config>/logged``) feeds the worker exactly the logged indices, and a selection re-run that way reports its
``agreement`` with the logged answers. The fake adapter reads back which frames it was shown."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from backend.cli import main
from backend.contracts.catalog import parsed
from backend.runtime import rerun
from backend.runtime.logged_frames import logged_label
from backend.runtime.worker import Worker
from store.errors import UserError
from store.queue import JobQueue
from store.rerun_request import RerunRequest
from store.store import Store
from tests.rerun_fixtures import FakeAdapter, build_store

LOGGED = list(range(0, 48, 3))  # what rerun_fixtures logs for q1 at 16f


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    root = build_store(tmp_path / "store")
    # q4: the same clip, logged at 16f with other (non-uniform) frames and another answer than the adapter's "B"
    item = Store(root).query("SELECT * FROM items WHERE item_id = 'q1'").assign(item_id="q4")
    logged = Store(root).query("SELECT * FROM responses WHERE item_id = 'q1'")
    logged = logged.assign(item_id="q4", answer="C", correct=0, frame_indices=[[1, 2, 5, 40]])
    Store(root).append({"items": item, "responses": logged})
    return root


def _work(root) -> tuple[int, FakeAdapter]:
    adapter = FakeAdapter()
    done = Worker(root, "m", device="cpu", lease_s=30, poll_s=0.05, adapter_factory=lambda *a: adapter).run(once=True)
    return done, adapter


def test_labels():
    assert logged_label("16f") == "16f/logged" and logged_label("16f@151k") == "16f@151k/logged"
    assert logged_label("16f~prune50") == "16f/logged~prune50" and logged_label("8f/logged") == "8f/logged"
    for bad in ("text", "16f/random-s1"):
        with pytest.raises(UserError):
            logged_label(bad)


@pytest.mark.worker  # loads a model: needs the inference extra
def test_the_worker_feeds_exactly_the_logged_frames(root):
    out = rerun.submit(root, RerunRequest("m", "bench", "q4", "16f/logged"))
    assert out.job_id is not None and not out.from_store  # its own cell: never answered by the logged row
    done, adapter = _work(root)
    assert done == 1 and [r.frame_indices for r in adapter.requests] == [[1, 2, 5, 40]]
    row = Store(root).query("SELECT * FROM responses WHERE config = '16f/logged'").iloc[0]
    assert list(row["frame_indices"]) == [1, 2, 5, 40] and json.loads(row["raw_output"]) == [1, 2, 5, 40]


@pytest.mark.worker  # loads a model: needs the inference extra
def test_a_selection_reports_agreement_with_the_logged_answers(root, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_text("q1\nq4\n")
    plain = [
        "rerun",
        "--store",
        str(root),
        "--model",
        "m",
        "--benchmark",
        "bench",
        "--items",
        str(ids),
        "--config",
        "16f",
    ]
    argv = [*plain, "--frames", "logged", "--baseline", "16f", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["batch"]["config"] == "16f/logged" and first["comparison"]["agreement"]["n"] == 0
    done, adapter = _work(root)
    assert done == 2 and sorted(r.frame_indices for r in adapter.requests) == sorted([LOGGED, [1, 2, 5, 40]])
    capsys.readouterr()  # the worker's log lines
    assert main(argv) == 0  # answered from the store now: the comparison is complete
    report = json.loads(capsys.readouterr().out)
    parsed("rerun --flow", report)  # the contract's Agreement (raises where the output breaks it)
    agreement = report["comparison"]["agreement"]
    assert agreement | {"ci95": None} == {
        "k": 1,
        "n": 2,
        "value": 0.5,
        "ci95": None,
        "logged_config": "16f",
        "differing": ["q4"],
    }
    assert main([*plain, "--json"]) == 0 and json.loads(capsys.readouterr().out)["comparison"]["agreement"] is None


@pytest.mark.parametrize(
    ("item", "config", "frames", "message"),
    [
        ("q1", "8f/logged", None, "no logged frames to replay: m's logged answer to bench/q1 at 8f"),
        ("q4", "16f/logged", [3, 48], "logged frame index 48 of bench/q4 is outside its video \\(48 frames\\)"),
    ],
)
def test_logged_frames_that_cannot_be_replayed_are_refused(root, item, config, frames, message):
    if frames is not None:
        store = Store(root)
        rows = store.query("SELECT * FROM responses WHERE item_id = ?", [item]).assign(frame_indices=[frames])
        with store.writer() as w:  # the logged row itself, rewritten with indices past the end of the clip
            files = list(w.manifest.files["responses"])
            kept = pd.concat([store.query("SELECT * FROM responses WHERE item_id <> ?", [item]), rows])
            w.retire("responses", files)
            w.add("responses", kept, supersedes=files)
    with pytest.raises(UserError, match=message):
        rerun.submit(root, RerunRequest("m", "bench", item, config))
    assert JobQueue(root).counts()["queued"] == 0
