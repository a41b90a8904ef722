"""Rows of a few (benchmark, item_id) keys in a table of items ordered by them, by binary search.

A patch after a one-row write looks up the item of each new row among 250k: a join in DuckDB scans them
all (5-6 ms a lookup at 10M responses, 2026-12-02, twice per read: the matrix entry and the coverage
counts), where a binary search reads about 18 keys per item (25 µs). The order is the one DuckDB sorts
the pair in (``ORDER BY benchmark, item_id``: by bytes, which for UTF-8 is by code point, as Python
compares strings), either the table's own (a matrix entry's items) or given as ``order`` (row numbers
in key order: the coverage index, which grows at its end).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

FEW = 64  # distinct keys looked up by search; more are joined (the search costs 25 µs a key, a join 5 ms)
FEW_ROWS = 4096  # rows whose keys a caller collects for ``search`` (more: join without collecting them)


class _Keys(Sequence):
    """The table's (benchmark, item_id) pairs in key order, read one at a time (for ``bisect``)."""

    def __init__(self, table: pa.Table, order: np.ndarray | None) -> None:
        self.benchmark, self.item_id, self.order = table["benchmark"], table["item_id"], order
        self.n = table.num_rows

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k):  # ints only: bisect's use
        row = k if self.order is None else int(self.order[k])
        return self.benchmark[row].as_py(), self.item_id[row].as_py()


def search(table: pa.Table, keys: list[tuple[str, str]], order: np.ndarray | None = None) -> dict[tuple, int] | None:
    """Each distinct key's row in ``table`` (-1 where absent); None when the keys are more than ``FEW`` or a
    key or a row of ``table`` is null (nulls sort apart: the caller joins instead)."""
    wanted = set(keys)
    if len(wanted) > FEW or any(b is None or i is None for b, i in wanted) or has_nulls(table):
        return None
    seq = _Keys(table, order)
    out = {}
    for key in wanted:
        at = bisect.bisect_left(seq, key)
        found = at < len(seq) and seq[at] == key
        out[key] = (at if order is None else int(order[at])) if found else -1
    return out


def has_nulls(table: pa.Table) -> bool:
    return bool(table["benchmark"].null_count or table["item_id"].null_count)


def insertion(table: pa.Table, keys: list[tuple[str, str]], order: np.ndarray) -> np.ndarray:
    """Where each of ``keys`` (absent from ``table``, sorted) goes in ``order``: the ``np.insert`` positions."""
    seq = _Keys(table, order)
    return np.array([bisect.bisect_left(seq, key) for key in keys], dtype=np.int64)


def key_order(table: pa.Table) -> np.ndarray:
    """The row numbers of ``table`` in key order (an index that has none recorded yet)."""
    import pyarrow.compute as pc  # 30 ms to import: not paid by a read that only searches

    by_key = pc.sort_indices(table, sort_keys=[("benchmark", "ascending"), ("item_id", "ascending")])
    return by_key.to_numpy().astype(np.int64)
