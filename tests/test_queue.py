"""The job queue: claim order, leases, holder-only updates, bounds, cancel, concurrency across processes."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import time

import pytest

from store.errors import UserError
from store.queue import JobQueue
from store.rerun_request import RerunRequest


def _enqueue(q: JobQueue, item: str, model: str = "m", **kw):
    return q.enqueue(RerunRequest(model, "bench", item, "16f"), **kw)


class Clock:
    """A hand-driven time source for the queue: leases expire when the test says, never because a
    loaded machine was slow between two calls."""

    def __init__(self, t: float = 1_700_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def test_wal_mode_and_fifo_claim_per_model(tmp_path):
    clock = Clock()
    q = JobQueue(tmp_path, clock=clock)
    a = _enqueue(q, "1")
    _enqueue(q, "x", model="other")
    b = _enqueue(q, "2")
    assert a.state == "queued" and a.attempts == 0 and a.created_at == clock.t
    clock.advance(1)
    first = q.claim("w1", "m", lease_s=30)
    second = q.claim("w1", "m", lease_s=30)
    assert (first.id, second.id) == (a.id, b.id)
    assert first.state == "running" and first.worker_id == "w1" and first.attempts == 1
    assert (first.started_at, first.lease_expires_at) == (clock.t, clock.t + 30)
    assert q.claim("w1", "m", lease_s=30) is None  # the other model's job is not ours
    with sqlite3.connect(q.path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_default_clock_is_the_wall_clock(tmp_path):
    before = time.time()
    job = _enqueue(JobQueue(tmp_path), "1")
    assert before <= job.created_at <= time.time()


def test_only_the_holder_completes_once(tmp_path):
    q = JobQueue(tmp_path)
    job = _enqueue(q, "1")
    q.claim("w1", "m", lease_s=30)
    assert not q.complete(job.id, "intruder", "{}")
    assert not q.renew(job.id, "intruder", 30)
    assert q.complete(job.id, "w1", '{"run": "rerun-1"}')
    assert not q.complete(job.id, "w1", "{}")  # never completed twice
    done = q.get(job.id)
    assert done.state == "done" and done.result_ref == '{"run": "rerun-1"}' and done.finished_at is not None


def test_expired_lease_returns_job_and_counts_attempts(tmp_path):
    clock = Clock()
    q = JobQueue(tmp_path, max_attempts=2, clock=clock)
    job = _enqueue(q, "1")
    q.claim("dead", "m", lease_s=5)
    clock.advance(5)
    assert [j.state for j in q.list_jobs()] == ["running"]  # at its expiry instant the lease still holds
    clock.advance(0.001)
    assert [j.state for j in q.list_jobs()] == ["queued"]  # listing shows it back in the queue
    again = q.claim("w2", "m", lease_s=5)
    assert again.id == job.id and again.worker_id == "w2" and again.attempts == 2
    assert not q.complete(job.id, "dead", "{}")  # the dead worker lost it
    clock.advance(5.001)
    assert q.claim("w3", "m", lease_s=30) is None  # attempts spent: failed, not retried forever
    failed = q.get(job.id)
    assert failed.state == "failed" and "lease expired 2 times" in failed.error
    assert failed.finished_at == clock.t


def test_renew_keeps_lease(tmp_path):
    clock = Clock()
    q = JobQueue(tmp_path, clock=clock)
    job = _enqueue(q, "1")
    q.claim("w1", "m", lease_s=10)
    for _ in range(3):  # 27 s in all, well past the first lease: each renewal pushes it on
        clock.advance(9)
        assert q.renew(job.id, "w1", 10)
        assert q.get(job.id).lease_expires_at == clock.t + 10
    assert q.claim("w2", "m", lease_s=1) is None
    assert q.get(job.id).worker_id == "w1"
    clock.advance(10.001)  # no renewal: the lease runs out and another worker takes the job
    taken = q.claim("w2", "m", lease_s=1)
    assert (taken.id, taken.worker_id, taken.attempts) == (job.id, "w2", 2)


def test_release_fail_and_cancel(tmp_path):
    q = JobQueue(tmp_path)
    a, b, c = (_enqueue(q, i) for i in "abc")
    q.claim("w1", "m", 30)
    assert q.release(a.id, "w1")
    released = q.get(a.id)
    assert released.state == "queued" and released.attempts == 0 and released.worker_id is None
    q.claim("w1", "m", 30)  # a again (oldest)
    assert q.fail(a.id, "w1", "boom")
    assert q.get(a.id).state == "failed" and q.get(a.id).error == "boom"
    assert q.cancel(c.id).state == "cancelled"
    q.claim("w1", "m", 30)  # b
    with pytest.raises(UserError, match="is running: only queued jobs can be cancelled"):
        q.cancel(b.id)
    with pytest.raises(UserError, match="no job 99"):
        q.cancel(99)
    assert q.counts() == {"queued": 0, "running": 1, "done": 0, "failed": 1, "cancelled": 1}


def test_bounded_queue(tmp_path):
    q = JobQueue(tmp_path)
    for i in range(3):
        _enqueue(q, str(i), max_queued=3)
    with pytest.raises(UserError, match=r"queue full \(3 queued, 0 of 3 slots free\): 1 new job asked, 0 queued"):
        _enqueue(q, "x", max_queued=3)
    assert q.counts()["queued"] == 3


def test_enqueue_many_is_all_or_nothing_and_joins_pending_jobs(tmp_path):
    q = JobQueue(tmp_path)
    first = _enqueue(q, "0")
    asks = [RerunRequest("m", "bench", str(i), "16f") for i in range(4)]  # "0" is pending: joined, not queued
    with pytest.raises(UserError, match=r"\(1 queued, 2 of 3 slots free\): 3 new jobs asked, 0 queued"):
        q.enqueue_many(asks, max_queued=3)
    assert q.counts()["queued"] == 1  # rolled back: none of the three was queued
    jobs = q.enqueue_many(asks[:3], max_queued=3)
    assert jobs[0].id == first.id and len({j.id for j in jobs}) == 3 and q.counts()["queued"] == 3
    forced = q.enqueue_many([RerunRequest("m", "bench", "0", "16f", force=True)], max_queued=4)
    assert forced[0].id != first.id  # force never joins


def test_find_pending_and_heartbeats(tmp_path):
    q = JobQueue(tmp_path)
    job = q.enqueue(RerunRequest("m", "bench", "1", "32f/random", seed=4))
    assert job.request == RerunRequest("m", "bench", "1", "32f/random", seed=4)
    assert q.find_pending(RerunRequest("m", "bench", "1", "32f/random", 4)).id == job.id
    assert q.find_pending(RerunRequest("m", "bench", "1", "32f/random", 4, force=True)).id == job.id
    assert q.find_pending(RerunRequest("m", "bench", "1", "32f/random", 5)) is None
    q.heartbeat("w1", "m", "cpu", None)
    q.heartbeat("w1", "m", "cpu", job.id)
    (w,) = q.workers()
    assert (w.worker_id, w.device, w.current_job) == ("w1", "cpu", job.id)
    assert q.workers(online_within_s=-1) == []
    q.sign_off("w1")
    assert q.workers() == []


def _claim_all(root: str, worker: str, start, out) -> None:
    q = JobQueue(root)
    start.wait(30)  # both processes claim at the same moment
    got = []
    while (job := q.claim(worker, "m", lease_s=60)) is not None:
        got.append(job.id)
    out.put(got)


@pytest.mark.slow
def test_two_processes_never_claim_the_same_job(tmp_path):
    q = JobQueue(tmp_path)
    ids = {_enqueue(q, str(i)).id for i in range(200)}
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(str(tmp_path), f"w{i}", start, out)) for i in range(2)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let both import and reach the barrier
    start.set()
    claimed = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    flat = claimed[0] + claimed[1]
    assert sorted(flat) == sorted(ids)  # every job once, none twice
    assert {j.worker_id for j in q.list_jobs()} <= {"w0", "w1"}


def test_a_stored_answer_completes_a_job_nobody_holds_but_never_one_another_worker_holds(tmp_path):
    """Issue 34 item 7, the queue's side: a lease that ran out while the queue was locked (the job queued
    again, or failed for it) does not undo the answer its worker stored; a job another worker took over
    stays that worker's to complete."""
    clock = Clock()
    once = JobQueue(tmp_path / "a", max_attempts=1, clock=clock)
    (tmp_path / "a").mkdir()
    failed = _enqueue(once, "1")
    once.claim("w1", "m", lease_s=5)
    clock.advance(6)
    assert once.list_jobs()[0].state == "failed"  # listing reaps: its one attempt is spent
    assert once.complete(failed.id, "w1", '{"run": "rerun-1"}')
    assert (once.get(failed.id).state, once.get(failed.id).error) == ("done", None)
    q = JobQueue(tmp_path, clock=clock)
    requeued, other = _enqueue(q, "1"), _enqueue(q, "2")
    q.claim("w1", "m", lease_s=5)
    clock.advance(6)
    assert [j.state for j in q.list_jobs()] == ["queued", "queued"]  # reaped: queued again
    assert q.claim("w2", "m", lease_s=5).id == requeued.id
    assert not q.complete(requeued.id, "w1", "{}")  # w2 holds it now: its own to complete
    assert (q.get(requeued.id).state, q.get(requeued.id).worker_id) == ("running", "w2")
    assert q.complete(other.id, "w1", "{}")  # queued, held by nobody: the stored answer makes it done
    assert q.get(other.id).state == "done"
