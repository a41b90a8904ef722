"""``trajaudit rerun``: re-run one item with another budget or sampling policy (queued for a worker)."""

from __future__ import annotations

import argparse
import sys

from backend import rerun
from backend.cli.common import add_json, add_store, print_json
from store.queue import JobQueue
from store.store import resolve_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rerun",
        help="queue a re-run of one item (answered from the store when already there)",
        description="Validates the request, answers it from the store when an identical result exists "
        "(unless --force), else queues it for `trajaudit worker --model NAME`.",
    )
    add_store(p)
    p.add_argument("--model", required=True, help="a registered model (trajaudit models list)")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--item", required=True, dest="item_id", help="item id")
    p.add_argument("--config", required=True, help="config label, e.g. 32f, 64f@151k, 32f/random-s1")
    p.add_argument("--seed", default=None, help="seed of a bare 'random' policy (an integer in 0..2**63-1)")
    p.add_argument("--force", action="store_true", help="run even when the result is already stored")
    p.add_argument("--wait", action="store_true", help="wait for the job and print its result")
    p.add_argument("--timeout", type=float, default=None, help="with --wait: give up after S seconds")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = resolve_root(args.store)
    out = rerun.submit(root, args.model, args.benchmark, args.item_id, args.config, args.seed, args.force)
    if args.wait and not out["from_store"]:
        if not any(w.model == args.model for w in JobQueue(root).workers()):
            print(f"no worker online for {args.model}: start one with `trajaudit worker --model {args.model}`", file=sys.stderr)
        out = rerun.wait(root, out["job_id"], args.timeout)
    if args.json:
        print_json(out)
    elif out["state"] == "done":
        source = "from the store" if out["from_store"] else f"job {out['job_id']}"
        print(
            f"{out['model']} {out['benchmark']}/{out['item_id']} {out['config']} ({source}): answer {out['answer']!r} "
            f"correct {out['correct']} confidence {out['confidence']} frames {out['frame_indices']}"
        )
    else:
        waited = " (timed out waiting)" if out["timed_out"] else ""
        error = f": {out['error']}" if out["error"] else ""
        print(f"job {out['job_id']} {out['state']}{waited}{error}")
    return 0 if out["state"] == "done" or not args.wait else 1
