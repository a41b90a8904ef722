"""``trajaudit metrics``: the Overview's numbers: every MCQA metric of docs/metrics.md with 95% intervals."""

from __future__ import annotations

import argparse

from backend import views
from backend.cli.common import add_json, command, print_json, scope_view, split_list
from backend.contracts.base import unset
from backend.contracts.views import ContinuousMetrics, OverviewReport
from backend.present.metrics import HEADLINES, METRICS, SCORE_METRICS
from backend.present.text import count, interval, p_value, pp, signed_pp
from backend.present.text import story as story_text
from backend.scope.binary import describe
from backend.scope.resolve import add_scope_args
from store.errors import UserError


def add_tolerance(p: argparse.ArgumentParser) -> None:
    """``--tolerance``: a score change of at most this counts as unchanged (docs/metrics.md's ``e``)."""
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="score flows: a change of at most this (0..1) counts as unchanged (default 0)",
    )


def parse_pairs(value: str | None) -> list[tuple[str, str]] | None:
    """'a:b,c:d' -> [('a', 'b'), ('c', 'd')]."""
    if value is None:
        return None
    pairs = []
    for part in split_list(value) or []:
        sides = part.split(":")
        if len(sides) != 2 or not all(s.strip() for s in sides):
            raise UserError(f"--pairs: {part!r} is not FROM:TO (e.g. 16f:32f)")
        pairs.append((sides[0].strip(), sides[1].strip()))
    if not pairs:
        raise UserError("--pairs is empty")
    return pairs


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "metrics")
    add_scope_args(p, noise=True)
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples for the 95%% intervals (0 = none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pairs", default=None, help="transitions to report, e.g. text:16f,16f:64f (default: consecutive)")
    add_tolerance(p)
    add_json(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> OverviewReport:
    """The JSON contract: ``backend.views.overview`` for the scope the flags name."""
    view = scope_view(args)
    return views.overview(
        view, bootstrap=args.bootstrap, seed=args.seed, pairs=parse_pairs(args.pairs), tolerance=args.tolerance
    )


def render(out: OverviewReport) -> str:
    """A readable report: percentage points with 95% intervals, as the Overview and the report write them
    (``backend.present.text``)."""
    # First, each model's story step: the step its curve is flattest against its churn (docs/metrics.md).
    lines = [f"story {model}: {story_text(step)}" for model, step in out.story.items()]
    scope = out.scope
    lines += [f"grid: {', '.join(out.grid)} ({scope.grid_source})   items: {out.n_items}   excluded: {out.n_excluded}"]
    lines += [
        f"left out of the grid: {label} ({count(n, 'item')}: {scope.grid_excluded_why[label]})"
        for label, n in scope.grid_excluded.items()
    ]
    for model, m in out.models.items():
        ci = m.ci
        lines += ["", f"== {model}", "accuracy (pp):"]
        for label, acc in m.accuracy.items():
            lines.append(f"  {label:>14}  {interval(acc, (ci.accuracy or {}).get(label))}")
        best = m.best_fixed
        lines.append(
            f"{METRICS['best_fixed'].label:<31} {best.config}  {interval(best.accuracy, unset(ci.best_fixed))}"
        )
        for key, label in HEADLINES[1:]:  # after best fixed, in the Overview's order: the rates by name
            lines.append(f"{label:<31} {interval(getattr(m, key), unset(getattr(ci, key)))}")
        lines.append(f"{METRICS['terminal_regressions'].label:<31} {m.terminal_regressions}")
        heads = [METRICS[k].label for k in ("rescued", "harmed", "net", "churn", "mcnemar_p")]
        lines.append(
            f"{'transitions':<18}{heads[0]:>7} {heads[1]:>7} {heads[2] + ' (pp)':>9} {heads[3] + ' (pp)':>10}  {heads[4]}"
        )
        for t in m.transitions:
            lines.append(
                f"  {t.from_ + ' -> ' + t.to:<16}{t.rescued:>7} {t.harmed:>7} {signed_pp(t.net):>9} "
                f"{pp(t.churn):>10}  {p_value(t.mcnemar_p)}"
            )
        if m.continuous:
            lines += score_lines(m.continuous)
    if out.binary:
        lines += ["", describe(out.binary)]
    return "\n".join(lines)


def score_lines(c: ContinuousMetrics) -> list[str]:
    """The score section of one model: mean score per config, best fixed, oracle, gap, per-transition flows."""
    ci = c.ci
    lines = [f"scores (x100, {c.n_items} scored items; unchanged within {c.tolerance:g}):"]
    for label, value in c.mean_score.items():
        lines.append(f"  {label:>14}  {interval(value, (ci.mean_score or {}).get(label))}")
    best = c.best_fixed
    lines.append(f"{SCORE_METRICS['best_fixed'].label:<31} {best.config}  {pp(best.mean_score)}")
    lines.append(f"{SCORE_METRICS['oracle_mean'].label:<31} {pp(c.oracle_mean)}")
    lines.append(f"{SCORE_METRICS['oracle_gap'].label:<31} {interval(c.oracle_gap, unset(ci.oracle_gap))}")
    lines.append("score transitions  Improved Regressed Unchanged  Regression rate (pp)   Sign p")
    rates = unset(ci.regression_rate)
    for k, t in enumerate(c.transitions):
        rate = interval(t.regression_rate, rates[k] if rates else None)
        lines.append(
            f"  {t.from_ + ' -> ' + t.to:<16}{t.improved:>8} {t.regressed:>9} {t.unchanged:>9}"
            f"  {rate:<21} {p_value(t.sign_p)}"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
    else:
        print(render(out))
    return 0
