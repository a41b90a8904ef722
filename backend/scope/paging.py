"""Small decisions every view shares: which models a fresh view compares, which configurations they
share, and how the item table sorts and pages on the server so a browser only ever receives one
page of rows. (The default grid and the tag filter belong to ``backend.scope.resolve``.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.analysis.tags import changes, tag_lists, tag_masks
from backend.scope.matrix import Matrix
from store import configs
from store.errors import UserError

SORTS = {
    "item": "item id",
    "task_type": "task type",
    "n_correct": "configs correct (focus model)",
    "changes": "changes of correctness (focus model)",
    "mean_confidence": "mean confidence (focus model)",
    "disagreement": "disagreement between models",
}


def shared_configs(available: dict, models: list[str], benchmark: str | None, reruns: bool = False) -> list[str]:
    """Configurations every model in ``models`` has on ``benchmark`` (all benchmarks when None).

    Main runs only, unless ``reruns``: then configurations only live re-runs reached count too.
    """
    per_model = []
    for m in models:
        kinds = [available["configs"].get(m, {})] + ([available["reruns"].get(m, {})] if reruns else [])
        labels = {c for by_bench in kinds for b, cs in by_bench.items() if benchmark in (None, b) for c in cs}
        per_model.append(labels)
    return configs.order(list(set.intersection(*per_model))) if per_model else []


def default_models(available: dict, benchmark: str, limit: int = 4) -> list[str]:
    """Models a fresh view compares: greedily, those that keep at least two shared configurations.

    Models with more configurations go first; a model that would leave the group fewer than two
    shared configurations is skipped (it stays one click away), so the default view is never empty.
    """
    have = {m: set(b.get(benchmark, [])) for m, b in available["configs"].items() if benchmark in b}
    chosen: list[str] = []
    shared: set[str] = set()
    for model in sorted(have, key=lambda m: (-len(have[m]), m)):
        common = have[model] if not chosen else shared & have[model]
        if len(common) >= 2:
            chosen.append(model)
            shared = common
        if len(chosen) == limit:
            break
    return chosen or sorted(have)[:1]


def sort_keys(matrix: Matrix, model: str) -> pd.DataFrame:
    """Per item (matrix order) the values the item table sorts on, computed for every item at once."""
    m = matrix.model_index(model)
    y = matrix.correct.astype(np.float32)
    conf = matrix.confidence[m].astype(np.float64)
    seen = (~np.isnan(conf)).sum(axis=1)
    mean_conf = np.where(seen > 0, np.nansum(conf, axis=1) / np.maximum(seen, 1), np.nan)
    share = y.mean(axis=0)
    return pd.DataFrame(
        {
            "item": matrix.items["item_id"].to_numpy(),
            "task_type": matrix.items["task_type"].fillna("").to_numpy(),
            "n_correct": y[m].sum(axis=1).astype(np.int64),
            "changes": changes(matrix.correct[m].astype(bool)),
            "mean_confidence": mean_conf,
            "disagreement": (1.0 - np.abs(2.0 * share - 1.0)).mean(axis=1).astype(np.float64),
        }
    )


def item_page(
    matrix: Matrix, model: str, sort: str = "item", descending: bool = False, page: int = 1, page_size: int = 50
) -> tuple[pd.DataFrame, int]:
    """One page of the item table and the number of pages.

    Rows keep ``position`` (the item's index in ``matrix``) so the caller can draw trajectories of
    any model for just these rows. Ties sort by item id; NaN confidences sort last.
    """
    if sort not in SORTS:
        raise UserError(f"unknown sort {sort!r}: expected one of {', '.join(SORTS)}")
    if page_size < 1:
        raise UserError("page size must be at least 1")
    keys = sort_keys(matrix, model)
    n_pages = max(1, -(-matrix.n_items // page_size))
    page = min(max(1, int(page)), n_pages)
    order = keys.sort_values([sort, "item"], ascending=[not descending, True], na_position="last", kind="stable").index
    rows = order.to_numpy()[(page - 1) * page_size : page * page_size]
    m = matrix.model_index(model)
    y = matrix.correct[m, rows].astype(bool)
    out = matrix.items.loc[rows, ["benchmark", "item_id", "task_type", "duration", "question"]].reset_index(drop=True)
    out.insert(0, "position", rows)
    out["tags"] = tag_lists(tag_masks(y, matrix.grid, matrix.lower))
    out = pd.concat(
        [out, keys.loc[rows, ["n_correct", "changes", "mean_confidence", "disagreement"]].reset_index(drop=True)],
        axis=1,
    )
    conf = matrix.confidence[m, rows].astype(np.float64).round(4)
    out["confidence"] = pd.DataFrame(conf).astype(object).where(~np.isnan(conf), None).to_numpy().tolist()
    return out, n_pages
