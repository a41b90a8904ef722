"""Workers on demand and the queue at a glance: what the re-run panel and the Workers page ask.

On a fresh machine only ``streamlit run app.py`` runs, so a re-run would wait forever for a worker
nobody started. ``ensure_local_worker`` starts one (``trajaudit worker``) as a detached background
process when no worker of that model is online, logging to ``<store>/logs/worker-<model>.log``.
Such a worker belongs to the dashboard process that started it: it watches that process and stops
when it is gone (``--parent-pid``, ``backend.runtime.lifeline``), and it stops after ``LOCAL_IDLE_TIMEOUT_S``
without a job, so a dashboard left open does not hold a model in memory for nothing. Its pid file
records who started it (dashboard pid, user, time), which the Workers page shows.
It is idempotent across sessions and server processes: the check and the start happen under a
per-model lock file, and a pid file remembers the process it started, so a second call while that
worker is still loading (no heartbeat yet) starts nothing. The dashboard process itself never
imports torch: the worker is a separate program.

``overview`` is the queue's state with the derived timings (queue wait, run time, heartbeat age);
``trajaudit jobs --json`` prints the same object.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from backend.contracts.base import asdict
from backend.contracts.runs import RerunOutcome
from backend.contracts.store import JobRow, JobsOverview, LocalWorker, LocalWorkerStart, StartedBy, WorkerRow
from backend.extras import require_worker_extra
from backend.runtime import dispatch_records, registry, rerun
from store.errors import UserError
from store.paths import inside, write_atomic
from store.queue import Job, JobQueue

LOG_DIR = "logs"
ONLINE_WITHIN_S = 30.0  # a heartbeat younger than this means the worker is online
LOG_TAIL_LINES = 12
LOCAL_IDLE_TIMEOUT_S = 1800.0  # a dashboard-started worker stops after 30 minutes without a job
# The ``trajaudit`` command line, run by this interpreter (works without the console script on PATH).
CLI = (sys.executable, "-c", "import sys; from backend.cli import main; sys.exit(main())")


def _stem(model: str) -> str:
    """A file-name-safe form of a model name (names may hold slashes or spaces)."""
    return "worker-" + re.sub(r"[^A-Za-z0-9._-]", "_", model)


def _files(store_root: str | os.PathLike, model: str) -> tuple[Path, Path, Path]:
    """(log, pid file, lock file) of the local worker of ``model``, in a logs folder that stays inside
    the store (a ``logs`` link elsewhere is refused: the pool writes and truncates these files)."""
    base = inside(store_root, LOG_DIR, "worker log folder") / _stem(model)
    return base.with_suffix(".log"), base.with_suffix(".pid"), base.with_suffix(".lock")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive file lock on ``path`` (``filelock``; it refuses a link planted at the name): one
    check-then-start at a time, across processes."""
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield


def _append(path: Path):
    """``path`` opened for appending, never through a link planted at its name."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644), "a")


def _alive(pid: int, model: str) -> bool:
    """Whether ``pid`` is still a running worker of ``model``.

    A worker this process started is its child: alive until it exits (then a zombie until reaped,
    which is done here), and its pid cannot be recycled before it is reaped, so its command line is
    not read (just after the fork it is still this process's). For another process's worker the
    command line is checked (psutil, on every OS), so a recycled pid is not mistaken for it.
    """
    import psutil

    if hasattr(os, "WNOHANG"):  # POSIX: reap our own child if it has exited
        try:
            return os.waitpid(pid, os.WNOHANG)[0] != pid
        except ChildProcessError:
            pass  # not our child: another server process started it
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        args = process.cmdline()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # alive, owned by someone else
    return "worker" in args and model in args


def _started(store_root: str | os.PathLike) -> list[tuple[Path, dict]]:
    """(pid file, its record) of every worker started here: ``{"pid", "model", "device", "started_at",
    "parent_pid", "user", "idle_timeout_s"}`` (the last three absent in records of older versions)."""
    return [(p, json.loads(p.read_text())) for p in sorted((Path(store_root) / LOG_DIR).glob("worker-*.pid"))]


def _log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    if not log.is_file():
        return []
    with open(log, "rb") as fh:
        fh.seek(max(0, log.stat().st_size - 16_384))
        return fh.read().decode(errors="replace").splitlines()[-lines:]


def _exit_reason(tail: list[str]) -> str | None:
    """Why an exited worker stopped, in one line: the CLI's last ``error:`` line (a model that cannot
    load, a deleted store), else the log's last non-empty line (a crash's exception)."""
    lines = [line.strip() for line in tail if line.strip()]
    errors = [line for line in lines if line.startswith("trajaudit worker: error:")]
    found = errors or lines
    return found[-1] if found else None


def local_worker(store_root: str | os.PathLike, model: str) -> LocalWorker:
    """The state of ``model``'s worker, starting nothing.

    ``state``: ``online`` (a worker of the model, here or elsewhere, sent a heartbeat within
    ``ONLINE_WITHIN_S``), ``starting`` (the local process is alive but has not sent one yet: it is
    loading the model), ``exited`` (the local process is gone; ``reason`` says why in one line,
    ``log_tail`` in the log's last lines) or ``none``.
    ``started_by`` is who started the local process (``{"parent_pid", "user", "started_at",
    "idle_timeout_s"}``), None when this store started none.
    """
    log, pid_file, _ = _files(store_root, model)
    online = [w for w in JobQueue(store_root).workers(ONLINE_WITHIN_S) if w.model == model]
    started = json.loads(pid_file.read_text()) if pid_file.is_file() else None
    who = (
        None
        if started is None
        else StartedBy(
            parent_pid=started.get("parent_pid"),
            user=started.get("user"),
            started_at=started.get("started_at"),
            idle_timeout_s=started.get("idle_timeout_s"),
        )
    )
    out = LocalWorker(
        model=model,
        log=str(log),
        pid=None,
        worker_id=None,
        device=None,
        log_tail=[],
        reason=None,
        started_by=who,
        state="none",
    )
    if online:
        w = online[0]
        out.state, out.pid, out.worker_id, out.device = "online", w.pid, w.worker_id, w.device
    elif started is not None:
        out.pid, out.device = started["pid"], started["device"]
        if _alive(started["pid"], model):
            out.state = "starting"
        else:
            out.log_tail = _log_tail(log)
            out.state, out.reason = "exited", _exit_reason(out.log_tail)
    return out


def _user() -> str:
    """The login name (containers may have none: then the uid)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


def ensure_local_worker(
    store_root: str | os.PathLike, model: str, device: str = "cpu", parent_pid: int | None = None
) -> LocalWorkerStart:
    """Start ``trajaudit worker --model MODEL --device DEVICE`` here unless one is online or starting.

    The worker stops when process ``parent_pid`` (default: this one, the dashboard) is gone, or
    after ``LOCAL_IDLE_TIMEOUT_S`` without a job.

    Returns :func:`local_worker`'s record plus ``started`` (True when this call started it; its
    ``state`` is then ``starting``). ``UserError`` for an unregistered model or a checkpoint that
    is not on this machine (start a worker where it is instead), or without the worker extra.
    """
    root = Path(store_root)
    spec = registry.get(root, model)
    if not spec.resolved_path(root).exists():
        raise UserError(
            f"model {model!r}: checkpoint {spec.path!r} is not on this machine; start its worker where it is"
        )
    require_worker_extra("a local worker")  # a worker elsewhere can still serve the queued job
    if device not in registry.DEVICES:
        raise UserError(f"unknown device {device!r}; expected one of {', '.join(registry.DEVICES)}")
    log, pid_file, lock = _files(root, model)
    with _locked(lock):
        status = local_worker(root, model)
        if status.state in ("online", "starting"):
            return LocalWorkerStart(**asdict(status), started=False)
        parent = os.getpid() if parent_pid is None else parent_pid
        cmd = [
            *CLI,
            "worker",
            "--store",
            str(root.resolve()),
            "--model",
            model,
            "--device",
            device,
            "--parent-pid",
            str(parent),
            "--idle-timeout",
            f"{LOCAL_IDLE_TIMEOUT_S:g}",
        ]
        env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
        with _append(log) as out:
            out.write(
                f"--- {datetime.now(UTC).isoformat()} starting: trajaudit worker --model {model} --device {device}\n"
            )
            out.flush()
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        who = StartedBy(parent_pid=parent, user=_user(), started_at=time.time(), idle_timeout_s=LOCAL_IDLE_TIMEOUT_S)
        write_atomic(pid_file, json.dumps({"pid": proc.pid, "model": model, "device": device} | asdict(who)))
    fields = asdict(status) | {"state": "starting", "pid": proc.pid, "device": device, "log_tail": [], "reason": None}
    return LocalWorkerStart(**(fields | {"started_by": who}), started=True)


def stop_local_workers(store_root: str | os.PathLike, model: str | None = None, timeout_s: float = 20.0) -> list[int]:
    """Stop the workers :func:`ensure_local_worker` started for this store (of ``model``, or all); the pids stopped.

    SIGTERM first (the worker returns a job it is computing to the queue), SIGKILL after
    ``timeout_s``.
    """
    stopped = []
    for pid_file, started in _started(store_root):
        pid, name = started["pid"], started["model"]
        if model is not None and name != model:
            continue
        with _locked(_files(store_root, name)[2]):  # not while a session is starting it
            if _alive(pid, name):
                stopped.append(pid)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if not _alive(pid, name):
                    break
                os.kill(pid, sig)
                deadline = time.monotonic() + timeout_s
                while _alive(pid, name) and time.monotonic() < deadline:
                    time.sleep(0.1)
            pid_file.unlink(missing_ok=True)
    return stopped


def job_row(job: Job, now: float) -> JobRow:
    """A job as JSON plus ``waited_s`` (queued until claimed, or until now) and ``ran_s`` (since claimed)."""
    end = job.finished_at if job.finished_at is not None else now
    waited = (job.started_at if job.started_at is not None else end) - job.created_at
    ran = None if job.started_at is None else end - job.started_at
    return JobRow(**asdict(job.record()), waited_s=round(waited, 3), ran_s=None if ran is None else round(ran, 3))


def worker_log(store_root: str | os.PathLike, model: str) -> str | None:
    """The log of ``model``'s local worker when this store started one (where a failed job's
    traceback is), else None: what a failure line points to."""
    log = _files(store_root, model)[0]
    return str(log) if log.is_file() else None


@dataclass(frozen=True)
class JobStatus:
    """What the re-run panel polls: the job's outcome (``rerun.wait`` without waiting), the job with its
    timings, and ``worker_log`` (:func:`worker_log`)."""

    outcome: RerunOutcome
    job: JobRow
    worker_log: str | None


def job_status(store_root: str | os.PathLike, job_id: int) -> JobStatus:
    """The job's :class:`JobStatus`; ``UserError`` when the queue holds no such job."""
    job = JobQueue(store_root).get(job_id)
    if job is None:
        raise UserError(f"no job {job_id} in this store's queue")
    return JobStatus(
        outcome=rerun.wait(store_root, job_id, timeout_s=0),
        job=job_row(job, time.time()),
        worker_log=worker_log(store_root, job.model),
    )


def overview(
    store_root: str | os.PathLike, state: str | None = None, model: str | None = None, limit: int = 100
) -> JobsOverview:
    """The queue at a glance: ``counts`` per state, newest ``jobs`` (with timings), online ``workers``
    (with ``age_s`` since their last heartbeat), the ``local`` worker processes this store started and the
    dispatchers' ``remote`` actors."""
    queue = JobQueue(store_root)
    jobs = queue.list_jobs(state=state, model=model, limit=limit)
    now = time.time()
    online = queue.workers(ONLINE_WITHIN_S)
    return JobsOverview(
        counts=queue.counts(),
        jobs=[job_row(j, now) for j in jobs],
        workers=[WorkerRow(**asdict(w.record()), age_s=round(now - w.seen_at, 1)) for w in online],
        local=[local_worker(store_root, started["model"]) for _, started in _started(store_root)],
        remote=dispatch_records.remote_actors(store_root, {w.worker_id for w in online}),
    )
