"""``trajaudit predictor``: cross-validated budget predictor from the instruction alone, on one frontier."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from backend import views
from backend.cli.cascade import add_ladder, load
from backend.cli.common import add_json, command, print_json
from backend.present.metrics import POLICY_METRICS


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "predictor",
        "Predict each item's cheapest sufficient budget on the ladder from its question, options "
        "and metadata (TF-IDF + one-hot, logistic regression), cross-validated with folds grouped by video; "
        "report accuracy vs mean frames beside the fixed budgets, the cascade frontier and the oracle.",
    )
    add_ladder(p)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ladder, resolved = load(args)
    # on a terminal, a bar per fold (25 s at 250k items); none with --json or when piped
    with tqdm(
        total=args.folds, unit="fold", desc="cross-validating", file=sys.stderr, disable=args.json or None
    ) as bar:
        out = views.predictor_view(ladder, resolved, args.folds, args.seed, lambda done, _: bar.update(done - bar.n))
    if args.json:
        print_json(out)
        return 0
    hit, accuracy = POLICY_METRICS["target_hit_rate"], POLICY_METRICS["accuracy"]
    print(
        f"{out.model} on {','.join(out.ladder)}: every policy {out.denominator}; {out.n_groups} video "
        f"groups, {out.folds}-fold grouped CV; {hit.label} {hit.format(out.target_hit_rate)}"
    )
    for row in out.frontier:
        print(
            f"  {row.policy:9s} {row.label:18s} {accuracy.label} {accuracy.format(row.accuracy):<6}  "
            f"mean frames {row.mean_frames:7.1f}"
            f"  (n={row.n_items})"
        )
    if out.cascade_note:
        print(f"cascade: {out.cascade_note}")
    return 0
