"""Re-run requests: every bad request is refused before anything is queued; stored answers are reused."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from backend.cli import main
from backend.runtime import rerun
from store.errors import UserError
from store.queue import JobQueue
from store.rerun_request import RerunRequest
from store.store import Store
from tests.rerun_fixtures import build_store


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    return build_store(tmp_path / "store")


def _nothing_queued(root: Path) -> bool:
    return JobQueue(root).counts()["queued"] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(model="nope"), "unknown model 'nope'; registered models: m"),
        (dict(config="64f"), "asks for 64 frames, above the ceiling of model 'm': max_frames = 32"),
        (dict(item_id="q2"), "outside the video root"),
        (dict(item_id="zz"), "unknown item 'zz' in benchmark 'bench'"),
        (dict(benchmark="other"), "unknown item 'q1' in benchmark 'other'"),
        (dict(seed="abc"), "seed must be a non-negative integer"),
        (dict(seed=-1), "seed must be a non-negative integer"),
        (dict(seed="1.5"), "seed must be a non-negative integer"),
        (dict(seed=True), "seed must be a non-negative integer"),
        (dict(config="32 frames"), "unknown config label '32 frames'"),
        (dict(config="16f/zigzag"), "unknown sampling policy 'zigzag'"),
        (dict(config="16f/random-s1", seed=2), "names seed 1 but --seed 2"),
        (dict(config="16f_fallback"), "scale-grid tag 'fallback'"),
        (dict(config="1fps"), "names a frame rate, which fixes no frame count to re-run; .* '64f/fps-1'"),
        (dict(item_id="q3", config="8f"), "no video path given for this item"),
    ],
)
def test_bad_requests_are_refused_with_nothing_queued(root, kwargs, message):
    request = dict(model="m", benchmark="bench", item_id="q1", config="8f") | kwargs
    with pytest.raises(UserError, match=message):
        rerun.submit(root, RerunRequest(**request))
    assert _nothing_queued(root)


def test_missing_video_is_refused(root):
    (root / "videos" / "clips" / "a.mp4").unlink()
    with pytest.raises(UserError, match="video 'clips/a.mp4' not found"):
        rerun.submit(root, RerunRequest("m", "bench", "q1", "8f"))
    assert _nothing_queued(root)


def test_identical_request_is_answered_from_the_store(root):
    out = rerun.submit(root, RerunRequest("m", "bench", "q1", "16f"))
    assert out.from_store and out.job_id is None and out.state == "done"
    assert (out.answer, out.correct, out.confidence, out.run) == ("B", 1, 0.7, "main")
    assert out.option_probs["B"] == 0.7 and out.frame_indices == list(range(0, 48, 3))
    assert _nothing_queued(root)
    forced = rerun.submit(root, RerunRequest("m", "bench", "q1", "16f", force=True))
    assert not forced.from_store and forced.state == "queued" and forced.answer is None


def test_pending_request_is_not_queued_twice_and_seeds_normalise(root):
    first = rerun.submit(root, RerunRequest("m", "bench", "q1", "8f", seed=5))
    again = rerun.submit(root, RerunRequest("m", "bench", "q1", " 8f "))
    assert first.seed is None and again.job_id == first.job_id  # a seed means nothing to uniform
    bare = rerun.submit(root, RerunRequest("m", "bench", "q1", "8f/random"))
    seeded = rerun.submit(root, RerunRequest("m", "bench", "q1", "8f/random", seed="5"))
    named = rerun.submit(root, RerunRequest("m", "bench", "q1", "8f/random-s5", seed=5))
    assert (bare.seed, seeded.seed, named.seed) == (0, 5, 5)
    assert len({first.job_id, bare.job_id, seeded.job_id, named.job_id}) == 4
    text = rerun.submit(root, RerunRequest("m", "bench", "q3", "text"))  # text-only needs no video
    assert text.state == "queued"
    assert JobQueue(root).counts()["queued"] == 5


def test_bounded_queue_refuses(root):
    rerun.submit(root, RerunRequest("m", "bench", "q1", "8f"), max_queued=1)
    with pytest.raises(UserError, match=r"queue full \(1 queued, 0 of 1 slots free\): 1 new job asked, 0 queued"):
        rerun.submit(root, RerunRequest("m", "bench", "q1", "4f"), max_queued=1)


def test_cli_rerun_json_wait_timeout_and_errors(root, capsys):
    base = ["rerun", "--store", str(root), "--model", "m", "--benchmark", "bench", "--item", "q1"]
    assert main([*base, "--config", "16f", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["from_store"] is True
    assert main([*base, "--config", "8f", "--wait", "--timeout", "0", "--json"]) == 1  # no worker: times out
    out = json.loads(capsys.readouterr().out)
    assert (out["state"], out["timed_out"], out["answer"]) == ("queued", True, None)
    assert main([*base, "--config", "8f", "--seed", "x"]) == 2
    assert "seed must be a non-negative integer (got 'x')" in capsys.readouterr().err
    assert main(["jobs", "--store", str(root), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [j["state"] for j in listing["jobs"]] == ["queued"] and listing["workers"] == []
    assert main(["jobs", "--store", str(root), "--cancel", str(out["job_id"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "cancelled"
    assert main(["jobs", "--store", str(root), "--cancel", str(out["job_id"])]) == 2
    assert "only queued jobs can be cancelled" in capsys.readouterr().err


def test_seed_matters_only_for_a_bare_random_label(root):
    base = {
        "model": "m",
        "benchmark": "bench",
        "item_id": "q1",
        "answer": "A",
        "correct": 0,
        "written_at": pd.Timestamp.now(tz="UTC"),
    }
    rows = [base | {"config": "8f/random-s1", "run": "main"}, base | {"config": "8f/random", "run": "main", "seed": 4}]
    Store(root).append({"responses": pd.DataFrame(rows)})
    assert rerun.submit(
        root, RerunRequest("m", "bench", "q1", "8f/random-s1")
    ).from_store  # ingested: seed column empty
    assert rerun.submit(root, RerunRequest("m", "bench", "q1", "8f/random", seed=4)).from_store
    assert rerun.submit(root, RerunRequest("m", "bench", "q1", "8f/random", seed=5)).state == "queued"
