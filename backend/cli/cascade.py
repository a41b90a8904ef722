"""``trajaudit cascade``: accuracy and frame cost of a confidence cascade on a ladder of budgets."""

from __future__ import annotations

import argparse
from typing import cast

from backend import views
from backend.analysis import cascade
from backend.cli import NOTES
from backend.cli.common import add_json, command, focus_model, note_benchmark, print_json, split_list
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport
from backend.present.metrics import POLICY_METRICS, labelled
from backend.present.text import MISSING
from backend.scope.resolve import Resolved, Scope, add_item_filters, item_filter_from
from store.store import Store


def add_ladder(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model", default=None, help="default: the dashboard's focus model when it opens (said on standard error)"
    )
    p.add_argument(
        "--benchmark", default=None, help="default: the largest benchmark the model has (said on standard error)"
    )
    p.add_argument(
        "--ladder",
        default=None,
        help="budgets in increasing cost, e.g. 16f,32f,64f,128f (default: the visual configurations of the "
        "model's default grid, as on the Policies page)",
    )
    add_item_filters(p, ids=False)


def load(args: argparse.Namespace) -> tuple[cascade.Ladder, Resolved]:
    """The ladder the arguments name, on the items their filters select (as the Policies page loads it)."""
    store = Store(args.store)
    resolved = note_benchmark(
        views.single_scope(Scope(args.benchmark, (focus_model(args),), item_filter=item_filter_from(args))).resolve(
            store
        )
    )
    return views.load_ladder(store, resolved, split_list(args.ladder)), resolved


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "cascade",
        "Answer at the first budget whose confidence reaches the threshold, else at the top "
        "budget. Uses the items with a confidence at every rung; cost is in frames, with frame sharing "
        "(the rung stopped at) and without (every rung visited), and relative to the fixed top budget.",
    )
    add_ladder(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--threshold",
        type=float,
        help=f"one threshold on the chosen option's probability (default: {cascade.DEFAULT_THRESHOLD:g}, where the "
        "Policies page's slider opens; said on standard error)",
    )
    mode.add_argument("--sweep", action="store_true", help="the frontier over thresholds and the matching point")
    p.add_argument("--points", type=int, default=cascade.DEFAULT_POINTS, help="most thresholds on the frontier")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for intervals (0 = none)")
    p.add_argument("--seed", type=int, default=0)
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    threshold = None if args.sweep else args.threshold  # None: the sweep
    if not args.sweep and threshold is None:
        threshold = cascade.DEFAULT_THRESHOLD
        NOTES.append(
            f"threshold {threshold:g} (where the Policies page opens; --threshold T for another, --sweep for the frontier)"
        )
    ladder, resolved = load(args)
    out = views.cascade_view(ladder, resolved, threshold, args.points, args.bootstrap, args.seed)
    if args.json:
        print_json(out)
        return 0
    print(f"ladder {','.join(out.ladder)}: every policy {out.denominator}")
    if not args.sweep:
        at = cast(CascadeThresholdReport, out)  # cascade_view's report for one threshold
        print(
            f"threshold {at.threshold:g}: {labelled(POLICY_METRICS, at, ('accuracy', *FRAMES))}; cost vs top {_percent(at.cost_vs_top_shared)}"
        )
        return 0
    swept = cast(CascadeSweepReport, out)  # cascade_view's report without a threshold
    print(f"top budget accuracy {100 * swept.top_accuracy:.1f}%")
    for pt in swept.frontier:
        print(f"  t={pt.threshold:<8g} {labelled(POLICY_METRICS, pt, ('accuracy', *FRAMES))}")
    m = swept.matching
    if m is None:
        print("no threshold matches the top budget's accuracy")
    else:
        print(f"matching: t={m.threshold:g}, {labelled(POLICY_METRICS, m, ('accuracy', 'saving'))}")
    return 0


FRAMES = ("mean_frames_shared", "mean_frames_unshared")


def _percent(fraction: float | None) -> str:
    """A fraction as a percentage; the contract's null (a top rung of 0 frames) as a dash."""
    return MISSING if fraction is None else f"{100 * fraction:.1f}%"
