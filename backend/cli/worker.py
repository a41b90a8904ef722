"""``trajaudit worker``: serve re-run jobs for one registered model (run it where the GPU is)."""

from __future__ import annotations

import argparse
import os
import signal

from backend.cli.common import command
from backend.extras import require_worker_extra
from backend.runtime import lifeline, logs
from store.errors import UserError
from store.store import resolve_root

log = logs.get("worker")


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "worker",
        "Loads the model once and serves its jobs; Ctrl-C finishes a job whose answer is "
        "computed, else returns it to the queue. A model that cannot load fails its queued jobs with the "
        "reason and exits 2; a store deleted under it stops it (exit 2) and is not recreated.",
    )
    p.add_argument("--model", required=True, help="a registered model (trajaudit models list)")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--once", action="store_true", help="exit when no job for the model is left in the queue")
    p.add_argument("--poll", type=float, default=1.0, metavar="S", help="seconds between queue polls when idle")
    p.add_argument("--lease", type=float, default=60.0, metavar="S", help="job lease, renewed every S/3 seconds")
    p.add_argument(
        "--idle-timeout", type=float, metavar="S", help="exit after S seconds without a job (default: never)"
    )
    p.add_argument(
        "--parent-pid", type=int, metavar="PID", help="exit when process PID is gone (the dashboard passes its own pid)"
    )
    p.set_defaults(func=run)


def _parent_gone(pid: int) -> None:
    """SIGTERM to itself: while loading it just ends; while serving, a job being computed returns to the queue."""
    log.info(f"process {pid} that started this worker is gone: stopping")
    os.kill(os.getpid(), signal.SIGTERM)


def run(args: argparse.Namespace) -> int:
    require_worker_extra("trajaudit worker")
    if args.idle_timeout is not None and not args.idle_timeout > 0:
        raise UserError(f"--idle-timeout {args.idle_timeout:g}: expected a positive number of seconds")
    if args.parent_pid is not None:  # watched from the start: loading the model takes a while
        lifeline.watch(args.parent_pid, lambda: _parent_gone(args.parent_pid))
    from backend.runtime.worker import Worker  # torch and transformers load only for this command

    worker = Worker(resolve_root(args.store), args.model, device=args.device, lease_s=args.lease, poll_s=args.poll)
    log.info(f"{worker.worker_id}: model {worker.spec.name} on {worker.device} ({worker.dtype})")
    n = worker.run(once=args.once, idle_timeout_s=args.idle_timeout)
    log.info(f"{worker.worker_id}: stopped after {n} job(s)")
    return 0
