"""The re-run worker: one result per job with provenance, failures, signals, dead workers, real tiny model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from backend.cli import main
from backend.runtime import registry, rerun
from backend.runtime.sampling import frame_indices
from backend.runtime.worker import Worker
from backend.videos import decode as video
from store.queue import JobQueue
from store.rerun_request import RerunRequest
from store.store import Store
from tests.rerun_fixtures import FPS, N_FRAMES, FakeAdapter, build_store

pytestmark = pytest.mark.worker  # every test here runs the inference stack

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    return build_store(tmp_path / "store")


def _worker(root: Path, adapter: FakeAdapter, lease_s: float = 30.0) -> Worker:
    return Worker(root, "m", device="cpu", lease_s=lease_s, poll_s=0.05, adapter_factory=lambda *a: adapter)


def _rows(root: Path, job_id: int):
    return Store(root).query("SELECT * FROM responses WHERE run = ?", [f"rerun-{job_id}"])


def _wait_state(root: Path, job_id: int, state: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while JobQueue(root).get(job_id).state != state:
        assert time.monotonic() < deadline, f"job {job_id} never reached {state}"
        time.sleep(0.05)


@pytest.fixture
def running():
    """Submit a job and wait until a worker subprocess runs it with a fake adapter that takes 60 s (it never
    finishes on its own within a test): ``(job id, process)``. Workers still alive are killed at the end."""
    procs = []

    def start(root: Path, lease_s: float) -> tuple[int, subprocess.Popen]:
        job_id = rerun.submit(root, RerunRequest("m", "bench", "q1", "4f")).job_id
        code = f"from tests.rerun_fixtures import serve; serve({str(root)!r}, 60, {lease_s})"
        env = os.environ | {"PYTHONPATH": str(REPO)}
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", code],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
        _wait_state(root, job_id, "running")
        return job_id, procs[-1]

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_job_runs_and_stores_one_row_with_provenance(root):
    out = rerun.submit(root, RerunRequest("m", "bench", "q1", "8f/random-s3"))
    adapter = FakeAdapter()
    assert _worker(root, adapter).run(once=True) == 1
    job = JobQueue(root).get(out.job_id)
    assert job.state == "done" and json.loads(job.result_ref)["run"] == f"rerun-{job.id}"
    expected = frame_indices("random-s3", N_FRAMES, FPS, 8).tolist()
    (request,) = adapter.requests
    assert request.frame_indices == expected and request.frames.shape == (8, 48, 64, 3)
    assert request.native_fps == FPS and request.total_frames == N_FRAMES and request.pixels is None
    (row,) = _rows(root, job.id).to_dict("records")
    assert json.loads(row["raw_output"]) == expected  # exactly those frames were decoded and shown
    assert (row["origin"], row["run_id"], row["answer"], row["correct"], row["frames"]) == (
        "rerun",
        f"rerun-{job.id}",
        "B",
        1,
        8,
    )
    assert (row["policy"], row["seed"], list(row["frame_indices"])) == ("random-s3", 3, expected)
    prov = json.loads(row["provenance"])
    assert prov["device"] == "cpu" and prov["dtype"] == "float32" and prov["job_id"] == job.id
    assert len(prov["checkpoint_fingerprint"]) == 16 and prov["frame_indices"] == expected
    assert prov["timestamps_s"] == [i / FPS for i in expected]
    assert {"torch", "transformers", "decord"} <= prov["versions"].keys() and prov["versions"]["torch"]
    assert prov["decoder"] == (video.DECORD if video.decord_installed() else video.PYAV)  # what read the frames
    assert set(prov["timings"]) == {"decode", "preprocess", "vision", "prefill", "generate"}
    assert prov["token_counts"]["visual"] == 32 and prov["resolution"] == [48, 64]
    (run,) = Store(root).query("SELECT * FROM runs WHERE run_id = ?", [f"rerun-{job.id}"]).to_dict("records")
    assert run["origin"] == "rerun" and run["n_rows"] == 1
    assert RerunRequest(**json.loads(run["args"])) == job.request == RerunRequest("m", "bench", "q1", "8f/random-s3", 3)
    again = rerun.submit(root, RerunRequest("m", "bench", "q1", "8f/random-s3"))  # now answered from the store
    assert again.from_store and again.run == f"rerun-{job.id}" and again.frame_indices == expected
    assert rerun.wait(root, job.id).timings["decode"] >= 0


def test_text_only_failures_and_pixels(root):
    registry.add(root, msgspec.structs.replace(registry.get(root, "m"), default_pixels=1000), replace=True)
    text = rerun.submit(root, RerunRequest("m", "bench", "q3", "text")).job_id
    sized = rerun.submit(root, RerunRequest("m", "bench", "q1", "4f@2k")).job_id
    adapter = FakeAdapter()
    assert _worker(root, adapter).run(once=True) == 2
    assert adapter.requests[0].frames is None and adapter.requests[0].frame_indices is None
    assert adapter.requests[1].pixels == 2000  # the label's spatial budget wins over the default
    (row,) = _rows(root, text).to_dict("records")
    assert (row["frames"], list(row["frame_indices"]), row["correct"], row["pixels"]) == (0, [], 0, 1000)
    assert JobQueue(root).get(sized).state == "done"
    failing = rerun.submit(root, RerunRequest("m", "bench", "q1", "2f")).job_id
    assert _worker(root, FakeAdapter(fail="out of memory")).run(once=True) == 1
    job = JobQueue(root).get(failing)
    assert job.state == "failed" and job.error == "RuntimeError: out of memory" and _rows(root, failing).empty


def test_worker_that_died_after_writing_leaves_one_row(root):
    job_id = rerun.submit(root, RerunRequest("m", "bench", "q1", "4f")).job_id
    q = JobQueue(root)
    ghost = _worker(root, FakeAdapter(), lease_s=0.1)
    job = q.claim("ghost", "m", lease_s=0.1)
    Store(root).append(ghost.compute(job))  # wrote its result, then died before completing
    time.sleep(0.2)
    adapter = FakeAdapter()
    assert _worker(root, adapter).run(once=True) == 1
    assert adapter.requests == []  # not run a second time
    assert q.get(job_id).state == "done" and q.get(job_id).attempts == 2
    assert len(_rows(root, job_id)) == 1


@pytest.mark.slow
def test_sigkilled_worker_job_is_retried_once_stored(root, running):
    job_id, proc = running(root, lease_s=1.0)
    time.sleep(1.5)  # a few renewals: the lease is kept alive while the worker lives
    assert JobQueue(root).claim("thief", "m", lease_s=1) is None
    proc.kill()
    proc.wait(timeout=30)
    time.sleep(1.2)  # the dead worker's lease runs out
    assert _worker(root, FakeAdapter()).run(once=True) == 1
    job = JobQueue(root).get(job_id)
    assert job.state == "done" and job.attempts == 2
    assert len(_rows(root, job_id)) == 1


@pytest.mark.slow
def test_sigterm_mid_job_releases_it_and_exits_cleanly(root, running):
    job_id, proc = running(root, lease_s=5.0)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "released to the queue" in out and "served 0" in out
    job = JobQueue(root).get(job_id)
    assert (job.state, job.attempts, job.worker_id) == ("queued", 0, None)
    assert _rows(root, job_id).empty and JobQueue(root).workers() == []


def test_signal_after_the_answer_finishes_the_job(root, monkeypatch):
    first = rerun.submit(root, RerunRequest("m", "bench", "q1", "4f")).job_id
    second = rerun.submit(root, RerunRequest("m", "bench", "q1", "2f")).job_id
    worker = _worker(root, FakeAdapter())
    write = worker._write

    def interrupted_write(job, rows):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the result is being written
        write(job, rows)

    monkeypatch.setattr(worker, "_write", interrupted_write)
    assert worker.run() == 1  # finishes the nearly done job, then stops without taking the next
    q = JobQueue(root)
    assert q.get(first).state == "done" and len(_rows(root, first)) == 1
    assert q.get(second).state == "queued"


def test_signal_while_computing_releases(root):
    job_id = rerun.submit(root, RerunRequest("m", "bench", "q1", "4f")).job_id
    adapter = FakeAdapter(delay=5, on_answer=lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    assert _worker(root, adapter).run() == 0
    assert time.monotonic() - started < 5  # the adapter's sleep was interrupted
    assert JobQueue(root).get(job_id).state == "queued" and _rows(root, job_id).empty


def test_a_signal_a_library_reports_as_its_own_error_still_releases(root):
    """DuckDB turns the handler's interruption into ``RuntimeError: Query interrupted``: with the stop
    requested, the job goes back to the queue instead of failing."""
    job_id = rerun.submit(root, RerunRequest("m", "bench", "q1", "4f")).job_id

    def interrupted_query():
        worker._stop.set()
        raise RuntimeError("Query interrupted")

    worker = _worker(root, FakeAdapter(on_answer=interrupted_query))
    assert worker.run() == 0
    job = JobQueue(root).get(job_id)
    assert (job.state, job.attempts, job.error) == ("queued", 0, None) and _rows(root, job_id).empty


@pytest.mark.slow
def test_end_to_end_with_a_tiny_model(tmp_path, monkeypatch, capsys):
    root = tmp_path / "store"
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    build_store(root)
    assert main(["models", "demo", "tiny", "--store", str(root)]) == 0
    capsys.readouterr()
    request = [
        "rerun",
        "--store",
        str(root),
        "--model",
        "tiny",
        "--benchmark",
        "bench",
        "--item",
        "q1",
        "--config",
        "4f",
        "--json",
    ]
    assert main(request) == 0
    job_id = json.loads(capsys.readouterr().out)["job_id"]
    env = os.environ | {"PYTHONPATH": str(REPO)}
    cmd = [
        str(Path(sys.executable).parent / "trajaudit"),
        "worker",
        "--store",
        str(root),
        "--model",
        "tiny",
        "--device",
        "cpu",
        "--once",
    ]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert JobQueue(root).get(job_id).state == "done", done.stdout + done.stderr
    (row,) = _rows(root, job_id).to_dict("records")
    assert row["answer"] in "ABCD" and row["correct"] == int(row["answer"] == "B")
    probs = json.loads(row["option_probs"])
    assert set(probs) == set("ABCD") and abs(sum(probs.values()) - 1) < 1e-6
    assert row["confidence"] == pytest.approx(max(probs.values()))
    prov = json.loads(row["provenance"])
    assert prov["family"] == "qwen2_5_vl" and prov["checkpoint_fingerprint"] and prov["timings"]["decode"] >= 0
    assert list(row["frame_indices"]) == frame_indices("uniform", N_FRAMES, FPS, 4).tolist()
    assert main(request) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["from_store"] and again["answer"] == row["answer"] and again["run"] == f"rerun-{job_id}"
