"""``trajaudit explain``: why these items? What a flow, a tag or a list of items has in common.

Slices of the scope by task type, duration, domain, sub-category, target letter, number of options,
question length, video duration and annotation tags (one attribute, and two from sliceline), each with
its rate, lift, difference (Newcombe 95% interval), Fisher p and BH q; the letter prior and where a
flow's answers went; raw outputs a parser could not read; agreement across ``--models``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from backend import views
from backend.analysis import explain
from backend.cli.common import add_json, command, focus_model, print_json, scope_view
from backend.contracts.explain import ExplainReport, ExplainSlice
from backend.present.text import MISSING, count
from backend.scope.resolve import add_scope_args
from backend.scope.selection import Selection
from backend.scope.tags import TAGS
from store.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "explain")
    p.add_argument(
        "--model",
        default=None,
        help="the model whose flow, tag or items are explained (default: the dashboard's focus model when it opens, said on standard error)",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--flow", default=None, help="a flow FROM:TO:KIND, e.g. 8f:32f:harmed")
    what.add_argument(
        "--state", default=None, help="a Sankey node CONFIG:STATE, e.g. 32f:wrong (STATE correct or wrong)"
    )
    what.add_argument(
        "--tag", dest="explain_tag", default=None, choices=TAGS, help="the items with this trajectory tag (of --model)"
    )
    what.add_argument(
        "--items",
        default=None,
        type=Path,
        help="a file of item ids, one per line (or BENCHMARK/ITEM_ID; an item_id column of a CSV)",
    )
    add_scope_args(p, models=False, tag=False)
    p.add_argument(
        "--models",
        default=None,
        help="models the items are matched over; two or more add agreement across models (default: --model)",
    )
    p.add_argument(
        "--min-size",
        type=int,
        default=explain.MIN_SIZE,
        help=f"slices of fewer scope items are marked small and ranked last (default {explain.MIN_SIZE})",
    )
    p.add_argument("--top", type=int, default=25, help="at most N slices and N pairs (default 25)")
    p.add_argument("--no-pairs", action="store_true", help="skip the two-attribute slices (sliceline)")
    p.add_argument(
        "--exclude-unparsed",
        action="store_true",
        help="leave out selected items whose raw output was empty, degenerate or unparsed",
    )
    add_json(p)
    p.set_defaults(func=run)


def read_item_ids(path: Path) -> tuple[str, ...]:
    """Item ids from a file: one per line, or a CSV's ``item_id`` column (with ``benchmark``: BENCHMARK/ITEM_ID)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--items: cannot read {path}: {exc}") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and "item_id" in lines[0].split(","):
        import io

        import pandas as pd

        frame = pd.read_csv(io.StringIO(text), dtype=str)
        ids = frame["item_id"].dropna()
        lines = (frame["benchmark"] + "/" + ids if "benchmark" in frame else ids).dropna().tolist()
    if not lines:
        raise UserError(f"--items: {path} lists no item id")
    return tuple(dict.fromkeys(lines))


def target_of(args: argparse.Namespace) -> explain.Target:
    if args.flow is not None:
        return explain.Target("flow", Selection.flow(args.flow).args)
    if args.state is not None:
        parts = args.state.split(":")
        if len(parts) != 2 or not all(parts):
            raise UserError(f"--state takes CONFIG:STATE, e.g. 32f:wrong (got {args.state!r})")
        return explain.Target("state", tuple(parts))
    if args.explain_tag is not None:
        return explain.Target("tag", (args.explain_tag,))
    return explain.Target("items", read_item_ids(args.items))


def compute(args: argparse.Namespace) -> ExplainReport:
    target = target_of(args)
    model = focus_model(args)
    view = scope_view(args, model)
    if view.matrix.n_items == 0:
        raise UserError(f"no matched item in this scope ({view.matrix.n_excluded} excluded)")
    return views.explain_view(view, model, target, args.min_size, args.top, args.exclude_unparsed, not args.no_pairs)


def _row(s: ExplainSlice) -> str:
    ci = "" if s.diff_ci is None else f" [{100 * s.diff_ci[0]:+.1f}, {100 * s.diff_ci[1]:+.1f}]"
    small = ("  survives" if s.survives else "") + ("  (small)" if s.small else "")
    return (
        f"  {s.label}: {s.n_selected}/{s.n_slice} = {100 * (s.rate or 0):.1f}%, lift {s.lift or 0:.2f}, "
        f"diff {100 * (s.diff or 0):+.1f} pt{ci}, p {s.p:.3g}, q {s.q:.3g}{small}"
    )


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
        return 0
    print(
        f"{out.model}: {out.target.describe}: {out.n_selected} of {count(out.n_scope, 'item')} "
        f"(base rate {100 * (out.base_rate or 0):.1f}%), {out.n_tests} slices tested"
    )
    print(f"{out.verdict.text}.")
    print("slices (one attribute):")
    for s in out.slices:
        print(_row(s))
    if out.pairs:
        print("slices (two attributes):")
        for s in out.pairs:
            print(_row(s))
    par = out.parser
    print(
        f"raw outputs at {', '.join(par.configs)}: {par.empty} empty, {par.degenerate} degenerate, "
        f"{par.unparsed} unparsed ({count(par.affected, 'item')}{', left out' if par.excluded else ''})"
    )
    moved = out.answers.moved
    if moved:
        print("answers moved to: " + ", ".join(f"{k} {v}" for k, v in moved.to.items() if v))
    for row in out.answers.prior:
        p = MISSING if row.p is None else f"{row.p:.3g}"
        print(
            f"  letters at {row.config}: "
            + " ".join(f"{k}:{v}" for k, v in row.chosen.items())
            + f", none:{row.no_answer}; chi-square p vs targets {p}"
        )
    agree = out.agreement
    if agree:
        for pr in agree.pairs:
            print(
                f"  {pr.a} vs {pr.b}: overlap {pr.overlap} (expected {pr.expected:.1f}, p {pr.p:.3g}), "
                f"Jaccard {pr.jaccard or 0:.2f}, kappa {pr.kappa or 0:.2f}"
            )
        print(f"  selected in every model: {agree.n_every}")
    for note in out.untested:
        print(f"not tested: {note}")
    return 0
