"""Continuous scores (open-ended QA, summaries, dialogue): score trajectories of Token-F1 (docs/metrics.md).

``store.token_f1`` scores one prediction when a response is written; the matrix then carries the score
per (model, item, config) and ``continuous_metrics`` summarises it like the MCQA metrics: mean per
config, the oracle gap, and per consecutive transition the share of items whose score drops.
"""

from __future__ import annotations

import numpy as np

from backend.analysis.metrics import best_fixed_index
from backend.analysis.stats import bootstrap_means, percentile_interval
from backend.contracts.views import ContinuousMetrics
from backend.scope.matrix import Matrix


def continuous_metrics(matrix: Matrix, model: str, bootstrap: int = 1000, seed: int = 0) -> ContinuousMetrics | None:
    """Score summaries of one model on the items scored at every config of the grid.

    Items with a missing score somewhere are left out (counted in ``n_unscored``); None when no
    item is scored everywhere. Rates are fractions. ``ci`` has the shape of the numbers it qualifies:
    ``mean_score`` per config, ``oracle_gap``, ``regression_rate`` per transition (``[lo, hi]`` each).
    """
    s = matrix.score[matrix.model_index(model)].astype(np.float64)  # [I, C]
    scored = np.isfinite(s).all(axis=1)
    if not scored.any():
        return None
    s = s[scored]
    grid = matrix.grid
    pairs = list(zip(grid[:-1], grid[1:], strict=True))
    drops = s[:, 1:] < s[:, :-1]  # [I, C-1]
    x = np.concatenate([s, s.max(axis=1, keepdims=True), drops], axis=1)
    means = x.mean(axis=0)
    n_cfg = len(grid)
    best = best_fixed_index(means[:n_cfg], matrix.lower)
    out = {
        "n_items": int(scored.sum()),
        "n_unscored": int((~scored).sum()),
        "mean_score": {label: float(means[c]) for c, label in enumerate(grid)},
        "best_fixed": {"config": grid[best], "mean_score": float(means[best])},
        "oracle_mean": float(means[n_cfg]),
        "oracle_gap": float(means[n_cfg] - means[:n_cfg].max()),
        "transitions": [
            {"from": a, "to": b, "regression_rate": float(means[n_cfg + 1 + k])} for k, (a, b) in enumerate(pairs)
        ],
        "ci": {},
    }
    if bootstrap:
        boot = bootstrap_means(x, bootstrap, seed).astype(np.float64)
        # Columns: mean score per config, the oracle gap, regression rate per transition.
        stacked = np.column_stack([boot[:, :n_cfg], boot[:, n_cfg] - boot[:, :n_cfg].max(axis=1), boot[:, n_cfg + 1 :]])
        iv = [[float(lo), float(hi)] for lo, hi in percentile_interval(stacked).T]
        out["ci"] = {
            "mean_score": dict(zip(grid, iv[:n_cfg], strict=True)),
            "oracle_gap": iv[n_cfg],
            "regression_rate": iv[n_cfg + 1 :],  # one per transition, in the order of ``transitions``
        }
    return out
