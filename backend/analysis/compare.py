"""Model comparison on one matched matrix: headline numbers side by side, confused-item overlap, disagreement.

Matching (docs/metrics.md) makes the models comparable: the same items and the same configurations.
The overlap answers "are the confused items the same items for every model?" (a property of the
items) or "does each model fail its own items?" (a property of the models); the disagreement
ranking lists the items the models split on most, the ones worth opening first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from backend.analysis.stats import code_counts, row_codes
from backend.contracts.views import ConfusionOverlap, Intersection
from backend.scope.matrix import Matrix
from backend.scope.tags import confused
from store.errors import UserError

if TYPE_CHECKING:
    import pandas as pd


def _need_models(matrix: Matrix, what: str) -> None:
    if len(matrix.models) < 2:
        raise UserError(f"{what} needs at least two models (got {', '.join(matrix.models)})")
    if matrix.n_items == 0:
        raise UserError(f"{what}: no matched item ({matrix.n_excluded} excluded)")


def confusion_overlap(matrix: Matrix) -> ConfusionOverlap:
    """Which items each model finds visually confusing, and how much those sets overlap.

    ``jaccard[a][b]`` = |C_a & C_b| / |C_a | C_b| (None when both sets are empty);
    ``intersections`` counts items by their exact set of confused models, largest first.
    """
    _need_models(matrix, "confusion overlap")
    conf = confused(matrix.correct.astype(bool), matrix.lower)  # [M, I]
    per_model = conf.sum(axis=1)
    inter = conf.astype(np.int64) @ conf.T.astype(np.int64)  # [M, M]
    union = per_model[:, None] + per_model[None, :] - inter
    jaccard = np.where(union > 0, inter / np.maximum(union, 1), np.nan)
    uniq, counts = code_counts(row_codes(conf.T), len(matrix.models))
    uniq, counts = uniq[uniq > 0], counts[uniq > 0]  # items confused by at least one model
    order = np.lexsort((uniq, -counts))
    return ConfusionOverlap(
        models=list(matrix.models),
        grid=list(matrix.grid),
        n_items=matrix.n_items,
        confused={m: int(k) for m, k in zip(matrix.models, per_model, strict=True)},
        confused_by_all=int(conf.all(axis=0).sum()),
        confused_by_any=int(conf.any(axis=0).sum()),
        jaccard=[[None if np.isnan(v) else float(v) for v in row] for row in jaccard],
        intersections=[
            Intersection(models=[m for k, m in enumerate(matrix.models) if uniq[j] >> k & 1], n=int(counts[j]))
            for j in order
        ],
    )


def disagreement(matrix: Matrix, top: int | None = 50) -> pd.DataFrame:
    """Items ranked by how much the models disagree on them across the grid.

    At each config the split is ``1 - |2 s - 1|`` for ``s`` the share of models correct (0 when all
    agree, 1 at an even split); ``disagreement`` is its mean over the grid and ``split_configs`` the
    number of configs where the models do not all agree. ``accuracy:<model>`` is the share of the
    grid each model gets right on the item. ``top=None`` keeps every item.
    """
    _need_models(matrix, "disagreement")
    y = matrix.correct.astype(np.float32)  # [M, I, C]
    share = y.mean(axis=0)  # [I, C]
    split = 1.0 - np.abs(2.0 * share - 1.0)
    score = split.mean(axis=1).astype(np.float64)
    # Only items that can reach the top ``top`` are framed and sorted (every item scoring at least the
    # top-th score, ties included): the same head as sorting all of them, without copying 250k rows.
    rows = np.arange(matrix.n_items)
    if top is not None and top < matrix.n_items:
        rows = np.flatnonzero(score >= np.partition(score, matrix.n_items - top)[matrix.n_items - top])
    out = matrix.items[["benchmark", "item_id", "task_type", "question"]].iloc[rows].copy()
    out["disagreement"] = score[rows]
    out["split_configs"] = ((share[rows] > 0) & (share[rows] < 1)).sum(axis=1)
    for m, model in enumerate(matrix.models):
        out[f"accuracy:{model}"] = y[m, rows].mean(axis=1).astype(np.float64)
    out = out.sort_values(["disagreement", "split_configs", "item_id"], ascending=[False, False, True], kind="stable")
    return (out if top is None else out.head(top)).reset_index(drop=True)
