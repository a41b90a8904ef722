"""``trajaudit rerun``: re-run one item, or a selection of items, with another budget or sampling policy.

One item: ``--item ID``. A selection: ``--items FILE`` (ids, one a line or a CSV with ``item_id``),
``--flow FROM:TO:KIND`` or ``--state CONFIG:STATE`` (the Flows page's links and nodes, resolved on
the scope the flags name, like ``trajaudit flows``). A selection's ``--json`` holds the batch, its
progress and the comparison against ``--baseline`` (default: where the flow ends, the state's
config, else the grid's last); the page's batch re-run draws the same dict.
"""

from __future__ import annotations

import argparse
import sys
import time

from backend import views
from backend.cli.common import add_json, command, print_json, scope_view
from backend.contracts.runs import SelectionRerunReport
from backend.present.text import count
from backend.runtime import rerun, selection
from backend.runtime.logged_frames import logged_label
from backend.runtime.worker_pool import overview
from backend.scope.resolve import add_scope_args
from backend.scope.selection import Selection, read_ids
from backend.scope.view import View
from store.errors import UserError
from store.store import resolve_root

POLL_S = 0.5


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "rerun",
        "Validates the request, answers it from the store when an identical result exists "
        "(unless --force), else queues it for `trajaudit worker --model NAME`.",
    )
    p.add_argument(
        "--model", required=True, help="a registered model (trajaudit models list); a selection's flow is this model's"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--item", dest="item_id", help="one item id")
    which.add_argument(
        "--items", dest="items_file", metavar="FILE", help="item ids, one a line (or a CSV with an item_id column)"
    )
    which.add_argument("--flow", metavar="FROM:TO:KIND", help="the items of a flow, e.g. text:8f:harmed")
    which.add_argument("--state", metavar="CONFIG:STATE", help="the items in a state, e.g. 8f:wrong")
    add_scope_args(p, models=False, noise=True)
    p.add_argument("--models", default=None, help="models the items are matched over (default: --model only)")
    p.add_argument("--config", required=True, help="config label, e.g. 32f, 64f@151k, 32f/random-s1")
    p.add_argument(
        "--baseline", default=None, help="a selection's comparison config (default: the flow's TO, the state's config)"
    )
    p.add_argument(
        "--frames",
        choices=["policy", "logged"],
        default="policy",
        help="logged: feed exactly the frames the logged answer at --config saw (the label becomes <config>/logged; "
        "a selection reports its agreement with the logged answers)",
    )
    p.add_argument("--seed", default=None, help="seed of a bare 'random' policy (an integer in 0..2**63-1)")
    p.add_argument("--force", action="store_true", help="run even when the result is already stored")
    p.add_argument("--wait", action="store_true", help="wait for the job(s) and print the result")
    p.add_argument("--timeout", type=float, default=None, help="with --wait: give up after S seconds")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = resolve_root(args.store)
    args.seed = rerun.parse_seed(args.seed)  # "3" on the command line -> 3
    if args.frames == "logged":
        args.config = logged_label(args.config)
    if args.item_id is None:
        return run_selection(args, root)
    if args.benchmark is None:
        raise UserError("--item needs --benchmark")
    request = rerun.RerunRequest(args.model, args.benchmark, args.item_id, args.config, args.seed, args.force)
    out = rerun.submit(root, request)
    if args.wait and (job_id := out.job_id) is not None:  # a job: not answered from the store
        _warn_no_worker(root, args.model)
        out = rerun.wait(root, job_id, args.timeout)
    if args.json:
        print_json(out)
    elif out.state == "done":
        source = "from the store" if out.from_store else f"job {out.job_id}"
        print(
            f"{out.model} {out.benchmark}/{out.item_id} {out.config} ({source}): answer {out.answer!r} "
            f"correct {out.correct} confidence {out.confidence} frames {out.frame_indices}"
        )
    else:
        waited = " (timed out waiting)" if out.timed_out else ""
        error = f": {out.error}" if out.error else ""
        print(f"job {out.job_id} {out.state}{waited}{error}")
    return 0 if out.state == "done" or not args.wait else 1


def _warn_no_worker(root, model: str) -> None:
    if not any(w.model == model for w in overview(root, limit=0).workers):
        print(f"no worker online for {model}: start one with `trajaudit worker --model {model}`", file=sys.stderr)


def _selection(args: argparse.Namespace) -> Selection:
    if args.items_file is not None:
        return Selection("items", tuple(read_ids(args.items_file)))
    if args.flow is not None:
        return Selection.flow(args.flow)
    parts = args.state.split(":")
    if len(parts) != 2:
        raise UserError(f"--state takes CONFIG:STATE, e.g. 8f:wrong (got {args.state!r})")
    return Selection("state", tuple(parts))


def run_selection(args: argparse.Namespace, root) -> int:
    sel = _selection(args)
    view = scope_view(args, args.model)
    out = rerun_selection(view, args.model, sel, args.config, args.baseline, args.seed, args.force)
    batch = out.batch
    if args.wait and not out.progress.finished:
        _warn_no_worker(root, args.model)
        deadline = None if args.timeout is None else time.monotonic() + args.timeout
        while not out.progress.finished and (deadline is None or time.monotonic() < deadline):
            time.sleep(POLL_S)
            out = views.batch_report(root, batch, out.comparison.baseline, sel.describe())
    if args.json:
        print_json(out)
    else:
        counts = ", ".join(f"{k} {v}" for k, v in out.progress.counts.items() if v)
        print(
            f"{args.model} {batch.benchmark} {sel.describe()}: {count(len(batch.item_ids), 'item')} at {batch.config} ({counts})"
        )
        print(out.comparison.sentence)
    return 0 if out.progress.finished or not args.wait else 1


def rerun_selection(
    view: View,
    model: str,
    sel: Selection,
    config: str,
    baseline: str | None = None,
    seed: int | None = None,
    force: bool = False,
) -> SelectionRerunReport:
    """Submit the selection's re-run under ``config`` and report it (``views.batch_report``)."""
    benchmark = view.scope.benchmark
    if benchmark is None:
        raise UserError("a selection re-run needs --benchmark")
    ids = views.selected_ids(view, model, sel)
    base = baseline or sel.baseline(list(view.matrix.grid))
    submitted = selection.submit(view.root, selection.batch_requests(model, benchmark, ids, config, seed, force))
    return views.batch_report(view.root, submitted, base, sel.describe())
