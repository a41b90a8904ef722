"""MCQA metrics on the matched matrix (docs/metrics.md), with paired-bootstrap intervals.

Every metric is a mean over items of a per-item indicator (correct at c, correct somewhere,
confused, text overwrite, flipped between two configs), so all of them, per model, are stacked
into one matrix ``X[I, K]``; its rows are a function of the item's trajectory pattern, so the
bootstrap resamples pattern counts (``backend.analysis.stats.pattern_bootstrap_means``). Derived
numbers (best fixed, headroom, the overwrite share of text-correct items, mean churn) are then
recomputed per resample, so their intervals respect the pairing too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from backend.analysis.mcnemar import mcnemar_exact
from backend.analysis.stats import (
    as_interval,
    pattern_bootstrap_means,
    percentile_interval,
    trajectory_patterns,
    wilson_interval,
)
from backend.contracts.audits import CrossTransition
from backend.contracts.common import Interval, QuietTransition, Transition
from backend.contracts.views import BestFixed, McqaMetrics, MetricsCI, ModelMetrics
from backend.scope.matrix import Matrix
from backend.scope.selection import FLOW_KINDS
from backend.scope.tags import confused, terminal_regression, text_overwrite, top_index
from store.errors import UserError

if TYPE_CHECKING:  # a flow's items are a frame (the matrix's ``items``); the metrics never build one
    import pandas as pd

WILSON_COLUMNS = ("best_fixed", "oracle_accuracy", "visual_confusion_rate", "text_overwrite_rate")


def best_fixed_index(values: np.ndarray, lower: np.ndarray) -> int:
    """The config attaining the maximum; ties go to the cheapest under ``lower``.

    Among the configs attaining the maximum, those with no cheaper tied config are kept (one when
    a cheapest exists); the first of them in grid order wins.
    """
    tied = values == values.max()
    cheaper_tied = (tied[:, None] & lower).any(axis=0)  # [c]: some tied config is cheaper than c
    return int(np.flatnonzero(tied & ~cheaper_tied)[0])


def flow_counts(ya: np.ndarray, yb: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rescued, harmed) counts over the item axis (-1) of boolean arrays; with ``weights`` the last
    axis is patterns, each standing for ``weights`` items."""
    if weights is None:
        return (~ya & yb).sum(axis=-1), (ya & ~yb).sum(axis=-1)
    return (~ya & yb) @ weights, (ya & ~yb) @ weights


def flow_record(frm: str, to: str, rescued: int | np.ndarray, harmed: int | np.ndarray, n: int) -> Transition:
    """One transition's record; ``rescued`` and ``harmed`` are counts (ints or 0-d arrays)."""
    r, h = int(rescued), int(harmed)
    return Transition(
        from_=frm, to=to, rescued=r, harmed=h, net=net(r, h, n), churn=churn(r, h, n), mcnemar_p=mcnemar_exact(r, h)
    )


def transition_numbers(record: Transition) -> dict[str, Any]:
    """The ``Transition`` fields of ``record`` alone, by their Python names (a wider one, such as a quiet
    transition, carries more): the pair's numbers that a wider record built from it (``Story``, a Sankey
    link, a quiet transition: ``cls(**transition_numbers(t), ...)``) repeats."""
    return {name: getattr(record, name) for name in Transition.__struct_fields__}


def _require_items(matrix: Matrix) -> None:
    if matrix.n_items == 0:
        why = "; ".join(f"{k}: {v}" for k, v in matrix.excluded_reasons.items()) or "no items in scope"
        raise UserError(
            f"no item has a response for every (model, config) of {', '.join(matrix.models)} on grid "
            f"{','.join(matrix.grid)} ({matrix.n_excluded} excluded; {why})"
        )


def _pair_indices(matrix: Matrix, pairs: list[tuple[str, str]] | None) -> list[tuple[int, int]]:
    if pairs is None:
        return [(k, k + 1) for k in range(len(matrix.grid) - 1)]
    return [(matrix.config_index(a), matrix.config_index(b)) for a, b in pairs]


def _indicators(y: np.ndarray, matrix: Matrix) -> tuple[np.ndarray, dict[str, slice]]:
    """Per-item indicators ``[M, I, K]`` and where each block sits along K."""
    overwrite = text_overwrite(y, matrix.grid)
    blocks: list[tuple[str, np.ndarray]] = [
        ("accuracy", y),
        ("oracle", np.asarray(y.any(axis=-1, keepdims=True))),  # asarray: the stubs allow a scalar
        ("confused", confused(y, matrix.lower)[..., None]),
        ("flip", y[..., 1:] != y[..., :-1]),
    ]
    if overwrite is not None:
        blocks += [("overwrite", overwrite[..., None]), ("text_correct", y[..., [matrix.grid.index("text")]])]
    where, start = {}, 0
    for name, block in blocks:
        where[name] = slice(start, start + block.shape[-1])
        start += block.shape[-1]
    return np.concatenate([b for _, b in blocks], axis=-1), where


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


# The headline formulas, one function each (``backend.present.metrics`` names each one's formula by these): every
# one reads per-item means ``v[..., K]`` laid out by ``_indicators`` (``where``), for the whole matched set, a
# bootstrap resample (an extra leading axis) or one task type's items alike, so each is written once.


def best_fixed(v: np.ndarray, where: dict[str, slice]) -> np.ndarray:
    """The highest accuracy of one configuration for every item (which one: ``best_fixed_index``)."""
    return v[..., where["accuracy"]].max(axis=-1)


def oracle_accuracy(v: np.ndarray, where: dict[str, slice]) -> np.ndarray:
    """The share of items correct at some configuration (choosing the budget per item)."""
    return v[..., where["oracle"]][..., 0]


def oracle_headroom(v: np.ndarray, where: dict[str, slice]) -> np.ndarray:
    """``oracle_accuracy - best_fixed``: what choosing the budget per item could gain."""
    return oracle_accuracy(v, where) - best_fixed(v, where)


def visual_confusion_rate(v: np.ndarray, where: dict[str, slice]) -> np.ndarray:
    """The share of items correct at a cheaper configuration and wrong at a costlier one (``tags.confused``)."""
    return v[..., where["confused"]][..., 0]


def text_overwrite_rate(v: np.ndarray, where: dict[str, slice]) -> np.ndarray:
    """The share of items correct with text only and wrong at some visual configuration; NaN without ``text``."""
    return v[..., where["overwrite"]][..., 0] if "overwrite" in where else np.full(v.shape[:-1], np.nan)


def text_overwrite_of_text_correct(v: np.ndarray, where: dict[str, slice]) -> np.ndarray:
    """The overwritten items over the items correct with text only; NaN without ``text`` (or none text-correct)."""
    if "overwrite" not in where:
        return np.full(v.shape[:-1], np.nan)
    return _ratio(text_overwrite_rate(v, where), v[..., where["text_correct"]][..., 0])


def mean_churn(v: np.ndarray, where: dict[str, slice]) -> np.ndarray:
    """The mean over consecutive steps of the share of items that flip (``churn``); NaN with one configuration."""
    flips = v[..., where["flip"]]
    return flips.mean(axis=-1) if flips.shape[-1] else np.full(v.shape[:-1], np.nan)


def net(rescued: int, harmed: int, n_items: int) -> float:
    """A step's net change in accuracy: ``(rescued - harmed) / items``."""
    return (rescued - harmed) / n_items


def churn(rescued: int, harmed: int, n_items: int) -> float:
    """A step's churn, the share of items that change state: ``(rescued + harmed) / items``."""
    return (rescued + harmed) / n_items


SUMMARIES = (
    best_fixed,
    oracle_accuracy,
    oracle_headroom,
    visual_confusion_rate,
    text_overwrite_rate,
    text_overwrite_of_text_correct,
    mean_churn,
)


def _summaries(v: np.ndarray, where: dict[str, slice]) -> dict[str, np.ndarray]:
    """Headline statistics from per-item means ``v[..., K]`` (point estimate or one per resample)."""
    return {f.__name__: f(v, where) for f in SUMMARIES}


def _value(x: float) -> float | None:
    """A rate for the JSON contract: None where it is not available (never 0)."""
    return None if np.isnan(x) else float(x)


def _interval(iv: np.ndarray) -> Interval | None:
    """``[lo, hi]`` of one ``[2]`` interval; None where it is not available (NaN)."""
    return None if np.isnan(iv).any() else as_interval(iv)


def _model_ci(m: int, grid: list[str], intervals: dict[str, np.ndarray], acc_intervals: np.ndarray | None) -> MetricsCI:
    """Model ``m``'s intervals shaped like its metrics: ``accuracy`` per config, one per headline
    number; empty without bootstrap. ``best_fixed``'s is the highest configuration's accuracy found anew in each
    resample (docs/metrics.md), so it differs a little from ``accuracy[best config]``'s (64f: [64.7, 75.3]
    against [64.3, 75.0] on the demo)."""
    if acc_intervals is None:
        return MetricsCI()
    accuracy = {label: _interval(acc_intervals[:, m, c]) for c, label in enumerate(grid)}
    # the keys of ``intervals`` are ``_summaries``'s, MetricsCI's headline fields
    return MetricsCI(accuracy=accuracy, **{name: _interval(iv[:, m]) for name, iv in intervals.items()})


def mcqa_metrics(
    matrix: Matrix, bootstrap: int = 1000, seed: int = 0, pairs: list[tuple[str, str]] | None = None
) -> McqaMetrics:
    """The ``metrics --json`` contract: grid, n_items, n_excluded and, per model, every MCQA metric.

    ``pairs`` replaces the default consecutive transitions (``mean_churn`` always uses the
    consecutive ones); ``bootstrap = 0`` skips the intervals (``ci`` is then empty). ``ci`` has the
    shape of the numbers it qualifies: ``ci["accuracy"][config]`` and ``ci[name]`` for each headline
    number, each ``[lo, hi]`` (None where the number is).
    """
    _require_items(matrix)
    n_models, n_items, _ = matrix.correct.shape
    grid = matrix.grid
    top = top_index(grid, matrix.lower)
    pair_idx = _pair_indices(matrix, pairs)
    a_idx = np.array([a for a, _ in pair_idx], dtype=int)
    b_idx = np.array([b for _, b in pair_idx], dtype=int)
    patterns = [trajectory_patterns(matrix.correct[m])[:2] for m in range(n_models)]  # per model: ([P, C], [P])
    indicators = [_indicators(y, matrix) for y, _ in patterns]  # per pattern: [P, K]
    where = indicators[0][1]
    counts = np.stack([w @ ind for (_, w), (ind, _) in zip(patterns, indicators, strict=True)])  # [M, K] exact
    point = _summaries(counts / n_items, where)
    terminal = [w @ terminal_regression(y, matrix.lower, top) for y, w in patterns]
    flows = [flow_counts(y[:, a_idx].T, y[:, b_idx].T, w) for y, w in patterns]  # per model: (rescued, harmed) [pairs]

    intervals: dict[str, np.ndarray] = {}  # headline name -> [2, M]
    acc_intervals = None  # [2, M, C]
    if bootstrap:
        # Each model's resamples are its pattern counts resampled (backend.analysis.stats): every interval
        # reported is one model's, paired across its configurations.
        boot = np.stack(
            [
                pattern_bootstrap_means(ind, w, bootstrap, (seed, m))
                for m, ((_, w), (ind, _)) in enumerate(zip(patterns, indicators, strict=True))
            ],
            axis=1,
        )
        intervals = {name: percentile_interval(s) for name, s in _summaries(boot, where).items()}
        acc_intervals = percentile_interval(boot[..., where["accuracy"]])

    models: dict[str, ModelMetrics] = {}
    for m, model in enumerate(matrix.models):
        acc = counts[m, where["accuracy"]]
        best = best_fixed_index(acc, matrix.lower)
        models[model] = ModelMetrics(
            accuracy={label: float(acc[c] / n_items) for c, label in enumerate(grid)},
            best_fixed=BestFixed(config=grid[best], accuracy=float(acc[best] / n_items)),
            oracle_accuracy=float(point["oracle_accuracy"][m]),
            oracle_headroom=float(point["oracle_headroom"][m]),
            visual_confusion_rate=float(point["visual_confusion_rate"][m]),
            text_overwrite_rate=_value(point["text_overwrite_rate"][m]),
            text_overwrite_of_text_correct=_value(point["text_overwrite_of_text_correct"][m]),
            terminal_regressions=int(terminal[m]),
            mean_churn=_value(point["mean_churn"][m]),
            transitions=[
                QuietTransition(
                    **transition_numbers(flow_record(grid[a], grid[b], flows[m][0][p], flows[m][1][p], n_items))
                )
                for p, (a, b) in enumerate(pair_idx)
            ],
            ci=_model_ci(m, grid, intervals, acc_intervals),
        )
    return McqaMetrics(grid=list(grid), n_items=n_items, n_excluded=matrix.n_excluded, models=models)


def transition_between(matrix: Matrix, source: tuple[str, str], target: tuple[str, str]) -> CrossTransition:
    """Flows from (model_a, config_a) to (model_b, config_b) on the matrix's items.

    The two sides may be different models (cross-model flows) since the items are matched.
    """
    _require_items(matrix)
    (ma, ca), (mb, cb) = source, target
    ia, ib = matrix.config_index(ca), matrix.config_index(cb)
    ya = matrix.correct[matrix.model_index(ma), :, ia].astype(bool)
    yb = matrix.correct[matrix.model_index(mb), :, ib].astype(bool)
    rescued, harmed = flow_counts(ya, yb)
    record = flow_record(matrix.grid[ia], matrix.grid[ib], rescued, harmed, matrix.n_items)
    return CrossTransition(**transition_numbers(record), from_model=ma, to_model=mb)


def transition(matrix: Matrix, model: str, a: str, b: str) -> Transition:
    """Flows of one model from config ``a`` to config ``b`` (any pair, not only consecutive)."""
    return Transition(**transition_numbers(transition_between(matrix, (model, a), (model, b))))


def flow_mask(matrix: Matrix, model: str, a: str, b: str, kind: str) -> np.ndarray:
    """Which items take one flow of ``a -> b`` (boolean over the matrix's items)."""
    if kind not in FLOW_KINDS:
        raise UserError(f"unknown flow {kind!r}: expected one of {', '.join(FLOW_KINDS)}")
    m, ia, ib = matrix.model_index(model), matrix.config_index(a), matrix.config_index(b)
    ya = matrix.correct[m, :, ia].astype(bool)
    yb = matrix.correct[m, :, ib].astype(bool)
    want_a, want_b = {"rescued": (0, 1), "harmed": (1, 0), "stable-correct": (1, 1), "stable-wrong": (0, 0)}[kind]
    return (ya == bool(want_a)) & (yb == bool(want_b))


def flow_items(matrix: Matrix, model: str, a: str, b: str, kind: str) -> pd.DataFrame:
    """The items behind one flow of ``a -> b``, with the confidence on each side."""
    mask = flow_mask(matrix, model, a, b, kind)
    m, ia, ib = matrix.model_index(model), matrix.config_index(a), matrix.config_index(b)
    out = matrix.items.loc[mask].copy()
    out["confidence_from"] = matrix.confidence[m, mask, ia]
    out["confidence_to"] = matrix.confidence[m, mask, ib]
    return out.reset_index(drop=True)


def task_type_breakdown(matrix: Matrix, model: str) -> list[dict[str, Any]]:
    """Per task type, one row (``TaskTypeRow``): n, accuracy per config, best fixed, oracle, headroom, confusion
    and overwrite rates.

    Sorted by n (largest first), then name; ``text_overwrite_rate`` is NaN when ``text`` is not in the grid.
    The proportions of ``WILSON_COLUMNS`` carry ``<col>_lo``/``<col>_hi``: Wilson 95% intervals.
    Items without a task type are grouped under "(none)". Built in NumPy as the rows the report holds (a
    DataFrame here imported pandas on every computing ``metrics``).
    """
    _require_items(matrix)
    patterns, _, inverse = trajectory_patterns(matrix.correct[matrix.model_index(model)])
    ind, where = _indicators(patterns, matrix)
    # Items per (task type, pattern), then each type's means from its pattern counts: no per-item frame.
    types, names = matrix.task_types  # first-seen order
    joint = np.bincount(types * len(patterns) + inverse, minlength=len(names) * len(patterns)).reshape(len(names), -1)
    n = joint.sum(axis=1)
    mean = (joint @ ind.astype(np.int64)) / n[:, None]  # [T, K]: exact counts over n
    accuracy = mean[:, where["accuracy"]]
    columns = {f"accuracy[{label}]": accuracy[:, c] for c, label in enumerate(matrix.grid)}
    for f in (best_fixed, oracle_accuracy, oracle_headroom, visual_confusion_rate, text_overwrite_rate):
        columns[f.__name__] = f(mean, where)
    for col in WILSON_COLUMNS:  # groups are small (13 items): Wilson intervals, valid at small n, not the bootstrap
        columns[f"{col}_lo"], columns[f"{col}_hi"] = wilson_interval(np.rint(columns[col] * n), n)
    order = sorted(range(len(names)), key=lambda t: (-int(n[t]), names[t]))
    return [
        {"task_type": names[t], "n": int(n[t]), **{name: float(values[t]) for name, values in columns.items()}}
        for t in order
    ]
