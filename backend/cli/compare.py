"""``trajaudit compare``: the compare page as JSON: headline metrics side by side, confused-item overlap, disagreement."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, add_store, print_json, split_list
from backend.cli.flows import add_view
from backend.cli.metrics import item_filter_from
from backend.compare import confusion_overlap, disagreement, headline_table
from backend.errors import UserError
from backend.matrix import load_matrix
from backend.metrics import mcqa_metrics
from backend.views import tag_subset, view_grid
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="models side by side on their matched grid: headroom, confusion, overlap")
    add_store(p)
    p.add_argument("--models", required=True, help="models, comma-separated (overlap and disagreement need two)")
    add_view(p)
    p.add_argument("--tag-model", default=None, help="the model whose trajectory --tag selects items (default: the first)")
    p.add_argument("--top", type=int, default=50, help="items in the disagreement ranking (0 = all)")
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples for the 95%% intervals (0 = none)")
    p.add_argument("--seed", type=int, default=0)
    add_json(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> dict:
    models = split_list(args.models) or []
    if not models:
        raise UserError("--models is empty")
    if args.top < 0 or args.bootstrap < 0:
        raise UserError("--top and --bootstrap must be >= 0")
    store = Store(args.store)
    grid = view_grid(store, models, args.benchmark, split_list(args.grid))
    matrix = load_matrix(store, models, args.benchmark, grid, item_filter_from(args))
    matrix = tag_subset(matrix, args.tag_model or models[0], args.tag)
    metrics = mcqa_metrics(matrix, bootstrap=args.bootstrap, seed=args.seed)
    out = {"grid": metrics["grid"], "n_items": metrics["n_items"], "n_excluded": metrics["n_excluded"], "metrics": metrics["models"]}
    if len(models) > 1:
        out["overlap"] = confusion_overlap(matrix)
        out["disagreement"] = disagreement(matrix, top=args.top or None).to_dict("records")
    return out


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
        return 0
    print(f"grid: {', '.join(out['grid'])}   items: {out['n_items']}   excluded: {out['n_excluded']}")
    table = headline_table({"models": out["metrics"]}).set_index("model")
    print((table.filter(regex=r"^(best_fixed|oracle_headroom|visual_confusion_rate|text_overwrite_rate)$") * 100).round(1).to_string())
    if "overlap" in out:
        ov = out["overlap"]
        print(f"confused by every model: {ov['confused_by_all']}   by any: {ov['confused_by_any']}")
        for row in out["disagreement"][:10]:
            print(f"  {row['disagreement']:.2f}  {row['benchmark']}/{row['item_id']}  {row.get('task_type') or ''}")
    return 0
