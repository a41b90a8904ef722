"""The item table of one model on the matched grid: metadata, tags and the trajectory per item.

One builder, :func:`item_rows` (metadata columns and trajectory tags of chosen matrix rows), serves
both shapes of the table:

* :func:`trajectory_table`: every item (or those carrying a tag), what ``trajaudit items`` exports.
  Trajectories are ``{label: 0/1}`` (confidence ``{label: float | None}``), held as Arrow structs
  and built column-wise from the matrix arrays, never item by item. Parsed answers are left out
  (a string per cell); a view of one item loads them with ``load_matrix(include_answers=True)``.
* :func:`item_page`: one sorted page (``SORTS``, :func:`sort_keys`) with its sort keys, what the Items
  page draws and ``trajaudit items --page`` prints; sorting and paging run on the server so a
  browser only ever receives one page of rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from backend.scope import arrow_numpy
from backend.scope.matrix import Matrix
from backend.scope.tags import TAGS, changes, tag_arrow, tag_masks
from store.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

META_COLUMNS = ["benchmark", "item_id", "split", "task_type", "video", "duration", "domain", "question"]
PAGE_COLUMNS = ["benchmark", "item_id", "task_type", "duration", "question"]
SORTS = {  # key: the label the Items page shows, its table's column header (the help text says whose)
    "item": "item id",
    "task_type": "task type",
    "n_correct": "correct",
    "changes": "changes",
    "mean_confidence": "confidence",
    "disagreement": "disagreement",
    "drop": "score drop",
}
MOST_FIRST = {
    "changes",
    "disagreement",
    "drop",
}  # keys a researcher reads from the top: the dashboard sorts them descending


def _per_config(values: np.ndarray, grid: list[str]) -> pa.StructArray:
    """A column of ``{label: value}`` per item row (NaN -> null), as Arrow structs: each cell reads back as a
    dict (``to_pylist``), and building it creates no Python object per cell (dicts built one by one cost about
    10x more at 25k items)."""
    column = arrow_numpy.floats if values.dtype.kind == "f" else arrow_numpy.array
    fields = [column(values[:, k]) for k in range(len(grid))]
    return pa.StructArray.from_arrays(fields, names=list(grid))


def check_tag(tag: str | None) -> None:
    if tag is not None and tag not in TAGS:
        raise UserError(f"unknown tag {tag!r}: expected one of {', '.join(TAGS)}")


def item_rows(
    matrix: Matrix, model: str, rows: np.ndarray, columns: list[str], masks: dict[str, np.ndarray] | None = None
) -> pa.Table:
    """The item table's metadata ``columns`` and ``model``'s trajectory tags for the matrix rows
    ``rows`` (positions, in the order given). ``masks``: the tag masks of every item, when the caller
    has them already."""
    if masks is None:
        masks = tag_masks(matrix.correct[matrix.model_index(model), rows].astype(bool), matrix.grid, matrix.lower)
        tags = tag_arrow(masks)
    else:
        tags = tag_arrow(masks, rows)
    return matrix.item_table.select(columns).take(arrow_numpy.array(rows)).append_column("tags", tags)


def trajectory_table(matrix: Matrix, model: str, tag: str | None = None) -> pa.Table:
    """The item rows of ``model`` in ``matrix`` (optionally only those carrying ``tag``), as Arrow: what
    ``trajaudit items`` prints without pandas, and what the CSV export flattens (:func:`flat_table`)."""
    check_tag(tag)
    m = matrix.model_index(model)
    masks = tag_masks(matrix.correct[m].astype(bool), matrix.grid, matrix.lower)
    keep = masks[tag] if tag is not None else np.ones(matrix.n_items, dtype=bool)
    out = item_rows(matrix, model, np.flatnonzero(keep), META_COLUMNS, masks)
    out = out.append_column("trajectory", _per_config(matrix.correct[m, keep], matrix.grid))
    # The matrix keeps float32; 6 decimals is its precision, without float32 -> float64 noise.
    confidence = _per_config(matrix.confidence[m, keep].astype(np.float64).round(6), matrix.grid)
    return out.append_column("confidence", confidence)


def sort_keys(matrix: Matrix, model: str) -> dict[str, np.ndarray]:
    """Per item (matrix order) the numeric values the item table sorts on, computed for every item at once
    (the id and task type sort on the items' own columns)."""
    m = matrix.model_index(model)
    y = matrix.correct.astype(np.float32)
    conf = matrix.confidence[m].astype(np.float64)
    seen = (~np.isnan(conf)).sum(axis=1)
    mean_conf = np.where(seen > 0, np.nansum(conf, axis=1) / np.maximum(seen, 1), np.nan)
    share = y.mean(axis=0)
    return {
        "n_correct": y[m].sum(axis=1).astype(np.int64),
        "changes": changes(matrix.correct[m].astype(bool)).astype(np.int64),
        "mean_confidence": mean_conf,
        "disagreement": (1.0 - np.abs(2.0 * share - 1.0)).mean(axis=1).astype(np.float64),
        "drop": largest_drop(matrix, model),
    }


def sorted_positions(items: pa.Table, keys: dict[str, np.ndarray], sort: str, descending: bool) -> np.ndarray:
    """Item positions in table order: by ``sort`` (missing values last either way), ties by item id.

    Sorted by Arrow in one pass over the key and the ids as they are stored: no Python strings are made,
    which is what a pandas sort of the ids costs (most of a page turn at 250k items)."""
    order = "descending" if descending else "ascending"
    columns = {"item": items.column("item_id")}
    if sort == "task_type":
        columns["key"] = pc.fill_null(items.column("task_type"), "")
    elif sort != "item":
        columns["key"] = arrow_numpy.floats(keys[sort])  # NaN -> null: placed last
    by = ([("key", order, "at_end")] if "key" in columns else []) + [
        ("item", order if sort == "item" else "ascending", "at_end")
    ]
    return arrow_numpy.numbers(pc.sort_indices(arrow_numpy.table(columns), sort_keys=by)).astype(np.int64)


def item_page(
    matrix: Matrix, model: str, sort: str = "item", descending: bool = False, page: int = 1, page_size: int = 50
) -> tuple[pa.Table, int]:
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
    rows = sorted_positions(matrix.item_table, keys, sort, descending)[(page - 1) * page_size : page * page_size]
    out = item_rows(matrix, model, rows, PAGE_COLUMNS).add_column(0, "position", arrow_numpy.array(rows))
    for name, values in keys.items():
        out = out.append_column(name, arrow_numpy.array(values[rows]))  # NaN kept: the contract nulls it
    conf = matrix.confidence[matrix.model_index(model), rows].astype(np.float64).round(4)
    per_row = arrow_numpy.lists(arrow_numpy.floats(conf.reshape(-1)), np.full(len(rows), conf.shape[1]))
    return out.append_column("confidence", per_row), n_pages


def sorted_ids(matrix: Matrix, model: str, sort: str = "item", descending: bool = False) -> list[str]:
    """Every item's id in the item table's order (``item_page``'s pages end to end, ``trajaudit items --sort S``):
    the order the Inspector walks the filtered items in, so "next" from a row of a sorted Items page is the row
    below it."""
    if sort not in SORTS:
        raise UserError(f"unknown sort {sort!r}: expected one of {', '.join(SORTS)}")
    keys = {} if sort in ("item", "task_type") else sort_keys(matrix, model)
    order = sorted_positions(matrix.item_table, keys, sort, descending)
    return matrix.item_table.column("item_id").take(arrow_numpy.array(order)).to_pylist()


def flat_table(table: pa.Table, grid: list[str]) -> pd.DataFrame:
    """The CSV shape of :func:`trajectory_table`: tags joined by ';', one column per config (0/1), one per
    confidence. A DataFrame, the export's product (``export.csv_text``): pandas is imported here only."""
    import pandas as pd

    flat = table.drop_columns(["tags", "trajectory", "confidence"]).to_pandas()
    flat["tags"] = pc.binary_join(table.column("tags"), ";").to_pandas()
    per_config = {
        prefix + label: pd.Series(values, dtype=pd.ArrowDtype(values.type))
        for prefix, column in (("", table.column("trajectory")), ("confidence:", table.column("confidence")))
        for label, values in zip(grid, column.combine_chunks().flatten(), strict=True)
    }
    return pd.concat([flat, pd.DataFrame(per_config)], axis=1)


def largest_drop(matrix: Matrix, model: str) -> np.ndarray:
    """Per item, the largest fall of ``model``'s score between consecutive configurations (``s(a) - s(b)``,
    positive for a drop, 0 when it never falls); NaN where it lacks a score somewhere (sorted last)."""
    s = matrix.score[matrix.model_index(model)].astype(np.float64)
    if s.shape[1] < 2:
        return np.full(len(s), np.nan)
    fall = np.round(s[:, :-1] - s[:, 1:], 6).max(axis=1)
    return np.where(np.isfinite(s).all(axis=1), np.maximum(fall, 0.0), np.nan)
