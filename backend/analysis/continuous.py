"""Continuous scores (open-ended QA, summaries, dialogue): score trajectories of Token-F1 (docs/metrics.md).

A response's score is written with it (``store.token_f1`` scores a generated answer, at ingest or in
the worker); the matrix then carries the score per (model, item, config) and ``continuous_metrics``
summarises it like the MCQA metrics: mean per config, the oracle gap, and per consecutive transition
the share of items whose score drops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from backend.analysis.mcnemar import mcnemar_exact
from backend.analysis.metrics import best_fixed_index
from backend.analysis.stats import as_interval, bootstrap_means, percentile_interval
from backend.contracts.views import ContinuousBest, ContinuousCI, ContinuousMetrics, ScoreFlows, ScoreTransition
from backend.scope.matrix import Matrix
from store.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

SCORE_KINDS = ("improved", "regressed", "unchanged")  # a score flow between two configurations


def check_tolerance(tolerance: float) -> float:
    """The tolerance of "unchanged" (docs/metrics.md's ``e``): a finite number in [0, 1]."""
    if not 0.0 <= tolerance <= 1.0:  # also refuses NaN
        raise UserError(f"--tolerance must be in [0, 1] (got {tolerance:g})")
    return float(tolerance)


def scored_scores(matrix: Matrix, model: str) -> tuple[np.ndarray, np.ndarray]:
    """``model``'s scores ``[I', C]`` (float64) on the items it has a score for at every configuration, and
    that mask over the matrix's items."""
    s = matrix.score[matrix.model_index(model)].astype(np.float64)  # [I, C]
    scored = np.isfinite(s).all(axis=1)
    return s[scored], scored


def deltas(s: np.ndarray, a: int, b: int) -> np.ndarray:
    """``s(b) - s(a)`` per item, rounded to the matrix's float32 precision (6 decimals), so a tolerance of 0.1
    reads 0.6 -> 0.5 as a change of 0.1, not of 0.10000002."""
    return np.round(s[:, b] - s[:, a], 6)


def score_kinds(delta: np.ndarray, tolerance: float) -> dict[str, np.ndarray]:
    """Per item, which score flow it takes: improved (``delta > e``), regressed (``delta < -e``), else unchanged."""
    improved, regressed = delta > tolerance, delta < -tolerance
    return {"improved": improved, "regressed": regressed, "unchanged": ~(improved | regressed)}


def _pairs(matrix: Matrix, pair: tuple[str, str] | None) -> list[tuple[int, int]]:
    if pair is not None:
        return [(matrix.config_index(pair[0]), matrix.config_index(pair[1]))]
    return [(k, k + 1) for k in range(len(matrix.grid) - 1)]


def _transition(matrix: Matrix, s: np.ndarray, a: int, b: int, tolerance: float) -> ScoreTransition:
    delta = deltas(s, a, b)
    kinds = score_kinds(delta, tolerance)
    n_up, n_down = int(kinds["improved"].sum()), int(kinds["regressed"].sum())
    n = max(len(s), 1)
    return ScoreTransition(
        from_=matrix.grid[a],
        to=matrix.grid[b],
        improved=n_up,
        regressed=n_down,
        unchanged=int(kinds["unchanged"].sum()),
        improvement_rate=n_up / n,
        regression_rate=n_down / n,
        mean_delta=float(delta.mean()) if len(s) else 0.0,
        sign_p=float(mcnemar_exact(n_up, n_down)),
    )


def continuous_metrics(
    matrix: Matrix, model: str, bootstrap: int = 1000, seed: int = 0, tolerance: float = 0.0
) -> ContinuousMetrics | None:
    """Score summaries of one model on the items scored at every config of the grid (docs/metrics.md).

    Items with a missing score somewhere are left out (counted in ``n_unscored``); None when no
    item is scored everywhere. Rates are fractions. Per consecutive transition: items improved,
    regressed (a change beyond ``tolerance``) and unchanged, with the exact sign-test p of improved vs
    regressed. ``ci`` has the shape of the numbers it qualifies: ``mean_score`` per config,
    ``oracle_gap``, ``regression_rate`` and ``improvement_rate`` per transition (``[lo, hi]`` each), from
    one paired bootstrap over the scored items.
    """
    tolerance = check_tolerance(tolerance)
    s, scored = scored_scores(matrix, model)
    if not scored.any():
        return None
    grid = matrix.grid
    pairs = _pairs(matrix, None)
    kinds = [score_kinds(deltas(s, a, b), tolerance) for a, b in pairs]
    down = np.column_stack([k["regressed"] for k in kinds]) if kinds else np.zeros((len(s), 0), dtype=bool)
    up = np.column_stack([k["improved"] for k in kinds]) if kinds else np.zeros((len(s), 0), dtype=bool)
    x = np.concatenate([s, s.max(axis=1, keepdims=True), down, up], axis=1)
    means = x.mean(axis=0)
    n_cfg, n_pairs = len(grid), len(pairs)
    best = best_fixed_index(means[:n_cfg], matrix.lower)
    ci = ContinuousCI()
    if bootstrap:
        boot = bootstrap_means(x, bootstrap, seed).astype(np.float64)
        # Columns: mean score per config, the oracle gap, regression then improvement rate per transition.
        stacked = np.column_stack([boot[:, :n_cfg], boot[:, n_cfg] - boot[:, :n_cfg].max(axis=1), boot[:, n_cfg + 1 :]])
        iv = [as_interval(lo_hi) for lo_hi in percentile_interval(stacked).T]
        ci = ContinuousCI(
            mean_score=dict(zip(grid, iv[:n_cfg], strict=True)),
            oracle_gap=iv[n_cfg],
            regression_rate=iv[n_cfg + 1 : n_cfg + 1 + n_pairs],  # one per transition, in the order of ``transitions``
            improvement_rate=iv[n_cfg + 1 + n_pairs :],
        )
    return ContinuousMetrics(
        n_items=int(scored.sum()),
        n_unscored=int((~scored).sum()),
        tolerance=tolerance,
        mean_score={label: float(means[c]) for c, label in enumerate(grid)},
        best_fixed=ContinuousBest(config=grid[best], mean_score=float(means[best])),
        oracle_mean=float(means[n_cfg]),
        oracle_gap=float(means[n_cfg] - means[:n_cfg].max()),
        transitions=[_transition(matrix, s, a, b, tolerance) for a, b in pairs],
        ci=ci,
    )


def score_flows(matrix: Matrix, model: str, pair: tuple[str, str] | None = None, tolerance: float = 0.0) -> ScoreFlows:
    """Per transition (consecutive, or the one ``pair``): items improved, regressed and unchanged (``score_kinds``),
    on the items ``model`` has a score for at every configuration."""
    tolerance = check_tolerance(tolerance)
    s, scored = scored_scores(matrix, model)
    return ScoreFlows(
        model=model,
        configs=list(matrix.grid) if pair is None else [matrix.grid[i] for i in _pairs(matrix, pair)[0]],
        tolerance=tolerance,
        n_items=int(scored.sum()),
        n_unscored=int((~scored).sum()),
        transitions=[_transition(matrix, s, a, b, tolerance) for a, b in _pairs(matrix, pair)],
    )


def score_flow_items(matrix: Matrix, model: str, a: str, b: str, kind: str, tolerance: float = 0.0) -> pd.DataFrame:
    """The items of one score flow ``a -> b`` (``kind`` in ``SCORE_KINDS``), largest change first, with both scores."""
    if kind not in SCORE_KINDS:
        raise UserError(f"unknown score flow {kind!r}: expected one of {', '.join(SCORE_KINDS)}")
    tolerance = check_tolerance(tolerance)
    s, scored = scored_scores(matrix, model)
    ia, ib = matrix.config_index(a), matrix.config_index(b)
    delta = deltas(s, ia, ib)
    keep = score_kinds(delta, tolerance)[kind]
    rows = np.flatnonzero(scored)[keep]
    out = matrix.items.iloc[rows].reset_index(drop=True)
    out["score_from"] = s[keep, ia].round(6)
    out["score_to"] = s[keep, ib].round(6)
    out["delta"] = delta[keep]
    order = np.argsort(-np.abs(out["delta"].to_numpy()), kind="stable")  # the largest change first, ties by item
    return out.iloc[order].reset_index(drop=True)
