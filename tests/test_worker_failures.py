"""Worker and re-run failures end in one line (issue 25, cases 11, 12, 20 and other job failures).

Each test reproduces a case that used to end in a traceback, a job queued forever, a recreated
store or a half-queued batch, and holds the fix: the job's error and the CLI's last line are one
line (the traceback stays in the worker's log, its stderr), nothing is recreated or half-queued.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from backend.cli import main
from backend.demo.synthetic import build_demo
from backend.runtime import registry, rerun, selection
from backend.runtime.inference import base as inference
from backend.runtime.worker import FAILURE_LINE_CHARS, ModelLoadError, Worker, failure_line
from backend.runtime.worker_pool import _exit_reason, _files
from store.errors import UserError
from store.queue import MAX_QUEUED, QUEUE_FILE, JobQueue, QueueGone
from store.rerun_request import RerunRequest
from store.store import Store
from tests.rerun_fixtures import FakeAdapter, build_store


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    return build_store(tmp_path / "store")


def _worker(root: Path, adapter_factory, **kw) -> Worker:
    return Worker(root, "m", device="cpu", poll_s=0.05, adapter_factory=adapter_factory, **kw)


def _unloadable(exc: Exception):
    """An adapter factory that fails the way a corrupt checkpoint does."""

    def factory(*_):
        raise exc

    return factory


LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ trajaudit\.")  # backend.runtime.logs


def _err_lines(capsys) -> list[str]:
    """Standard error's lines apart from the timestamped log lines (the worker's progress)."""
    return [line for line in capsys.readouterr().err.splitlines() if line.strip() and not LOG_LINE.match(line)]


# -- case 11: a checkpoint that cannot load --------------------------------------------------------
@pytest.mark.worker  # loads a model: needs the inference extra
def test_a_model_that_cannot_load_fails_its_queued_jobs_with_one_line(root):
    batch = selection.submit(str(root), selection.batch_requests("m", "bench", ["q1", "q3"], "text"))
    mine = batch.job_ids
    other = JobQueue(root).enqueue(RerunRequest("other", "bench", "q1", "8f")).id
    broken = _unloadable(RuntimeError("Error(s) in loading state_dict:\n\tsize mismatch for lm_head.weight"))
    with pytest.raises(
        ModelLoadError,
        match=r"^model 'm' cannot be loaded from .*: RuntimeError: Error\(s\) in "
        r"loading state_dict: size mismatch for lm_head.weight; 2 queued jobs failed; fix or re-register",
    ) as exc:
        _worker(root, broken)
    assert "\n" not in str(exc.value)
    queue = JobQueue(root)
    for job in map(queue.get, mine):
        assert (job.state, job.attempts) == ("failed", 1)  # the attempt is counted
        assert job.error.startswith("model 'm' cannot be loaded") and "\n" not in job.error
    assert queue.get(other).state == "queued"  # another model's job is not touched
    done = selection.progress(str(root), batch)  # what the batch panel draws: the reason, once
    assert done.finished and done.counts["failed"] == 2 and done.failure == queue.get(mine[0]).error


@pytest.mark.worker  # loads a model: needs the inference extra
@pytest.mark.slow
def test_cli_worker_on_corrupt_safetensors_exits_2_with_one_line(root, capsys):
    """A real tiny checkpoint whose weights file is garbage: the worker fails the job and exits 2."""
    spec = registry.register_demo_model(root, "tiny", max_frames=32)
    (weights,) = spec.resolved_path(root).glob("*.safetensors")
    weights.write_bytes(b"\x00not a safetensors file" * 64)
    job_id = rerun.submit(root, RerunRequest("tiny", "bench", "q1", "8f")).job_id
    capsys.readouterr()
    assert main(["worker", "--store", str(root), "--model", "tiny", "--device", "cpu", "--once"]) == 2
    err = _err_lines(capsys)
    assert "Traceback (most recent call last):" in err  # the log keeps the traceback ...
    assert err[-1].startswith("trajaudit worker: error: model 'tiny' cannot be loaded from ")  # ... the CLI one line
    assert "SafetensorError" in err[-1] and "1 queued job failed" in err[-1]
    job = JobQueue(root).get(job_id)
    assert job.state == "failed" and job.attempts == 1 and "SafetensorError" in job.error and "\n" not in job.error


def test_an_exited_workers_reason_is_its_last_error_line():
    tail = [
        "--- starting",
        "Traceback (most recent call last):",
        '  File "x.py"',
        "OSError: boom",
        "trajaudit worker: error: model 'm' cannot be loaded from /c: OSError: boom; 1 queued job failed",
        "",
    ]
    assert _exit_reason(tail) == tail[-2]
    assert _exit_reason(tail[:4]) == "OSError: boom"  # a crash: its exception line
    assert _exit_reason([]) is None


# -- case 12: the store deleted while a worker runs ---------------------------------------------------
@pytest.mark.worker  # loads a model: needs the inference extra
@pytest.mark.parametrize("when", ["idle", "mid-job"])
def test_a_store_deleted_under_a_worker_stops_it_and_is_not_recreated(root, when):
    gone = threading.Event()

    def delete() -> None:  # moved away first: one atomic step, as `rm -rf` of a busy folder is not
        shutil.rmtree(root.rename(root.with_name("trash")))
        gone.set()

    if when == "mid-job":
        rerun.submit(root, RerunRequest("m", "bench", "q3", "text"))
        worker = _worker(root, lambda *_: FakeAdapter(on_answer=delete))
    else:
        worker = _worker(root, lambda *_: FakeAdapter())
        threading.Timer(0.3, delete).start()
    with pytest.raises(QueueGone, match=rf"^the store {root} or its job queue jobs.sqlite is gone .*nothing was "):
        worker.run(idle_timeout_s=30)
    assert gone.wait(5)
    time.sleep(0.2)  # a lease thread would have had time to write
    assert not root.exists()  # neither the folder nor an empty jobs.sqlite came back


@pytest.mark.worker  # loads a model: needs the inference extra
def test_cli_worker_exits_2_with_one_line_when_its_store_is_deleted(root, monkeypatch, capsys):
    rerun.submit(root, RerunRequest("m", "bench", "q3", "text"))
    trash = root.with_name("trash")
    adapter = FakeAdapter(on_answer=lambda: shutil.rmtree(root.rename(trash)))
    monkeypatch.setattr(inference, "load_adapter", lambda *a, **k: adapter)
    capsys.readouterr()
    assert main(["worker", "--store", str(root), "--model", "m", "--device", "cpu", "--once"]) == 2
    assert _err_lines(capsys) == [
        f"trajaudit worker: error: the store {root} or its job queue {QUEUE_FILE} is gone (deleted or moved while "
        "in use); nothing was recreated"
    ]
    assert not root.exists()


def test_the_queue_never_creates_a_missing_store_folder(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(UserError, match="no such store folder"):
        JobQueue(missing).counts()
    assert not missing.exists()
    (tmp_path / "s").mkdir()
    with pytest.raises(QueueGone):
        JobQueue(tmp_path / "s", create=False).counts()  # a worker's queue: the file is never created
    assert not (tmp_path / "s" / QUEUE_FILE).exists()
    assert JobQueue(tmp_path / "s").counts()["queued"] == 0  # a producer creates it in an existing store


# -- other job failures: one line in the job, the traceback in the log ----------------------------------
def _break_video(root: Path, how: str) -> None:
    video = root / "videos" / "clips" / "a.mp4"
    if how == "missing":
        video.unlink()
    else:
        video.write_bytes(b"\x00\x01 not an mp4 " * 100)


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("missing", r"^video 'clips/a.mp4' not found under the video root "),
        ("undecodable", r"^cannot open video .*a\.mp4: "),
    ],
)
@pytest.mark.worker  # loads a model: needs the inference extra
def test_a_job_whose_video_breaks_after_queueing_fails_with_one_line(root, capsys, how, expected):
    job_id = rerun.submit(root, RerunRequest("m", "bench", "q1", "4f")).job_id
    _break_video(root, how)
    assert _worker(root, lambda *_: FakeAdapter()).run(once=True) == 1
    job = JobQueue(root).get(job_id)
    assert job.state == "failed" and "\n" not in job.error
    assert re.match(expected, job.error), job.error
    assert "Traceback (most recent call last):" in capsys.readouterr().err  # kept in the worker's log


@pytest.mark.worker  # loads a model: needs the inference extra
def test_a_multiline_adapter_error_is_one_line_in_the_job(root):
    job_id = rerun.submit(root, RerunRequest("m", "bench", "q3", "text")).job_id
    fail = "CUDA out of memory.\nTried to allocate 2.00 GiB\n" + "x" * 2000
    assert _worker(root, lambda *_: FakeAdapter(fail=fail)).run(once=True) == 1
    assert JobQueue(root).get(job_id).error == "RuntimeError: CUDA out of memory."
    long = failure_line(ValueError("y" * 5000))
    assert len(long) == FAILURE_LINE_CHARS and long.endswith("…")
    assert failure_line(UserError("\n\n  spaced   out \n")) == "spaced out"


# -- case 20: a selection re-run is all or nothing against the queue's bound ------------------------------
BATCH = 300
MODEL, BENCH = "synthetic-A-7B", "synthetic-videomme"


@pytest.fixture
def big_store(tmp_path):
    """A demo store of at least BATCH items of BENCH (no videos: the batch asks text only), MODEL registered."""
    root = tmp_path / "store"
    build_demo(root, n_items=2 * BATCH, seed=0, videos=False)  # its videomme share holds BATCH items or more
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    registry.add(root, registry.ModelSpec(MODEL, "qwen2_5_vl", str(ckpt)))
    return root


@pytest.mark.slow
def test_a_selection_rerun_that_does_not_fit_queues_nothing_and_says_so(big_store, tmp_path, capsys):
    queue = JobQueue(big_store)
    filler = [RerunRequest("other", BENCH, f"f{i}", "8f") for i in range(MAX_QUEUED - BATCH // 3)]
    queue.enqueue_many(filler)
    before = queue.counts()
    assert before["queued"] == 900
    items = Store(big_store).query("SELECT DISTINCT item_id FROM items WHERE benchmark = ? ORDER BY 1", [BENCH])
    ids = items["item_id"].tolist()[:BATCH]
    assert len(ids) == BATCH
    path = tmp_path / "items.txt"
    path.write_text("\n".join(ids) + "\n")
    argv = [
        "rerun",
        "--store",
        str(big_store),
        "--model",
        MODEL,
        "--benchmark",
        BENCH,
        "--items",
        str(path),
        "--config",
        "text",
        "--force",
    ]
    capsys.readouterr()
    assert main(argv) == 2
    assert _err_lines(capsys) == [
        "trajaudit rerun: error: queue full (900 queued, 100 of 1000 slots free): 300 new jobs asked, 0 queued; "
        "wait for the workers or cancel jobs (trajaudit jobs --cancel ID)"
    ]
    assert queue.counts() == before  # all or nothing: not one of the 300 was queued
    with pytest.raises(UserError, match=r"\(900 queued, 100 of 1000 slots free\): 101 new jobs asked, 0 queued"):
        selection.submit(str(big_store), selection.batch_requests(MODEL, BENCH, ids[:101], "text", force=True))
    fits = selection.submit(str(big_store), selection.batch_requests(MODEL, BENCH, ids[:100], "text", force=True))
    assert len(set(fits.job_ids)) == 100 and queue.counts()["queued"] == MAX_QUEUED  # exactly full


# -- the Workers page: an exited worker and a failed job, one line each ---------------------------------
@pytest.mark.worker  # loads a model: needs the inference extra
def test_workers_page_shows_an_exited_worker_and_a_failed_job_in_one_line(root):
    from streamlit.testing.v1 import AppTest

    from backend.scope.resolve import Scope
    from backend.scope.view import open_view

    job_id = rerun.submit(root, RerunRequest("m", "bench", "q3", "text")).job_id
    with pytest.raises(ModelLoadError):
        _worker(root, _unloadable(OSError("bad\nweights")))
    dead = subprocess.Popen(["true"])  # a pid that has exited: the "worker" below is gone
    dead.wait()
    log, pid_file, _ = _files(root, "m")
    log.parent.mkdir(exist_ok=True)
    line = f"trajaudit worker: error: {JobQueue(root).get(job_id).error}; 1 queued job failed"
    log.write_text(f'--- starting\nTraceback (most recent call last):\n  File "x.py"\nOSError: bad\n{line}\n')
    pid_file.write_text(json.dumps({"pid": dead.pid, "model": "m", "device": "cpu"}))

    at = AppTest.from_file(str(Path(__file__).parents[1] / "pages" / "workers.py"), default_timeout=120)
    at.session_state["view"] = open_view(Store(root), Scope("bench", ("m",), ("16f",)).resolve(Store(root)))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (caption,) = [c.value for c in at.caption if "exited" in c.value]
    assert "\n" not in caption and "cannot be loaded" in caption and str(log) in caption
    assert "Traceback" not in " ".join(c.value for c in at.caption) and not at.code
    (error,) = at.dataframe[-1].value["error"].dropna().tolist()
    assert error.startswith("model 'm' cannot be loaded") and "OSError: bad" in error and "\n" not in error


def _batch_panel_script(scope, ids: list[str]) -> None:
    from pages.common.rerun_panel import selection_panel

    selection_panel(scope, None, ids, "batch")


@pytest.mark.worker  # loads a model: needs the inference extra
def test_batch_panel_names_the_failed_jobs_reason_and_the_log_in_one_line(root, monkeypatch):
    from streamlit.testing.v1 import AppTest

    import pages.common.rerun_panel as panel
    from backend.scope.resolve import Scope
    from backend.scope.view import open_view
    from pages.common.ui import escape_md

    monkeypatch.setattr(panel, "ensure_local_worker", lambda *a, **k: SimpleNamespace(started=False))  # no process here
    scope = open_view(Store(root), Scope("bench", ("m",), ("16f",)).resolve(Store(root)))
    at = AppTest.from_function(_batch_panel_script, args=(scope, ["q1", "q3"]), default_timeout=120)
    at.run()
    at.number_input(key="batch_frames_m").set_value(0).run()  # text only: no video needed
    next(b for b in at.button if b.label == "Re-run 2 items").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert JobQueue(root).counts()["queued"] == 2
    log, _, _ = _files(root, "m")
    log.parent.mkdir(exist_ok=True)
    log.write_text("Traceback (most recent call last):\nOSError: unreadable weights\n")
    with pytest.raises(ModelLoadError):
        _worker(root, _unloadable(OSError("unreadable weights")))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (line,) = [e.value for e in at.error if "Failed jobs" in e.value]
    error = JobQueue(root).list_jobs(state="failed")[0].error
    assert "\n" not in line and error.startswith("model 'm' cannot be loaded") and escape_md(error) in line
    assert line.endswith(f"worker log: ` {log} `") and not at.code


# -- issue 34 item 7: a queue locked past its busy timeout ---------------------------------------------
_HOLD_LOCK = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()  # held until the test closes our stdin
con.execute("COMMIT")
"""


def _lock_queue(root: Path) -> subprocess.Popen:
    """Another process holding ``jobs.sqlite``'s write lock (returns once it holds it) until its stdin is closed."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(root / QUEUE_FILE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "locked"
    return child


def _release(child: subprocess.Popen) -> None:
    child.stdin.close()
    assert child.wait(10) == 0


@pytest.mark.worker  # loads a model: needs the inference extra
def test_a_job_whose_answer_is_stored_is_done_after_a_lock_longer_than_the_busy_timeout(root, capsys):
    """The probe held jobs.sqlite past the 30 s busy timeout: job 27's answer was stored, yet the job ended
    ``failed: OperationalError: database is locked`` and the worker said its lease was lost to another
    worker, with none running. Here a real second process holds the lock 12 times the (shortened) timeout."""
    job = JobQueue(root).enqueue(RerunRequest("m", "bench", "q3", "text"))
    children = []

    def lock_for_a_while() -> None:
        children.append(_lock_queue(root))
        threading.Timer(2.4, _release, [children[0]]).start()

    worker = _worker(
        root,
        lambda *_: FakeAdapter(on_answer=lock_for_a_while),
        lease_s=0.6,  # renewed every 0.2 s: the renewals meet the lock too
        busy_timeout_s=0.2,
    )
    assert worker.run(once=True) == 1
    assert children[0].wait(10) == 0
    done = JobQueue(root).get(job.id)
    assert (done.state, done.error) == ("done", None), done
    assert json.loads(done.result_ref)["run"] == f"rerun-{job.id}"
    stored = Store(root).query("SELECT run FROM responses WHERE run = ?", [f"rerun-{job.id}"])
    assert len(stored) == 1
    said = capsys.readouterr()
    assert "another worker" not in said.out + said.err
    assert f"worker: recording job {job.id}: database is locked; trying again" in said.err
    assert f"worker: job {job.id} done" in said.err  # a timestamped log line (backend.runtime.logs)


@pytest.mark.worker  # loads a model: needs the inference extra
def test_a_job_still_locked_out_after_the_retries_is_completed_by_its_next_claim(root, capsys):
    """Past ``locked_retry_s`` the worker gives up recording, not the job: it stays running, the worker keeps
    serving (its heartbeat waits for the lock too), and once its lease has run out the next claim completes
    it from the stored row (one row, never run twice)."""
    job = JobQueue(root).enqueue(RerunRequest("m", "bench", "q3", "text"))
    children = []
    adapter = FakeAdapter(on_answer=lambda: children.append(_lock_queue(root)))
    worker = _worker(root, lambda *_: adapter, lease_s=0.6, busy_timeout_s=0.2, locked_retry_s=0.5)
    beat = worker.queue.heartbeat

    def heartbeat(worker_id, model, device, current_job):
        if current_job is None and children and children[0].poll() is None:  # the loop's, after the job
            assert JobQueue(root).get(job.id).state == "running"  # read beside the lock (WAL)
            time.sleep(0.7)  # its lease runs out
            _release(children[0])
        beat(worker_id, model, device, current_job)

    worker.queue.heartbeat = heartbeat
    assert worker.run(once=True) == 2  # the job "stored", then the same job completed from its row
    said = capsys.readouterr().err  # timestamped log lines (backend.runtime.logs)
    assert "its answer is stored but the queue stayed locked" in said and "result already stored" in said
    done = JobQueue(root).get(job.id)
    assert (done.state, done.attempts) == ("done", 2) and len(adapter.requests) == 1
    assert len(Store(root).query("SELECT run FROM responses WHERE run = ?", [f"rerun-{job.id}"])) == 1
