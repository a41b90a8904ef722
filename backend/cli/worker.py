"""``trajaudit worker``: serve re-run jobs for one registered model (run it where the GPU is)."""

from __future__ import annotations

import argparse

from backend.cli.common import add_store
from store.store import resolve_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "worker",
        help="run queued re-run jobs for one model",
        description="Loads the model once and serves its jobs; Ctrl-C finishes a job whose answer is "
        "computed, else returns it to the queue.",
    )
    add_store(p)
    p.add_argument("--model", required=True, help="a registered model (trajaudit models list)")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--once", action="store_true", help="exit when no job for the model is left in the queue")
    p.add_argument("--poll", type=float, default=1.0, metavar="S", help="seconds between queue polls when idle")
    p.add_argument("--lease", type=float, default=60.0, metavar="S", help="job lease, renewed every S/3 seconds")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from backend.worker import Worker  # torch and transformers load only for this command

    worker = Worker(resolve_root(args.store), args.model, device=args.device, lease_s=args.lease, poll_s=args.poll)
    print(f"worker {worker.worker_id}: model {worker.spec.name} on {worker.device} ({worker.dtype})", flush=True)
    n = worker.run(once=args.once)
    print(f"worker {worker.worker_id}: stopped after {n} job(s)", flush=True)
    return 0
