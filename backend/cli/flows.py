"""``trajaudit flows``: the Flows page as JSON: state nodes and aggregated links, trajectory classes, flow items.

``--beyond-noise`` is the pages' "hide within-noise flips" toggle (``backend.analysis.noise``).
"""

from __future__ import annotations

import argparse
from typing import cast

from backend import views
from backend.analysis.continuous import SCORE_KINDS
from backend.analysis.flows import CLASSES
from backend.analysis.metrics import FLOW_KINDS
from backend.cli.common import add_json, command, focus_model, print_json, scope_view
from backend.cli.metrics import add_tolerance
from backend.contracts.views import FlowsReport, ScoreFlowsReport
from backend.present.tables import flow_table, step_table
from backend.present.text import count, p_value, pct, signed_pp
from backend.scope.resolve import add_scope_args
from store.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "flows")
    p.add_argument(
        "--model",
        default=None,
        help="the model whose flows are drawn (default: the dashboard's focus model when it opens, said on standard error)",
    )
    add_scope_args(p, models=False, noise=True)
    p.add_argument("--models", default=None, help="models the items are matched over (default: --model only)")
    p.add_argument("--from", dest="frm", default=None, help="flows between two configs: the first")
    p.add_argument("--to", default=None, help="flows between two configs: the second")
    p.add_argument(
        "--kind",
        default=None,
        choices=FLOW_KINDS + SCORE_KINDS,
        help="show this flow alone and list its items (needs --from/--to; improved/regressed/unchanged with --scores)",
    )
    p.add_argument(
        "--scores",
        action="store_true",
        help="score flows of the scored (open-ended) items: improved, regressed, unchanged per transition",
    )
    add_tolerance(p)
    p.add_argument("--limit", type=int, default=100, help="at most N flow items (default 100)")
    add_json(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> FlowsReport | ScoreFlowsReport:
    if (args.frm is None) != (args.to is None):
        raise UserError("--from and --to go together")
    pair = None if args.frm is None else (args.frm, args.to)
    model = focus_model(args)
    view = scope_view(args, model, pair)
    if args.scores:
        return views.score_flows_view(view, model, pair, args.kind, args.tolerance, args.limit)
    if args.tolerance:
        raise UserError("--tolerance is for score flows: add --scores")
    return views.flows_view(view, model, pair, args.kind, args.limit)


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
        return 0
    if args.scores:
        print_score_flows(cast(ScoreFlowsReport, out))  # compute gives the score flows exactly under --scores
        return 0
    out = cast(FlowsReport, out)  # and the flows otherwise
    print(f"{out.model}: {count(out.n_items, 'item')} ({out.n_excluded} excluded), configs {' -> '.join(out.configs)}")
    for step in step_table(out).to_dict("records"):
        print(
            f"{step['from']} -> {step['to']}: net {signed_pp(step['net'])} pt, churn {pct(step['churn'])}, "
            f"McNemar p {p_value(step['mcnemar_p'])}"
        )
    table = flow_table(out, args.kind)
    print(table.assign(share=table["share"].map(pct)).to_string(index=False))  # of the matched items
    if out.within_noise_hidden:
        print(f"{out.n_hidden} within-noise flips left out")
    print("trajectory classes: " + ", ".join(f"{c} {out.trajectory_classes[c]}" for c in CLASSES))
    for row in out.items or []:
        print(f"  {row.benchmark}/{row.item_id}  {row.task_type or ''}")
    return 0


def print_score_flows(out: ScoreFlowsReport) -> None:
    print(
        f"{out.model}: {out.n_items} scored items ({out.n_unscored} without a score everywhere), "
        f"unchanged = a change of at most {out.tolerance:g}"
    )
    for t in out.transitions:
        print(
            f"  {t.from_} -> {t.to}: improved {t.improved}, regressed {t.regressed}, "
            f"unchanged {t.unchanged} (sign p {p_value(t.sign_p)})"
        )
    for row in out.items or []:
        print(f"  {row.benchmark}/{row.item_id}  {row.score_from:.3f} -> {row.score_to:.3f}")
