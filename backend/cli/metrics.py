"""``trajaudit metrics``: every MCQA metric of METRICS.md on the matched grid, with 95% intervals.

Also owns the item-filter options shared with ``trajaudit items``, so both commands select items
exactly as the dashboard's sidebar does.
"""

from __future__ import annotations

import argparse

import numpy as np

from backend.cli.common import add_json, add_store, print_json, split_list
from backend.continuous import continuous_metrics
from backend.errors import UserError
from backend.filters import ItemFilter
from backend.matrix import load_matrix
from backend.metrics import mcqa_metrics
from store.store import Store


def add_scope(p: argparse.ArgumentParser) -> None:
    """--benchmark, --grid and the item filters (the sidebar's choices)."""
    p.add_argument("--benchmark", default=None, help="one benchmark (default: all)")
    p.add_argument("--grid", default=None, help="configs in order, e.g. text,16f,32f,64f (default: all shared ones)")
    add_item_filters(p)


def add_item_filters(p: argparse.ArgumentParser) -> None:
    """The sidebar's item filters (read back with ``item_filter_from``)."""
    p.add_argument("--task-type", default=None, help="only these task types (comma-separated)")
    p.add_argument("--duration", default=None, help="only these duration categories (comma-separated)")
    p.add_argument("--domain", default=None, help="only these domains (comma-separated)")
    p.add_argument("--search", default=None, help="case-insensitive substring of question, options or item id")
    p.add_argument("--annotation-tag", default=None, help="only items carrying one of these annotation tags")


def item_filter_from(args: argparse.Namespace) -> ItemFilter:
    return ItemFilter(
        task_types=tuple(split_list(args.task_type) or ()),
        durations=tuple(split_list(args.duration) or ()),
        domains=tuple(split_list(args.domain) or ()),
        search=args.search,
        tags=tuple(split_list(args.annotation_tag) or ()),
    )


def filter_args(item_filter: ItemFilter) -> list[str]:
    """The command-line options that select ``item_filter``'s items (pages print them for reproduction)."""
    flags = [("--task-type", item_filter.task_types), ("--duration", item_filter.durations),
             ("--domain", item_filter.domains), ("--annotation-tag", item_filter.tags)]  # fmt: skip
    out = [arg for flag, values in flags if values for arg in (flag, ",".join(values))]
    return out + (["--search", item_filter.search] if item_filter.search else [])


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
    p = sub.add_parser("metrics", help="accuracy, oracle, confusion, overwrite, transitions (with 95%% CIs)")
    add_store(p)
    p.add_argument("--models", required=True, help="models, comma-separated")
    add_scope(p)
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples for the 95%% intervals (0 = none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pairs", default=None, help="transitions to report, e.g. text:16f,16f:64f (default: consecutive)")
    add_json(p)
    p.set_defaults(func=run)


def compute(args: argparse.Namespace) -> dict:
    """The JSON contract: ``mcqa_metrics`` plus the exclusion reasons and, when scored, continuous metrics."""
    if args.bootstrap < 0:
        raise UserError("--bootstrap must be >= 0")
    models = split_list(args.models)
    if not models:
        raise UserError("--models is empty")
    matrix = load_matrix(
        Store(args.store),
        models,
        benchmark=args.benchmark,
        grid=split_list(args.grid),
        item_filter=item_filter_from(args),
    )
    out = mcqa_metrics(matrix, bootstrap=args.bootstrap, seed=args.seed, pairs=parse_pairs(args.pairs))
    out["excluded_reasons"] = matrix.excluded_reasons
    if np.isfinite(matrix.score).any():
        for model in matrix.models:
            cont = continuous_metrics(matrix, model, bootstrap=args.bootstrap, seed=args.seed)
            if cont is not None:
                out["models"][model]["continuous"] = cont
    return out


def _pp(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _with_ci(x: float | None, ci: list | None) -> str:
    return _pp(x) + ("" if ci is None else f" [{_pp(ci[0])}, {_pp(ci[1])}]")


def render(out: dict) -> str:
    """A readable report: percentage points with 95% intervals."""
    lines = [f"grid: {', '.join(out['grid'])}   items: {out['n_items']}   excluded: {out['n_excluded']}"]
    for model, m in out["models"].items():
        ci = m["ci"]
        lines += ["", f"== {model}", "accuracy (pp):"]
        for label, acc in m["accuracy"].items():
            lines.append(f"  {label:>14}  {_with_ci(acc, ci.get(f'accuracy[{label}]'))}")
        best = m["best_fixed"]
        lines.append(f"{'best fixed':<31} {best['config']}  {_with_ci(best['accuracy'], ci.get('best_fixed'))}")
        for key in ("oracle_accuracy", "oracle_headroom", "visual_confusion_rate", "text_overwrite_rate",
                    "text_overwrite_of_text_correct", "mean_churn"):  # fmt: skip
            lines.append(f"{key.replace('_', ' '):<31} {_with_ci(m[key], ci.get(key))}")
        lines.append(f"{'terminal regressions':<31} {m['terminal_regressions']}")
        lines.append("transitions       rescued  harmed   net(pp)  churn(pp)  mcnemar p")
        for t in m["transitions"]:
            lines.append(
                f"  {t['from'] + ' -> ' + t['to']:<16}{t['rescued']:>7} {t['harmed']:>7} {_pp(t['net']):>9} "
                f"{_pp(t['churn']):>10}  {t['mcnemar_p']:.3g}"
            )
        if "continuous" in m:
            c = m["continuous"]
            scores = ", ".join(f"{k} {_pp(v)}" for k, v in c["mean_score"].items())
            lines.append(f"continuous score (pp, {c['n_items']} items): {scores}; oracle gap {_pp(c['oracle_gap'])}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print_json(out)
    else:
        print(render(out))
    return 0
