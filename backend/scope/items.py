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


NUMERIC_SORTS = ("n_correct", "changes", "mean_confidence", "disagreement", "drop")  # SORTS computed per item


def sort_keys(
    matrix: Matrix, model: str, rows: np.ndarray | None = None, names: tuple[str, ...] = NUMERIC_SORTS
) -> dict[str, np.ndarray]:
    """Per item the numeric values the item table sorts on (``names``), for the items at ``rows`` (default every
    item, in matrix order), computed for all of them at once (the id and task type sort on the items' own
    columns). A sort needs one key over every item; a page shows every key of its own rows only."""
    m = matrix.model_index(model)
    at = slice(None) if rows is None else rows
    correct = matrix.correct[:, at]
    out: dict[str, np.ndarray] = {}
    if "n_correct" in names:
        out["n_correct"] = correct[m].astype(np.int64).sum(axis=1)
    if "changes" in names:
        out["changes"] = changes(correct[m].astype(bool)).astype(np.int64)
    if "mean_confidence" in names:
        conf = matrix.confidence[m, at].astype(np.float64)
        seen = (~np.isnan(conf)).sum(axis=1)
        out["mean_confidence"] = np.where(seen > 0, np.nansum(conf, axis=1) / np.maximum(seen, 1), np.nan)
    if "disagreement" in names:
        share = correct.astype(np.float32).mean(axis=0)
        out["disagreement"] = (1.0 - np.abs(2.0 * share - 1.0)).mean(axis=1).astype(np.float64)
    if "drop" in names:
        out["drop"] = largest_drop(matrix.score[m, at])
    return out


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


def check_sort(sort: str) -> None:
    if sort not in SORTS:
        raise UserError(f"unknown sort {sort!r}: expected one of {', '.join(SORTS)}")


def item_order(matrix: Matrix, model: str, sort: str = "item", descending: bool = False) -> np.ndarray:
    """Every item's position in the item table's order (``item_page``'s pages end to end, ``trajaudit items --sort
    S``): computed once per sort, the Items page turns its pages and the Inspector walks the filtered items in it,
    so "next" from a row of a sorted Items page is the row below it."""
    check_sort(sort)
    keys = sort_keys(matrix, model, names=(sort,)) if sort in NUMERIC_SORTS else {}
    return sorted_positions(matrix.item_table, keys, sort, descending)


def item_page(
    matrix: Matrix,
    model: str,
    sort: str = "item",
    descending: bool = False,
    page: int = 1,
    page_size: int = 50,
    order: np.ndarray | None = None,
) -> tuple[pa.Table, int]:
    """One page of the item table and the number of pages; ``order``: ``item_order``'s for this sort, where the
    caller keeps it.

    Rows keep ``position`` (the item's index in ``matrix``) so the caller can draw trajectories of
    any model for just these rows. Ties sort by item id; NaN confidences sort last.
    """
    check_sort(sort)
    if page_size < 1:
        raise UserError("page size must be at least 1")
    n_pages = max(1, -(-matrix.n_items // page_size))
    page = min(max(1, int(page)), n_pages)
    order = item_order(matrix, model, sort, descending) if order is None else order
    rows = np.asarray(order[(page - 1) * page_size : page * page_size])
    out = item_rows(matrix, model, rows, PAGE_COLUMNS).add_column(0, "position", arrow_numpy.array(rows))
    for name, values in sort_keys(matrix, model, rows).items():
        out = out.append_column(name, arrow_numpy.array(values))  # NaN kept: the contract nulls it
    conf = matrix.confidence[matrix.model_index(model), rows].astype(np.float64).round(4)
    per_row = arrow_numpy.lists(arrow_numpy.floats(conf.reshape(-1)), np.full(len(rows), conf.shape[1]))
    return out.append_column("confidence", per_row), n_pages


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


def largest_drop(score: np.ndarray) -> np.ndarray:
    """Per item (a row of one model's ``score``, items x configurations), the largest fall of its score between
    consecutive configurations (``s(a) - s(b)``, positive for a drop, 0 when it never falls); NaN where it lacks
    a score somewhere (sorted last)."""
    s = score.astype(np.float64)
    if s.shape[1] < 2:
        return np.full(len(s), np.nan)
    fall = np.round(s[:, :-1] - s[:, 1:], 6).max(axis=1)
    return np.where(np.isfinite(s).all(axis=1), np.maximum(fall, 0.0), np.nan)
