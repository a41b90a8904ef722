"""``trajaudit items``: one model's items on the scope's grid with tags and trajectories (JSON or CSV).

With ``--page`` it prints the Items page instead: one sorted page with every sort key per row.
"""

from __future__ import annotations

import argparse
import sys

from backend import views
from backend.cli.common import command, focus_model, print_json, scope_view
from backend.export import csv_text
from backend.scope.annotations import annotation_columns, with_annotations
from backend.scope.items import SORTS, flat_table, trajectory_table
from backend.scope.resolve import add_scope_args
from store.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "items")
    p.add_argument(
        "--model",
        default=None,
        help="the model whose items are listed (default: the dashboard's focus model when it opens, said on standard error)",
    )
    add_scope_args(p, models=False)
    p.add_argument("--models", default=None, help="models the items are matched over (default: --model only)")
    p.add_argument("--format", default="json", choices=("json", "csv"))
    p.add_argument("--json", action="store_true", help="JSON output (the default; same as --format json)")
    p.add_argument("--limit", type=int, default=None, help="at most N items")
    p.add_argument("--annotations", action="store_true", help="add each item's annotation tags, notes and count")
    p.add_argument("--sort", default=None, choices=list(SORTS), help="the Items page: sort key (prints one page)")
    p.add_argument("--desc", action="store_true", help="with --sort/--page: descending")
    p.add_argument("--page", type=int, default=None, help="the Items page: page number (from 1)")
    p.add_argument("--page-size", type=int, default=50, help="rows per page (default 50)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        raise UserError("--limit must be >= 0")
    if args.json and args.format == "csv":
        raise UserError("--json and --format csv contradict each other")
    model = focus_model(args)
    view = scope_view(args, model)
    if args.page is not None or args.sort is not None:
        print_json(views.items_page(view, model, args.sort or "item", args.desc, args.page or 1, args.page_size))
        return 0
    table = trajectory_table(view.matrix, model)
    if args.limit is not None:
        table = table.slice(0, args.limit)
    if args.format == "csv":  # a DataFrame is the export's product: pandas is imported for it alone
        out = flat_table(table, list(view.matrix.grid))
        if args.annotations:
            out = with_annotations(out, view.store, view.scope.benchmark)
        sys.stdout.write(csv_text(out))  # spreadsheet-safe: text that would run as a formula is quoted
        return 0
    if args.annotations:
        extra = annotation_columns(table, view.store, view.scope.benchmark)
        for name in extra.column_names:
            table = table.append_column(name, extra.column(name))
    print_json(table.to_pylist())
    return 0
