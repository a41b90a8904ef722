"""Model comparison on one matched matrix: headline numbers side by side, confused-item overlap, disagreement.

Matching (docs/metrics.md) makes the models comparable: the same items and the same configurations.
The overlap answers "are the confused items the same items for every model?" (a property of the
items) or "does each model fail its own items?" (a property of the models); the disagreement
ranking lists the items the models split on most, the ones worth opening first.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from backend.analysis.stats import code_counts, row_codes, trajectory_patterns
from backend.contracts.views import ConfusionOverlap, Intersection
from backend.scope import arrow_numpy
from backend.scope.matrix import Matrix
from backend.scope.scratch import scratch
from backend.scope.tags import confused
from store.errors import UserError


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
    conf = np.stack([_confused_items(matrix.correct[m], matrix.lower) for m in range(len(matrix.models))])  # [M, I]
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


def _confused_items(correct: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """One model's visual-confusion condition per item (``correct[I, C]``), evaluated once per distinct trajectory:
    over every item at once its float product took 0.18 s of the Compare page at 250k items (10M responses)."""
    patterns, _, inverse = trajectory_patterns(correct)
    return confused(patterns, lower)[inverse]


def shared_share(overlap: ConfusionOverlap) -> float | None:
    """Items confused by every model over items confused by any (None when no model confuses any item): 1 when
    the models are confused by the same items, near 0 when each has its own."""
    return overlap.confused_by_all / overlap.confused_by_any if overlap.confused_by_any else None


def disagreement_scores(matrix: Matrix) -> tuple[np.ndarray, np.ndarray]:
    """Per item (matrix order) the mean split over the grid, ``1 - |2 s - 1|`` for ``s`` the share of models
    correct at a config (0 when all agree, 1 at an even split), and the number of configs the models split on."""
    _need_models(matrix, "disagreement")
    share = matrix.correct.astype(np.float32).mean(axis=0)  # [I, C]
    split = 1.0 - np.abs(2.0 * share - 1.0)
    return split.mean(axis=1).astype(np.float64), ((share > 0) & (share < 1)).sum(axis=1).astype(np.int64)


def disagreement(matrix: Matrix, top: int | None = 50) -> pa.Table:
    """Items ranked by how much the models disagree on them across the grid (:func:`disagreement_scores`):
    ``disagreement``, ``split_configs`` and, per model, ``accuracy:<model>``, the share of the grid it gets
    right on the item; ties by more split configs, then item id, then matrix order. ``top=None`` keeps every
    item. Ranked in DuckDB, which reads the items' Arrow columns where they are (an Arrow sort would import
    its compute kernels, 30 ms, for this alone)."""
    score, split_configs = disagreement_scores(matrix)
    # Only items that can reach the top ``top`` are ranked (every item scoring at least the top-th score, ties
    # included): the same head as sorting all of them, without copying 250k rows.
    rows = np.arange(matrix.n_items)
    if top is not None and top < matrix.n_items:
        rows = np.flatnonzero(score >= np.partition(score, matrix.n_items - top)[matrix.n_items - top])
    accuracy = {
        f"accuracy:{model}": arrow_numpy.array(matrix.correct[m, rows].astype(np.float32).mean(axis=1).astype(np.float64))
        for m, model in enumerate(matrix.models)
    }  # fmt: skip
    ranked = arrow_numpy.table(
        {
            "_row": arrow_numpy.array(rows),
            "disagreement": arrow_numpy.array(score[rows]),
            "split_configs": arrow_numpy.array(split_configs[rows]),
        }
        | accuracy
    )
    items = matrix.item_table.select(["benchmark", "item_id", "task_type", "question"])
    items = items.append_column("_row", arrow_numpy.array(np.arange(matrix.n_items)))
    with scratch() as con:
        con.register("ranked", ranked)
        con.register("items", items)
        return con.sql(
            "SELECT i.* EXCLUDE (_row), r.* EXCLUDE (_row) FROM ranked r JOIN items i USING (_row) "
            "ORDER BY r.disagreement DESC, r.split_configs DESC, i.item_id, r._row"
            + ("" if top is None else f" LIMIT {int(top)}")
        ).to_arrow_table()
