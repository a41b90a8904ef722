"""The re-run worker: claims jobs for one registered model, runs them, stores one response per job.

One worker serves one model: it loads the adapter once and keeps it. For each job it probes the
video, picks the frame indices with the job's sampling policy, decodes only those frames (at native
size: the model's processor resizes, as in the harness that produced the logged answer), asks the
adapter, and publishes one ``responses`` row plus its ``runs`` row in one atomic store write.

Run ids. Every job's result is stored under ``run = run_id = "rerun-<job id>"``, never ``main``:
``main`` is the logged answer a harness produced, and a re-run is a repeat beside it, so a re-run
can neither replace nor masquerade as the logged result (the response matrix prefers non-re-run
rows and uses a re-run only where nothing else exists). A run id tied to the job also makes the
write idempotent:

* before running, a job whose row already exists (its previous worker died after writing but
  before completing) is completed from that row;
* the write itself re-checks under the store's writers' lock, so two workers that both ran a job
  (one lost its lease while still computing) store one row between them;
* only the lease holder can complete a job (``store.queue``), or the worker that stored its answer when
  nobody holds it any more (its lease ran out while the queue was locked): a stored answer is a done job.

A locked queue (another process holding ``jobs.sqlite`` past its busy timeout) never turns a stored
answer into a failure: recording the job done is retried with a growing pause for up to
``LOCKED_RETRY_S``, and a job still not recorded then stays running until its lease runs out and the
next claim completes it from the stored row; the loop's heartbeat and claim wait for the lock the same
way, so the worker outlives a lock shorter than that. "Lease lost to another worker" is said only when
another worker holds the job.

A background thread renews the lease every third of its length and sends heartbeats. SIGINT or
SIGTERM stops the worker: a job whose answer is already computed (only the write and the queue
update remain) is finished; a job still being computed is released back to the queue untouched.

Failures are one line where people look (the job's ``error``, the CLI's last line) and a traceback
in the worker's log (stderr, timestamped lines through ``backend.runtime.logs``): a job that fails (missing video, decode error) is failed with
:func:`failure_line`; a model that cannot load fails every queued job of that model with the reason,
attempt counted, and stops the worker (``ModelLoadError``: exit 2), since those jobs would
otherwise wait forever; a store deleted while the worker runs stops it (``QueueGone``) without
recreating the folder or the queue.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from backend.runtime import logged_frames, logs, registry
from backend.runtime.inference.base import Adapter
from backend.runtime.inference.cell import ColdCell, answer_cold
from backend.runtime.inference.records import Answered, ModelContext, RowSource, library_versions, response_row
from backend.runtime.registry import ModelSpec
from backend.videos import catalog
from backend.videos.decode import default_video_root
from store.configs import Config, parse
from store.errors import UserError
from store.queue import BUSY_TIMEOUT_MS, Job, JobQueue, QueueGone
from store.schema import RESPONSE_KEY
from store.store import Store

log = logs.get("worker")
DEFAULT_LEASE_S = 60.0
DEFAULT_POLL_S = 1.0
FAILURE_LINE_CHARS = 500  # a job's error is one line, at most this long (the traceback is in the log)
LOCKED_RETRY_S = 600.0  # how long a worker keeps trying one queue call (heartbeat, claim, done) in a locked queue
RETRY_PAUSE_S = (0.1, 10.0)  # the first pause between two tries, and the longest (each pause doubles)

# (model spec, resolved checkpoint path, device, dtype) -> an adapter (anything with .answer(InferenceRequest))
AdapterFactory = Callable[[ModelSpec, Path, str, str], Adapter]
T = TypeVar("T")


class ModelLoadError(UserError):
    """The registered checkpoint could not be loaded; its queued jobs were failed with the reason."""


def failure_line(exc: BaseException) -> str:
    """An exception as one line for a job's error: its message's first non-empty line (and the next
    one when the first ends with a colon, as in "Error(s) in loading state_dict:"), prefixed by its
    type unless it is a ``UserError``, whose message is written for people; whitespace collapsed,
    at most ``FAILURE_LINE_CHARS`` long."""
    lines = [" ".join(line.split()) for line in str(exc).splitlines()]
    lines = [line for line in lines if line]
    first = " ".join(lines[:2]) if lines and lines[0].endswith(":") else next(iter(lines), "")
    name = type(exc).__name__
    text = first if isinstance(exc, UserError) else f"{name}: {first}" if first else name
    return text if len(text) <= FAILURE_LINE_CHARS else text[: FAILURE_LINE_CHARS - 1] + "…"


class _Interrupted(BaseException):
    """Raised by the signal handler while a job is being computed (BaseException: adapters' ``except
    Exception`` must not swallow it)."""


def load_registered_adapter(spec: ModelSpec, path: Path, device: str, dtype: str) -> Adapter:
    """The default factory: the family's adapter from ``backend.runtime.inference``."""
    from backend.runtime.inference.base import load_adapter

    return load_adapter(spec.family, str(path), device=device, dtype=dtype)


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; asking for an absent GPU is an error."""
    if requested not in registry.DEVICES:
        raise UserError(f"unknown device {requested!r}; expected one of {', '.join(registry.DEVICES)}")
    import torch

    has_cuda = torch.cuda.is_available()
    if requested == "cuda" and not has_cuda:
        raise UserError("--device cuda: no CUDA device is visible to this process")
    if requested == "auto":
        return "cuda" if has_cuda else "cpu"
    return requested


def resolve_dtype(dtype: str, device: str) -> str:
    """``auto`` -> bfloat16 on a GPU, float32 on the CPU (half precision on CPUs is slow and lossy)."""
    if dtype != "auto":
        return dtype
    return "bfloat16" if device == "cuda" else "float32"


def result_key(job: Job) -> dict[str, str]:
    """The response key a job's result is stored under (``RESPONSE_KEY`` order)."""
    req = job.request
    return dict(zip(RESPONSE_KEY, (req.model, req.benchmark, req.item_id, req.config, job.run), strict=True))


def _stored(con, job: Job) -> bool:
    (n,) = con.execute(
        "SELECT count(*) FROM responses WHERE model = ? AND benchmark = ? AND item_id = ? AND config = ? AND run = ?",
        list(result_key(job).values()),
    ).fetchone()
    return n > 0


class _LeaseKeeper:
    """Renews one job's lease and heartbeats from a background thread while the job runs."""

    def __init__(self, worker: Worker, job: Job):
        self.worker, self.job = worker, job
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{job.id}", daemon=True)

    def _loop(self) -> None:
        w = self.worker
        while not self._done.wait(w.lease_s / 3):
            try:
                if not w.queue.renew(self.job.id, w.worker_id, w.lease_s):
                    # Lapsed after missed renewals: finishing is still safe (the write is idempotent, and a
                    # job held by another worker is completed by it alone), so just stop renewing.
                    log.warning(f"lease on job {self.job.id} {w.lapsed(self.job.id)}")
                    return
                w.queue.heartbeat(w.worker_id, w.spec.name, w.device, self.job.id)
            except sqlite3.Error as exc:  # a locked or busy queue: try again at the next tick
                log.warning(f"lease renewal for job {self.job.id} failed: {exc}")
            except QueueGone:  # the store was deleted: the main loop stops at its next queue call
                return

    def __enter__(self) -> _LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


class Worker:
    """One worker process's state: the model, its adapter, its id and the stop flag."""

    def __init__(
        self,
        store_root: str | os.PathLike,
        model: str,
        device: str = "auto",
        lease_s: float = DEFAULT_LEASE_S,
        poll_s: float = DEFAULT_POLL_S,
        adapter_factory: AdapterFactory = load_registered_adapter,
        busy_timeout_s: float = BUSY_TIMEOUT_MS / 1000,
        locked_retry_s: float = LOCKED_RETRY_S,
    ):
        self.store = Store(store_root)
        self.spec = registry.get(self.store.root, model)
        JobQueue(self.store.root).counts()  # creates jobs.sqlite in the store if no job was ever queued
        # from now on: a deleted store stops the worker
        self.queue = JobQueue(self.store.root, create=False, busy_timeout_s=busy_timeout_s)
        self.locked_retry_s = locked_retry_s
        self.path = self.spec.resolved_path(self.store.root)
        if not self.path.exists():
            raise UserError(f"model {model!r}: checkpoint path {self.path} does not exist")
        self.device = resolve_device(self.spec.device if device == "auto" else device)
        self.dtype = resolve_dtype(self.spec.dtype, self.device)
        self.lease_s, self.poll_s = float(lease_s), float(poll_s)
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.video_root = default_video_root(self.store.root)
        self._stop = threading.Event()
        self._computing = False
        self.fingerprint, self.adapter = self._load(adapter_factory)
        self.versions = library_versions()
        self.context = ModelContext(
            self.spec.name, self.spec.family, str(self.path), self.fingerprint, self.versions, self.device, self.dtype
        )

    def _load(self, adapter_factory: AdapterFactory) -> tuple[str, Adapter]:
        """(checkpoint fingerprint, adapter); a checkpoint that cannot load fails the model's queued
        jobs and raises ``ModelLoadError``."""
        from backend.runtime.inference.base import checkpoint_fingerprint

        try:
            return checkpoint_fingerprint(self.path), adapter_factory(self.spec, self.path, self.device, self.dtype)
        except Exception as exc:
            log.exception("loading the model")  # the log keeps the traceback; the jobs and the CLI get one line
            reason = f"model {self.spec.name!r} cannot be loaded from {self.path}: {failure_line(exc)}"
            n = self.queue.fail_queued(self.spec.name, reason)
            raise ModelLoadError(
                f"{reason}; {n} queued job{'s' if n != 1 else ''} failed; fix or re-register the checkpoint "
                "(trajaudit models add --replace), then re-run"
            ) from exc

    # -- the loop --------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame) -> None:
        self._stop.set()
        if self._computing:
            self._computing = False
            raise _Interrupted(signal.Signals(signum).name)

    def run(self, once: bool = False, idle_timeout_s: float | None = None) -> int:
        """Serve jobs until stopped; with ``once``, exit when no job for this model is queued; with
        ``idle_timeout_s``, exit after that long without a job (a worker nobody uses frees its memory).

        Returns the number of jobs this worker finished (done or failed; released ones not counted).
        """
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        done = 0
        idle_since = time.monotonic()
        try:
            while not self._stop.is_set():
                beat = lambda: self.queue.heartbeat(self.worker_id, self.spec.name, self.device, None)  # noqa: E731
                self._retrying(beat, "heartbeat")  # QueueGone: the store was deleted
                job = self._retrying(lambda: self.queue.claim(self.worker_id, self.spec.name, self.lease_s), "claiming")
                if job is None:
                    if once:
                        break
                    if idle_timeout_s is not None and time.monotonic() - idle_since >= idle_timeout_s:
                        log.info(f"no job for {idle_timeout_s:g} s: stopping")
                        break
                    self._stop.wait(self.poll_s)
                    continue
                done += self.run_job(job) in ("done", "failed", "stored")
                idle_since = time.monotonic()
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            try:
                self.queue.sign_off(self.worker_id)
            except QueueGone:  # nothing to sign off from; the error that stopped the loop is raised
                pass
            except sqlite3.OperationalError as exc:  # still locked: the worker's row ages out of "online"
                log.warning(f"signing off: {exc}")
        return done

    def run_job(self, job: Job) -> str:
        """Run one claimed job to ``done``, ``failed``, (interrupted) ``queued``, ``lost`` (another worker holds
        it) or ``stored`` (its answer stored, the queue locked past ``locked_retry_s``); the state reached."""
        with _LeaseKeeper(self, job):
            try:
                summary = self._answer(job)
            except _Interrupted as why:
                self._computing = False
                self.queue.release(job.id, self.worker_id)
                log.info(f"{why}: job {job.id} released to the queue")
                return "queued"
            except Exception as exc:
                self._computing = False
                self.queue.require()  # a store deleted under the job stops the worker (QueueGone), not the job
                if self._stop.is_set():  # the stop landed inside a library call (DuckDB: "Query interrupted")
                    self.queue.release(job.id, self.worker_id)
                    log.info(f"stop requested ({type(exc).__name__}: {exc}): job {job.id} released to the queue")
                    return "queued"
                message = failure_line(exc)
                log.exception(f"job {job.id}")
                self._retrying(lambda: self.queue.fail(job.id, self.worker_id, message), f"failing job {job.id}")
                log.error(f"job {job.id} failed: {message}")
                return "failed"
            return self._complete(job, summary)

    def _answer(self, job: Job) -> str:
        """Compute and store the job's answer unless it is stored already; a one-line summary of it."""
        if self._stop.is_set():
            raise _Interrupted("stop requested")
        with self.store.connect() as con:
            if _stored(con, job):  # written by a worker that died before completing
                return "result already stored"
        self._computing = True
        if self._stop.is_set():  # a signal that came before the flag was raised
            raise _Interrupted("stop requested")
        rows = self.compute(job)
        self._computing = False
        self._write(job, rows)
        return _summary(rows["responses"])

    def _complete(self, job: Job, summary: str) -> str:
        """Record the job whose answer is stored as done (retried while the queue is locked: never failed for it)."""
        ref = json.dumps(result_key(job))
        try:
            recorded = self._retrying(
                lambda: self.queue.complete(job.id, self.worker_id, ref), f"recording job {job.id}"
            )
        except sqlite3.OperationalError as exc:
            log.warning(
                f"job {job.id}: its answer is stored but the queue stayed locked ({exc}) for "
                f"{self.locked_retry_s:g} s; the next claim of it completes it from the stored row"
            )
            return "stored"
        if recorded:
            log.info(f"job {job.id} done: {summary}")
            return "done"
        log.warning(f"job {job.id}: {self.lapsed(job.id)}; its result is stored once")
        return "lost"

    def lapsed(self, job_id: int) -> str:
        """Why this worker no longer holds ``job_id``: "lost to another worker" only when another one does."""
        job = self.queue.get(job_id)
        if job is not None and job.state == "running" and job.worker_id != self.worker_id:
            return f"lost to another worker ({job.worker_id})"
        return f"lapsed (the job is {job.state if job else 'gone'})"

    def _retrying(self, call: Callable[[], T], what: str) -> T:
        """``call()`` (one queue transaction), tried again after a growing pause while the queue is locked or
        busy, for at most ``locked_retry_s``; the lock's ``sqlite3.OperationalError`` once that time is spent."""
        deadline = time.monotonic() + self.locked_retry_s
        pause, longest = RETRY_PAUSE_S
        while True:
            try:
                return call()
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    raise
                if time.monotonic() + pause > deadline:
                    raise
                log.warning(f"{what}: {exc}; trying again in {pause:g} s")
                time.sleep(pause)
                pause = min(2 * pause, longest)

    def _write(self, job: Job, rows: dict[str, pd.DataFrame]) -> None:
        """Publish the rows unless this job's result is already stored (checked under the writers' lock)."""
        self.queue.require()  # the writer would create a deleted store's folder again
        with self.store.writer() as w:
            with w.connect() as con:
                if _stored(con, job):
                    return
            for table, df in rows.items():
                w.add(table, df)

    # -- one job ---------------------------------------------------------------------------
    def compute(self, job: Job) -> dict[str, pd.DataFrame]:
        """Decode, infer and build the ``responses`` and ``runs`` rows of one job (nothing written)."""
        inputs = job_inputs(self.store, [job])[0]
        if isinstance(inputs, Exception):
            raise inputs
        item, cfg, given = inputs
        cell = answer_cold(self.adapter, item, cfg, self.video_root, job.request.seed, self.spec.default_pixels, given)
        return job_rows(job, answered(item, cfg, job, cell), self.context, self.worker_id)


Inputs = tuple[dict, Config, np.ndarray | None]  # a job's item, configuration and logged frame indices


def job_inputs(store: Store, jobs: list[Job]) -> list[Inputs | Exception]:
    """What answering each job reads from the store: its item (with its video's path from the catalog), its
    configuration, and for a ``logged`` label the logged answer's frame indices; one items query per
    benchmark for all the jobs (a dispatcher reads for many at once). A job that cannot be read gets its
    exception in its place (its failure, not the others')."""
    rows: dict[tuple[str, str], dict] = {}
    for benchmark in sorted({j.benchmark for j in jobs}):
        ids = sorted({j.item_id for j in jobs if j.benchmark == benchmark})
        items = store.query("SELECT * FROM items WHERE benchmark = ? AND list_contains(?, item_id)", [benchmark, ids])
        for item in catalog.with_videos(store, benchmark, items).to_dict("records"):
            rows[benchmark, item["item_id"]] = item
    out: list[Inputs | Exception] = []
    for job in jobs:
        req = job.request
        try:
            item = rows.get((req.benchmark, req.item_id))
            if item is None:
                raise UserError(f"item {req.item_id!r} of benchmark {req.benchmark!r} is not in the store")
            cfg = parse(req.config)
            given = None
            if logged_frames.is_logged(cfg):
                given = logged_frames.logged_indices(store, req.model, req.benchmark, req.item_id, cfg)
            out.append((item, cfg, given))
        except Exception as exc:
            out.append(exc)
    return out


def answered(item: dict, cfg: Config, job: Job, cell: ColdCell) -> Answered:
    """A job's cold cell as the answer its rows are built from."""
    return Answered(
        item, cfg, job.request.seed, cell.indices, cell.fps, cell.pixels, cell.result, cell.timings, cell.decoder
    )


def job_rows(job: Job, done: Answered, context: ModelContext, worker_id: str) -> dict[str, pd.DataFrame]:
    """The job's ``responses`` row and its ``runs`` row, which records the request (the local worker's and
    the dispatcher's: one row shape whoever computed the answer)."""
    now = datetime.now(UTC)
    req = job.request
    source = RowSource(
        origin="rerun",
        model=req.model,
        benchmark=req.benchmark,
        run=job.run,
        run_id=job.run,
        context=context,
        extra={"job_id": job.id, "attempt": job.attempts, "worker_id": worker_id},
    )
    response = response_row(done, source, now)
    run = {
        "run_id": job.run,
        "origin": "rerun",
        "source": f"job:{job.id}",
        "format": "rerun",
        "args": json.dumps(req.to_dict()),
        "n_rows": 1,
        "code_version": context.versions["trajaudit"],
        "created_at": now,
    }
    return {"responses": pd.DataFrame([response]), "runs": pd.DataFrame([run])}


def _summary(responses: pd.DataFrame) -> str:
    row = responses.iloc[0]
    verdict = {1: "correct", 0: "wrong"}.get(row["correct"], "scored")
    return f"answer {row['answer']!r} ({verdict}), {row['frames']} frames"
