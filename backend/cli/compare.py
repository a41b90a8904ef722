"""``trajaudit compare``: the Compare page as JSON: headline metrics side by side, confused-item overlap, disagreement."""

from __future__ import annotations

import argparse

from backend import views
from backend.cli.common import add_json, command, print_json, scope_view
from backend.contracts.views import CompareReport
from backend.present.metrics import COMPARE_METRICS, labelled
from backend.present.tables import headline_table
from backend.scope.resolve import add_scope_args


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "compare")
    add_scope_args(p)
    p.add_argument("--top", type=int, default=50, help="items in the disagreement ranking (0 = all)")
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples for the 95%% intervals (0 = none)")
    p.add_argument("--seed", type=int, default=0)
    add_json(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> CompareReport:
    view = scope_view(args)
    return views.compare_view(view, top=args.top, bootstrap=args.bootstrap, seed=args.seed)


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
        return 0
    print(f"grid: {', '.join(out.grid)}   items: {out.n_items}   excluded: {out.n_excluded}")
    import pandas as pd  # aligns the text table; --json never imports it

    table = headline_table(out.metrics, out.n_items, out.grid)  # the Overview's headline table, as it reads there
    print(pd.DataFrame(table.rows, columns=table.columns).to_string(index=False))
    print(table.caption)
    gaps = {m: rec.continuous for m, rec in out.metrics.items() if rec.continuous}
    for model, c in gaps.items():
        print(
            f"{model}: oracle gap {100 * c.oracle_gap:.1f} (x100, {c.n_items} scored items), "
            f"best fixed {c.best_fixed.config} {100 * c.best_fixed.mean_score:.1f}"
        )
    if out.overlap:
        ov = out.overlap
        print(labelled(COMPARE_METRICS, ov, tuple(COMPARE_METRICS)))
        if out.disagreement:
            print(
                "Items the models disagree on most (disagreement: how evenly they split, 1 = half right, half wrong):"
            )
        for row in (out.disagreement or [])[:10]:
            print(f"  {row['disagreement']:.2f}  {row['benchmark']}/{row['item_id']}  {row.get('task_type') or ''}")
    return 0
