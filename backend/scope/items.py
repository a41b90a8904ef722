"""The item table of one model on the matched grid: metadata, tags and the trajectory per item.

This is what the items page pages through and what ``trajaudit items`` exports. Trajectories are
``{label: 0/1}`` (confidence ``{label: float | None}``), held as Arrow structs and built column-wise
from the matrix arrays, never item by item. Parsed answers are left out (a string per cell); a view
of one item loads them with ``load_matrix(include_answers=True)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from backend.analysis.tags import TAGS, tag_lists, tag_masks
from backend.scope.matrix import Matrix
from store.errors import UserError

META_COLUMNS = ["benchmark", "item_id", "split", "task_type", "video", "duration", "domain", "question"]


def _per_config(values: np.ndarray, grid: list[str]) -> pd.Series:
    """A column of ``{label: value}`` per item row (NaN -> None), as Arrow structs.

    Each cell reads back as a dict (``.iloc``, ``.tolist()``), ``.struct.explode()`` gives one column
    per config, and building it creates no Python object per cell (dicts built one by one cost
    about 10x more at 25k items).
    """
    fields = [pa.array(values[:, k], from_pandas=True) for k in range(len(grid))]
    column = pa.StructArray.from_arrays(fields, names=list(grid))
    return pd.Series(column, dtype=pd.ArrowDtype(column.type))


def check_tag(tag: str | None) -> None:
    if tag is not None and tag not in TAGS:
        raise UserError(f"unknown tag {tag!r}: expected one of {', '.join(TAGS)}")


def trajectory_table(matrix: Matrix, model: str, tag: str | None = None) -> pd.DataFrame:
    """The item rows of ``model`` in ``matrix`` (optionally only those carrying ``tag``).

    ``attrs`` keeps the grid and the number of excluded items, for captions and exports.
    """
    check_tag(tag)
    m = matrix.model_index(model)
    y = matrix.correct[m].astype(bool)
    masks = tag_masks(y, matrix.grid, matrix.lower)
    keep = masks[tag] if tag is not None else np.ones(matrix.n_items, dtype=bool)
    out = matrix.items.loc[keep, META_COLUMNS].reset_index(drop=True)
    out["tags"] = tag_lists(masks)[keep]
    out["trajectory"] = _per_config(matrix.correct[m, keep], matrix.grid)
    # The matrix keeps float32; 6 decimals is its precision, without float32 -> float64 noise.
    out["confidence"] = _per_config(matrix.confidence[m, keep].astype(np.float64).round(6), matrix.grid)
    out.attrs.update(grid=list(matrix.grid), n_excluded=matrix.n_excluded, model=model)
    return out


def flat_table(table: pd.DataFrame, grid: list[str]) -> pd.DataFrame:
    """The CSV shape: tags joined by ';', one column per config (0/1), one per confidence."""
    flat = table.drop(columns=["trajectory", "confidence"])
    flat["tags"] = table["tags"].map(";".join)
    correct = table["trajectory"].struct.explode()[grid]
    conf = table["confidence"].struct.explode()[grid].add_prefix("confidence:")
    return pd.concat([flat, correct, conf], axis=1)
