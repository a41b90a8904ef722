"""``trajaudit jobs``: the re-run queue (jobs, online workers) and cancelling a queued job."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, add_store, print_json
from backend.runtime.worker_pool import overview
from store.queue import STATES, JobQueue
from store.store import resolve_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="list re-run jobs and workers; cancel a queued job")
    add_store(p)
    p.add_argument("--state", choices=STATES, default=None, help="only jobs in this state")
    p.add_argument("--model", default=None, help="only jobs for this model")
    p.add_argument("--limit", type=int, default=100, help="newest N jobs (default 100)")
    p.add_argument("--cancel", type=int, default=None, metavar="ID", help="cancel the queued job ID")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    queue = JobQueue(resolve_root(args.store))
    if args.cancel is not None:
        job = queue.cancel(args.cancel)
        if args.json:
            print_json(job.to_dict())
        else:
            print(f"cancelled job {job.id}")
        return 0
    if args.json:  # the Workers page shows this same object
        print_json(overview(resolve_root(args.store), state=args.state, model=args.model, limit=args.limit))
        return 0
    jobs = queue.list_jobs(state=args.state, model=args.model, limit=args.limit)
    workers = queue.workers()
    print("  ".join(f"{state} {n}" for state, n in queue.counts().items()))
    for j in jobs:
        extra = j.error or j.result_ref or ""
        print(f"{j.id}\t{j.state}\t{j.model}\t{j.benchmark}/{j.item_id}\t{j.config}\tattempts {j.attempts}\t{extra}")
    for w in workers:
        doing = f"job {w.current_job}" if w.current_job else "idle"
        print(f"worker {w.worker_id}\t{w.model}\t{w.device}\t{doing}")
    if not workers:
        print("no worker online (start one: trajaudit worker --model NAME)")
    return 0
