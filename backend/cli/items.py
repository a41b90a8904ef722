"""``trajaudit items``: one model's items on the scope's grid, as the Items page lists them.

Its text is the Items page: one sorted page (``--sort``, ``--desc``, ``--page``, ``--page-size``) as a table to read in
a terminal. ``--json`` with ``--page`` or ``--sort`` prints that page with every sort key per row; ``--json`` or
``--format json`` alone every item with its tags and trajectory, ``--format csv`` the same as a spreadsheet.
"""

from __future__ import annotations

import argparse
import sys

from backend import views
from backend.cli.common import command, focus_model, print_json, scope_view
from backend.contracts.views import ItemsPage
from backend.export import csv_text
from backend.present.tables import cell_text
from backend.present.text import MISSING, count
from backend.scope.annotations import annotation_columns, with_annotations
from backend.scope.items import SORTS, flat_table, trajectory_table
from backend.scope.resolve import add_scope_args
from store.errors import UserError
from store.unshown import UNSHOWN


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "items")
    p.add_argument(
        "--model",
        default=None,
        help="the model whose items are listed (default: the dashboard's focus model when it opens, said on standard error)",
    )
    add_scope_args(p, models=False)
    p.add_argument("--models", default=None, help="models the items are matched over (default: --model only)")
    p.add_argument(
        "--format",
        default="text",
        choices=("text", "json", "csv"),
        help="text: one page of the Items page's table (the default); json: with --page or --sort that page, else "
        "every item with its trajectory; csv: every item, for a spreadsheet",
    )
    p.add_argument("--json", action="store_true", help="JSON output (same as --format json)")
    p.add_argument("--limit", type=int, default=None, help="at most N items")
    p.add_argument("--annotations", action="store_true", help="add each item's annotation tags, notes and count")
    p.add_argument("--sort", default=None, choices=list(SORTS), help="the Items page: sort key (prints one page)")
    p.add_argument("--desc", action="store_true", help="sort descending (the text page, or --json with --sort/--page)")
    p.add_argument("--page", type=int, default=None, help="the Items page: page number (from 1)")
    p.add_argument("--page-size", type=int, default=50, help="rows per page (default 50)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        raise UserError("--limit must be >= 0")
    if args.json and args.format == "csv":
        raise UserError("--json and --format csv contradict each other")
    if args.json:
        args.format = "json"
    if args.format == "text" and args.annotations:
        raise UserError("--annotations adds columns to --json or --format csv, not to the text page")
    model = focus_model(args)
    view = scope_view(args, model)
    if args.format == "text" or args.page is not None or args.sort is not None:
        report = views.items_page(view, model, args.sort or "item", args.desc, args.page or 1, args.page_size)
        if args.format == "text":
            print_page(report, limit=args.limit)
        else:
            print_json(report)
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


QUESTION_CHARS = 60


def _cell(text: str | None, width: int | None = None) -> str:
    clean = UNSHOWN.sub(" ", text or "").strip() or MISSING  # a file's text reaches the terminal as text
    return clean if width is None or len(clean) <= width else clean[: width - 1] + "…"


def print_page(report: ItemsPage, limit: int | None = None) -> None:
    """The Items page as a terminal table: a line saying what it lists, the page's rows (a column only where some
    row has a value: disagreement needs two models or more, confidence and score drop stored values), then how to get
    more."""
    grid = report.scope.grid
    rows = report.rows[:limit] if limit is not None else report.rows
    order = f"{SORTS[report.sort]}{', largest first' if report.descending else ''}"
    n_items = report.scope.n_items if isinstance(report.scope.n_items, int) else len(report.rows)
    print(
        f"{report.model} · {report.scope.benchmark} · {count(n_items, 'item')} on {' -> '.join(grid)} · "
        f"sorted by {order} · page {report.page} of {report.n_pages}"
    )
    columns: list[tuple[str, list[str]]] = [  # headed as the Items page heads them (SORTS)
        (SORTS["item"], [_cell(r.item_id) for r in rows]),
        (SORTS["task_type"], [_cell(r.task_type, 28) for r in rows]),
        (SORTS["n_correct"], [f"{r.n_correct}/{len(grid)}" for r in rows]),
        (SORTS["changes"], [str(r.changes) for r in rows]),
    ]
    for key in ("disagreement", "mean_confidence", "drop"):
        values = [getattr(r, key) for r in rows]
        if any(v is not None for v in values) and (key != "disagreement" or len(report.scope.models) > 1):
            columns.append((SORTS[key], [cell_text(v, "%.2f") for v in values]))
    columns += [
        ("tags", [_cell(", ".join(r.tags)) for r in rows]),
        ("question", [_cell(r.question, QUESTION_CHARS) for r in rows]),
    ]
    widths = [max(len(name), *(len(v) for v in values)) if values else len(name) for name, values in columns]
    print("  ".join(name.ljust(w) for (name, _), w in zip(columns, widths, strict=True)).rstrip())
    for k in range(len(rows)):
        print("  ".join(values[k].ljust(w) for (_, values), w in zip(columns, widths, strict=True)).rstrip())
    if not rows:
        print("(no item on this page)")
    more = f"--page {report.page + 1} for the next page, " if report.page < report.n_pages else ""
    print(
        f"{more}--sort {{{','.join(SORTS)}}} [--desc] to sort; --json or --format csv for every item with its "
        "trajectory per configuration"
    )
