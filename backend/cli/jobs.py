"""``trajaudit jobs``: the re-run queue (jobs, online workers) and cancelling a queued job."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, command, print_json
from backend.runtime import rerun
from backend.runtime.worker_pool import overview
from store.store import resolve_root


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "jobs")
    p.add_argument("--state", choices=rerun.JOB_STATES, default=None, help="only jobs in this state")
    p.add_argument("--model", default=None, help="only jobs for this model")
    p.add_argument("--limit", type=int, default=100, help="newest N jobs (default 100)")
    p.add_argument("--cancel", type=int, default=None, metavar="ID", help="cancel the queued job ID")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = resolve_root(args.store)
    if args.cancel is not None:
        job = rerun.cancel(root, args.cancel)
        if args.json:
            print_json(job.record())
        else:
            print(f"cancelled job {job.id}")
        return 0
    out = overview(root, state=args.state, model=args.model, limit=args.limit)  # what the Workers page shows
    if args.json:
        print_json(out)
        return 0
    print("  ".join(f"{state} {n}" for state, n in out.counts.items()))
    for j in out.jobs:
        extra = j.error or j.result_ref or ""
        where = f"{j.benchmark}/{j.item_id}"
        print(f"{j.id}\t{j.state}\t{j.model}\t{where}\t{j.config}\tattempts {j.attempts}\t{extra}")
    for w in out.workers:
        doing = f"job {w.current_job}" if w.current_job else "idle"
        print(f"worker {w.worker_id}\t{w.model}\t{w.device}\t{doing}")
    if not out.workers:
        print("no worker online (start one: trajaudit worker --model NAME)")
    return 0
