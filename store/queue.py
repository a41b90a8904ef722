"""The re-run job queue: a SQLite database ``<store>/jobs.sqlite`` shared by the CLI, the app and workers.

Why SQLite in WAL mode: several processes (the Streamlit server enqueuing, one or more workers
claiming, the CLI listing) touch the queue at once; WAL lets readers run beside one writer, and a
``busy_timeout`` makes a writer wait for the lock instead of failing. Every write is one short
transaction; a claim is ``BEGIN IMMEDIATE`` (takes the write lock before reading) so two workers
can never take the same job.

A job moves ``queued -> running -> done | failed | cancelled``. A running job holds a lease
(``lease_expires_at``) that its worker renews; a job whose lease ran out (its worker died) goes back
to ``queued`` and is claimed again, counting ``attempts``, until ``max_attempts`` is spent and it fails.
Only the worker holding a job may renew, complete, fail or release it, so a job is completed once; the
one exception is a job held by nobody (its lease ran out while the queue was locked): the worker that
stored its answer completes it, since a job whose answer is stored is done.

The queue never creates the store folder: a producer creates ``jobs.sqlite`` inside an existing
store, and a worker (``create=False``) opens it read-write only (SQLite's ``mode=rw``), so a store
deleted while a worker runs is reported (``QueueGone``) instead of being recreated empty.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import get_args
from urllib.parse import quote

from store.errors import StoreError, UserError
from store.jobs import Job, JobState, WorkerInfo
from store.rerun_request import RerunRequest

QUEUE_FILE = "jobs.sqlite"
STATES: tuple[JobState, ...] = get_args(JobState)

MAX_QUEUED = 1000
MAX_ATTEMPTS = 3
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    item_id TEXT NOT NULL,
    config TEXT NOT NULL,
    seed INTEGER,
    force INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'queued',
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    worker_id TEXT,
    lease_expires_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    result_ref TEXT
);
CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (state, model, id);
CREATE TABLE IF NOT EXISTS workers (
    worker_id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    device TEXT,
    current_job INTEGER,
    pid INTEGER,
    started_at REAL NOT NULL,
    seen_at REAL NOT NULL
);
"""


class QueueGone(StoreError):
    """The queue's store folder or ``jobs.sqlite`` is gone (deleted or moved while in use)."""


class QueueReadOnly(StoreError):
    """The store cannot be written (a read-only copy, mount or permissions): its queue can be neither used nor
    listed, since listing returns expired leases to the queue first. Every read of the results still works."""


def _is_read_only(exc: sqlite3.OperationalError) -> bool:
    """SQLite's ``attempt to write a readonly database`` (any of its extended codes)."""
    return exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_READONLY


class JobQueue:
    """The queue of one store. Cheap to construct; opens a connection per call (safe across forks).

    ``create``: whether a missing ``jobs.sqlite`` may be created (inside an existing store folder,
    never the folder itself). A worker passes False once the queue exists, so a deleted store
    stops it with ``QueueGone`` rather than leaving an empty queue behind.
    ``clock``: the time source (default ``time.time``); a test passes its own to move time forward
    and check leases exactly, without sleeping or racing a loaded machine.
    ``busy_timeout_s``: how long a call waits for another process's lock before ``database is locked``
    (a test passes a short one to reach that error in a second).
    """

    def __init__(
        self,
        store_root: str | os.PathLike,
        max_attempts: int = MAX_ATTEMPTS,
        create: bool = True,
        clock: Callable[[], float] = time.time,
        busy_timeout_s: float = BUSY_TIMEOUT_MS / 1000,
    ):
        self.path = Path(store_root) / QUEUE_FILE
        self.busy_timeout_s = busy_timeout_s
        self.max_attempts = max_attempts
        self.create = create
        self.clock = clock  # Unix seconds; every time the queue writes or compares comes from here
        self._ready = False

    # -- plumbing --------------------------------------------------------------------------
    def _gone(self) -> StoreError:
        folder = self.path.parent
        if self.create:  # a producer or reader: the folder was never there, or was removed
            return StoreError(f"{folder}: no such store folder; check --store (or $TRAJAUDIT_STORE)")
        return QueueGone(
            f"the store {folder} or its job queue {QUEUE_FILE} is gone (deleted or moved while in use); "
            "nothing was recreated"
        )

    def require(self) -> None:
        """``StoreError`` unless the store folder is there (``QueueGone`` without ``create``: or its
        ``jobs.sqlite`` is missing); what a worker checks before it writes anything."""
        if not self.path.parent.is_dir() or (not self.create and not self.path.is_file()):
            raise self._gone()

    def _open(self) -> sqlite3.Connection:
        """Connect without ever creating the folder; the file only when ``create`` (SQLite's ``rwc``, else ``rw``)."""
        self.require()
        mode = "rwc" if self.create else "rw"
        uri = f"file:{quote(str(self.path.resolve()))}?mode={mode}"
        try:
            return sqlite3.connect(uri, uri=True, timeout=self.busy_timeout_s, isolation_level=None)
        except sqlite3.OperationalError as exc:
            if not self.path.is_file():  # removed between the check and the open
                raise self._gone() from exc
            raise

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection for one call; a read-only store is ``QueueReadOnly`` (one line naming the store), not
        the generic "cannot be used ... stop the workers and retry" a locked or damaged queue gets."""
        con = self._open()
        try:
            con.row_factory = sqlite3.Row
            con.execute(f"PRAGMA busy_timeout = {round(self.busy_timeout_s * 1000)}")
            if not self._ready:
                con.execute("PRAGMA journal_mode = WAL")
                con.executescript(_SCHEMA)
                self._ready = True
            con.execute("PRAGMA synchronous = NORMAL")
            yield con
        except sqlite3.OperationalError as exc:
            if _is_read_only(exc):
                raise QueueReadOnly(
                    f"the store is read-only: {self.path.parent} (its job queue {QUEUE_FILE} cannot be written); "
                    "results can be read, but re-runs and the queue need a store you can write: copy it to a "
                    "folder you own, or fix its permissions"
                ) from exc
            raise
        finally:
            con.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction that takes the lock up front (no read-then-upgrade deadlock)."""
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    @staticmethod
    def _job(row: sqlite3.Row) -> Job:
        data = dict(row)
        data["force"] = bool(data["force"])
        return Job(**data)

    @classmethod
    def _maybe_job(cls, row: sqlite3.Row | None) -> Job | None:
        """The job of a row that may be missing (a lookup by id or request)."""
        return None if row is None else cls._job(row)

    def _reap(self, con: sqlite3.Connection, now: float) -> None:
        """Expired leases: back to the queue, or failed once ``max_attempts`` claims have died."""
        con.execute(
            "UPDATE jobs SET state = 'failed', finished_at = ?, lease_expires_at = NULL, "
            "error = 'lease expired ' || attempts || ' times (worker died or hung)' "
            "WHERE state = 'running' AND lease_expires_at < ? AND attempts >= ?",
            (now, now, self.max_attempts),
        )
        con.execute(
            "UPDATE jobs SET state = 'queued', worker_id = NULL, lease_expires_at = NULL "
            "WHERE state = 'running' AND lease_expires_at < ?",
            (now,),
        )

    # -- producers -------------------------------------------------------------------------
    def enqueue(self, request: RerunRequest, max_queued: int = MAX_QUEUED) -> Job:
        """Add a job for ``request``; refuses (``UserError``) when ``max_queued`` jobs are already waiting."""
        return self.enqueue_many([request], max_queued, join=False)[0]

    def enqueue_many(self, requests: list[RerunRequest], max_queued: int = MAX_QUEUED, join: bool = True) -> list[Job]:
        """Queue every request or none, in one transaction: the job of each request, in order.

        With ``join``, a request without ``force`` joins an identical job still queued or running
        (see :meth:`find_pending`) instead of taking a slot. The room is counted in the same
        transaction as the inserts, so a batch larger than the free slots queues nothing, and the
        ``UserError`` says how many slots are free.
        """
        now = self.clock()
        with self._write() as con:
            (before,) = con.execute("SELECT count(*) FROM jobs WHERE state = 'queued'").fetchone()
            jobs = [
                (self._pending(con, r) if join and not r.force else None) or self._insert(con, r, now) for r in requests
            ]
            (after,) = con.execute("SELECT count(*) FROM jobs WHERE state = 'queued'").fetchone()
            added = after - before
            if after > max_queued:  # raising rolls the inserts back: nothing is queued
                free = max(max_queued - before, 0)
                raise UserError(
                    f"queue full ({before} queued, {free} of {max_queued} slots free): {added} new "
                    f"job{'s' if added != 1 else ''} asked, 0 queued; wait for the workers or cancel jobs "
                    "(trajaudit jobs --cancel ID)"
                )
            return jobs

    def _insert(self, con: sqlite3.Connection, r: RerunRequest, now: float) -> Job:
        cur = con.execute(
            "INSERT INTO jobs (model, benchmark, item_id, config, seed, force, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (r.model, r.benchmark, r.item_id, r.config, r.seed, int(r.force), now),
        )
        return self._job(con.execute("SELECT * FROM jobs WHERE id = ?", (cur.lastrowid,)).fetchone())

    @classmethod
    def _pending(cls, con: sqlite3.Connection, request: RerunRequest) -> Job | None:
        row = con.execute(
            "SELECT * FROM jobs WHERE state IN ('queued', 'running') AND model = ? AND benchmark = ? "
            "AND item_id = ? AND config = ? AND seed IS ? ORDER BY id LIMIT 1",
            (request.model, request.benchmark, request.item_id, request.config, request.seed),
        ).fetchone()
        return cls._maybe_job(row)

    def find_pending(self, request: RerunRequest) -> Job | None:
        """A job for the same request still queued or running (so a repeated request does not queue it
        twice); ``force`` does not tell two requests apart."""
        with self._connect() as con:
            return self._pending(con, request)

    def cancel(self, job_id: int) -> Job:
        """Cancel a queued job. A running job cannot be cancelled (its worker would keep going)."""
        now = self.clock()
        with self._write() as con:
            job = self._maybe_job(con.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone())
            if job is None:
                raise UserError(f"no job {job_id}")
            if job.state != "queued":
                hint = " (stop its worker with Ctrl-C to release it)" if job.state == "running" else ""
                raise UserError(f"job {job_id} is {job.state}: only queued jobs can be cancelled{hint}")
            con.execute("UPDATE jobs SET state = 'cancelled', finished_at = ? WHERE id = ?", (now, job_id))
            return self._job(con.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone())

    # -- workers ---------------------------------------------------------------------------
    def claim(self, worker_id: str, model: str, lease_s: float) -> Job | None:
        """Atomically take the oldest queued job for ``model`` (expired leases are queued again first)."""
        now = self.clock()
        with self._write() as con:
            self._reap(con, now)
            row = con.execute(
                "SELECT id FROM jobs WHERE state = 'queued' AND model = ? ORDER BY id LIMIT 1", (model,)
            ).fetchone()
            if row is None:
                return None
            con.execute(
                "UPDATE jobs SET state = 'running', worker_id = ?, started_at = ?, lease_expires_at = ?, "
                "attempts = attempts + 1, error = NULL WHERE id = ?",
                (worker_id, now, now + lease_s, row["id"]),
            )
            return self._job(con.execute("SELECT * FROM jobs WHERE id = ?", (row["id"],)).fetchone())

    def _holder_update(self, sql: str, params: tuple, job_id: int, worker_id: str) -> bool:
        """Run an update that only the worker holding the running job may make."""
        with self._write() as con:
            cur = con.execute(
                f"{sql} WHERE id = ? AND worker_id = ? AND state = 'running'", (*params, job_id, worker_id)
            )
            return cur.rowcount == 1

    def renew(self, job_id: int, worker_id: str, lease_s: float) -> bool:
        """Extend the lease; False when the worker no longer holds the job (it was taken over)."""
        return self._holder_update("UPDATE jobs SET lease_expires_at = ?", (self.clock() + lease_s,), job_id, worker_id)

    def complete(self, job_id: int, worker_id: str, result_ref: str) -> bool:
        """Mark the job done with the key of its stored result; False when another worker holds it now (or it
        is done or cancelled). The stored answer is the source of truth: a job held by nobody (its lease ran
        out while the queue was locked, and it was queued again or failed for it) is done too."""
        with self._write() as con:
            cur = con.execute(
                "UPDATE jobs SET state = 'done', finished_at = ?, lease_expires_at = NULL, worker_id = ?, "
                "result_ref = ?, error = NULL WHERE id = ? AND ((state = 'running' AND worker_id = ?) "
                "OR state IN ('queued', 'failed'))",
                (self.clock(), worker_id, result_ref, job_id, worker_id),
            )
            return cur.rowcount == 1

    def fail(self, job_id: int, worker_id: str, error: str) -> bool:
        """Mark the job failed with the reason; False when the worker lost the job."""
        return self._holder_update(
            "UPDATE jobs SET state = 'failed', finished_at = ?, lease_expires_at = NULL, error = ?",
            (self.clock(), error),
            job_id,
            worker_id,
        )

    def fail_queued(self, model: str, error: str) -> int:
        """Fail every queued job of ``model`` with ``error``, counting the attempt (a worker that cannot
        load the model: the jobs would otherwise wait forever); how many were failed."""
        with self._write() as con:
            cur = con.execute(
                "UPDATE jobs SET state = 'failed', finished_at = ?, attempts = attempts + 1, error = ? "
                "WHERE state = 'queued' AND model = ?",
                (self.clock(), error, model),
            )
            return cur.rowcount

    def release(self, job_id: int, worker_id: str) -> bool:
        """Give the job back to the queue untouched (a worker stopping mid-job); the attempt is not counted."""
        return self._holder_update(
            "UPDATE jobs SET state = 'queued', worker_id = NULL, started_at = NULL, lease_expires_at = NULL, "
            "attempts = max(attempts - 1, 0)",
            (),
            job_id,
            worker_id,
        )

    def heartbeat(self, worker_id: str, model: str, device: str | None, current_job: int | None) -> None:
        now = self.clock()
        with self._write() as con:
            con.execute(
                "INSERT INTO workers (worker_id, model, device, current_job, pid, started_at, seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (worker_id) DO UPDATE SET model = excluded.model, "
                "device = excluded.device, current_job = excluded.current_job, seen_at = excluded.seen_at",
                (worker_id, model, device, current_job, os.getpid(), now, now),
            )

    def sign_off(self, worker_id: str) -> None:
        """Remove a worker that stops cleanly, so it is not shown as online until its heartbeat ages."""
        with self._write() as con:
            con.execute("DELETE FROM workers WHERE worker_id = ?", (worker_id,))

    # -- readers ---------------------------------------------------------------------------
    def get(self, job_id: int) -> Job | None:
        with self._connect() as con:
            return self._maybe_job(con.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone())

    def list_jobs(self, state: str | None = None, model: str | None = None, limit: int = 100) -> list[Job]:
        """Newest first. Expired leases are returned to the queue first, so states are current."""
        if state is not None and state not in STATES:
            raise UserError(f"unknown job state {state!r}: expected one of {', '.join(STATES)}")
        with self._write() as con:
            self._reap(con, self.clock())
        with self._connect() as con:
            rows = con.execute(
                "SELECT * FROM jobs WHERE (? IS NULL OR state = ?) AND (? IS NULL OR model = ?) ORDER BY id DESC LIMIT ?",
                (state, state, model, model, limit),
            ).fetchall()
        return [self._job(r) for r in rows]

    def counts(self) -> dict[str, int]:
        """Number of jobs per state (every state present, zero when none)."""
        with self._connect() as con:
            rows = con.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall()
        return {s: 0 for s in STATES} | {r[0]: r[1] for r in rows}

    def workers(self, online_within_s: float = 30.0) -> list[WorkerInfo]:
        """Workers whose last heartbeat is at most ``online_within_s`` old."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT * FROM workers WHERE seen_at >= ? ORDER BY model, worker_id", (self.clock() - online_within_s,)
            ).fetchall()
        return [WorkerInfo(**dict(r)) for r in rows]
