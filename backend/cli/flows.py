"""``trajaudit flows``: the flows page as JSON: state nodes and aggregated links, trajectory classes, flow items.

``--beyond-noise`` is the pages' "hide within-noise flips" toggle (``backend.noise``).
"""

from __future__ import annotations

import argparse

from backend import noise
from backend.cli.common import add_json, add_store, print_json, split_list
from backend.cli.metrics import add_scope, item_filter_from
from backend.errors import UserError
from backend.flows import CLASSES, flow_table, heatmap, sankey
from backend.matrix import load_matrix
from backend.metrics import FLOW_KINDS, flow_items
from backend.tags import TAGS
from backend.views import tag_subset, view_grid
from store.store import Store


def add_view(p: argparse.ArgumentParser) -> None:
    """Scope as the dashboard's sidebar sets it: matched models, grid, item filters, trajectory tag."""
    add_scope(p)
    p.add_argument("--tag", default=None, choices=TAGS, help="only items with this trajectory tag (of --model, or --tag-model)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("flows", help="correct/wrong flows between configurations (the Sankey), with items")
    add_store(p)
    p.add_argument("--model", required=True, help="the model whose flows are drawn")
    p.add_argument("--models", default=None, help="models the items are matched over (default: --model only)")
    add_view(p)
    p.add_argument("--from", dest="frm", default=None, help="flows between two configs: the first")
    p.add_argument("--to", default=None, help="flows between two configs: the second")
    p.add_argument("--kind", default=None, choices=FLOW_KINDS, help="list the items of this flow (needs --from/--to)")
    p.add_argument("--limit", type=int, default=100, help="at most N flow items (default 100)")
    p.add_argument("--beyond-noise", action="store_true",
                   help="leave out flips within the item's own repeat noise (see `trajaudit audit noise`); "
                   "flips beyond noise and unmeasured ones stay")  # fmt: skip
    add_json(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> dict:
    if (args.frm is None) != (args.to is None):
        raise UserError("--from and --to go together")
    if args.kind is not None and args.frm is None:
        raise UserError("--kind needs --from and --to")
    if args.limit < 0:
        raise UserError("--limit must be >= 0")
    models = list(dict.fromkeys([args.model, *(split_list(args.models) or [])]))
    store = Store(args.store)
    grid = view_grid(store, models, args.benchmark, split_list(args.grid))
    matrix = load_matrix(store, models, args.benchmark, grid, item_filter_from(args))
    matrix = tag_subset(matrix, args.model, args.tag)
    out = sankey(matrix, args.model, None if args.frm is None else [args.frm, args.to])
    profile = noise.noise_profile(store, matrix) if args.beyond_noise else None
    if profile is not None:
        out = noise.sankey_without_noise(out, matrix, profile)
    out["trajectory_classes"] = heatmap(matrix, args.model, max_rows=1)["class_counts"]
    if args.kind is not None:
        items = flow_items(matrix, args.model, args.frm, args.to, args.kind)
        if profile is not None:
            items = noise.drop_within_noise(items, matrix, profile, args.model, args.frm, args.to)
        out["items"] = items.head(args.limit).to_dict("records")
        out["n_flow_items"] = len(items)
    return out


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
        return 0
    print(f"{out['model']}: {out['n_items']} items ({out['n_excluded']} excluded), configs {' -> '.join(out['configs'])}")
    print(flow_table(out).to_string(index=False))
    if out.get("within_noise_hidden"):
        print(f"{out['n_hidden']} within-noise flips left out")
    print("trajectory classes: " + ", ".join(f"{c} {out['trajectory_classes'][c]}" for c in CLASSES))
    for row in out.get("items", []):
        print(f"  {row['benchmark']}/{row['item_id']}  {row.get('task_type') or ''}")
    return 0
