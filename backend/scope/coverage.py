"""Rows and distinct items per (model, benchmark, configuration, re-run?), updated from a write's new rows.

``info`` and every default grid need the distinct items of each cell of the store. Counting them
again after each write rescans every file holding that cell (seconds at 10M rows for a one-row
write), so the count is kept as one bit per (cell, item) over an item index that only grows: a
write's new rows set bits, their rows add up, and a distinct count is a count of set bits. The state is
versioned like the matrix cache (``coverage-v1-<version>-<random>`` folders, written whole, renamed
into place, never changed); the rows it was computed from are told apart from new ones by
``backend.scope.delta``, and a ``--replace`` (rows gone) counts again from every file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from backend.scope import arrow_numpy, cache_folder, delta, sorted_keys
from backend.scope.scratch import scratch
from store.store import Manifest, Store

ENTRY = "coverage-v1"
KEPT = 2
KEY = ("model", "benchmark", "config", "rerun")


@dataclass
class Coverage:
    """``keys[k]`` (model, benchmark, config, rerun) has ``rows[k]`` rows and item ``j`` of ``index``
    where bit ``j`` of ``bits[k]`` is set (``np.packbits`` order: byte ``j // 8``, most significant bit
    first). Packed, a read after a write neither unpacks 10M bits nor packs them again to save them."""

    keys: list[tuple]
    rows: np.ndarray
    index: pa.Table
    bits: np.ndarray  # uint8 [keys, ceil(items / 8)]; the bits past the last item are 0
    order: np.ndarray  # the index's rows in key order (``sorted_keys``): a write's few items are searched

    def items(self, k: np.ndarray | int) -> int:
        """Distinct items over the keys ``k`` (one key, or a mask of keys: their union)."""
        picked = self.bits[k]
        row = picked if picked.ndim == 1 else np.bitwise_or.reduce(picked, axis=0)
        return int(np.bitwise_count(row).sum())


def counts(store: Store, manifest: Manifest) -> Coverage:
    """The coverage of the responses listed in ``manifest``: the newest entry, brought up to date."""
    cache_folder.settle(ENTRY)  # this process's last entry, if it is still being written
    found = cache_folder.newest_readable(cache_folder.folder(store), ENTRY, manifest.version, _read)
    base, (meta, state) = (found[0], found[1]) if found else (None, ({"parts": {}}, _empty()))
    if found and meta["files"] == manifest.files["responses"]:
        return state
    change = delta.delta(store, manifest, "responses", meta["parts"])
    if change is None:  # rows were dropped: count again from every file
        base, state, change = None, _empty(), delta.delta(store, manifest, "responses", {})
    assert change is not None  # against no known part nothing is missing
    n_items = state.index.num_rows
    if change.ranges:
        state = _add(store, state, change)
    _save(store, manifest, state, change.parts, base if state.index.num_rows == n_items else None)
    return state


def _empty() -> Coverage:
    index = arrow_numpy.empty(pa.schema([("benchmark", pa.string()), ("item_id", pa.string())]))
    none = np.zeros(0, dtype=np.int64)
    return Coverage([], none, index, np.zeros((0, 0), dtype=np.uint8), none)


@dataclass
class _NewCells:
    """A write's new rows as counts: each distinct key with its rows, the distinct items with an id (in key
    order: ``ORDER BY benchmark, item_id``, as the index grows), and each (key, item) pair seen, as numbers
    into those two lists (a row with a null item id counts a row and sets no bit)."""

    keys: list[tuple]
    rows: np.ndarray
    items: pa.Table
    pairs: tuple[np.ndarray, np.ndarray]


def _add(store: Store, state: Coverage, change: delta.Delta) -> Coverage:
    """``state`` with the new rows of ``change`` counted. The index (250k items) is searched or joined only
    for the new rows' distinct items (``_codes``)."""
    new = _few_cells(store, change) if change.few() else _many_cells(store, change)
    seen = _codes(state, new.items)
    codes = arrow_numpy.numbers(seen["code"]).astype(np.int64)
    fresh = codes < 0
    n_old = state.index.num_rows
    codes[fresh] = n_old + np.arange(int(fresh.sum()))  # new items join the index's end
    added = (  # most writes add rows of known items: nothing to filter (a compute kernel)
        seen.select(["benchmark", "item_id"]).filter(arrow_numpy.array(fresh)).cast(state.index.schema)
        if fresh.any()
        else arrow_numpy.empty(state.index.schema)
    )
    index = pa.concat_tables([state.index, added])
    order = _grown_order(state, added, codes[fresh]) if fresh.any() else state.order
    code = {key: k for k, key in enumerate(state.keys)}
    key_code = np.array([code.setdefault(key, len(code)) for key in new.keys], dtype=np.int64)
    keys = list(code)
    rows = np.concatenate([state.rows, np.zeros(len(keys) - len(state.keys), dtype=np.int64)])
    np.add.at(rows, key_code, new.rows)
    k, i = key_code[new.pairs[0]], codes[new.pairs[1]]
    bits = np.zeros((len(keys), -(-index.num_rows // 8)), dtype=np.uint8)
    bits[: state.bits.shape[0], : state.bits.shape[1]] = state.bits
    np.bitwise_or.at(bits, (k, i >> 3), (0x80 >> (i & 7)).astype(np.uint8))
    return Coverage(keys, rows, index, bits, order)


def _few_cells(store: Store, change: delta.Delta) -> _NewCells:
    """``_NewCells`` of a few new rows (``Delta.few``), counted from their Python values: no DuckDB statement, and no
    Arrow compute kernel (importing ``pyarrow.compute`` costs 30 ms, a tenth of a read after a write)."""
    new = change.arrow(store, "responses", ["model", "benchmark", "config", "origin", "item_id"])
    rows = {name: new[name].to_pylist() for name in ("model", "benchmark", "config", "item_id")}
    rows["rerun"] = [origin == "rerun" for origin in new["origin"].to_pylist()]  # a null origin: False
    key_of, key_row = _groups(rows, KEY)
    item_of, item_row = _groups(rows, ("benchmark", "item_id"))
    listed = [(rows["benchmark"][r], rows["item_id"][r]) for r in item_row]
    # in key order (``ORDER BY benchmark, item_id``: nulls last, strings by code point), null ids left out
    by_key = sorted(
        (k for k, (_, item) in enumerate(listed) if item is not None),
        key=lambda k: (listed[k][0] is None, listed[k][0] or "", listed[k][1]),
    )
    item_id = np.full(len(item_row), -1, dtype=np.int64)
    item_id[by_key] = np.arange(len(by_key))
    keys = [tuple(rows[name][r] for name in KEY) for r in key_row]
    with_item = item_id[item_of] >= 0
    items = {
        name: arrow_numpy.strings([listed[k][c] for k in by_key]) for c, name in enumerate(("benchmark", "item_id"))
    }
    return _NewCells(
        keys,
        np.bincount(key_of, minlength=len(keys)).astype(np.int64),
        arrow_numpy.table(items),
        (key_of[with_item], item_id[item_of][with_item]),
    )


def _groups(rows: dict[str, list], columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group over ``columns`` (nulls equal, as ``IS NOT DISTINCT FROM``) and each group's first row;
    groups in the order of each column's values by first appearance, column after column."""
    codes = np.zeros(len(rows[columns[0]]), dtype=np.int64)
    for name in columns:
        seen: dict = {}
        at = np.array([seen.setdefault(value, len(seen)) for value in rows[name]], dtype=np.int64)
        codes = np.unique(codes * len(seen) + at, return_inverse=True)[1].reshape(-1)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return inverse.reshape(-1), first


def _many_cells(store: Store, change: delta.Delta) -> _NewCells:
    """``_few_cells`` for many rows (a large write, a count from every file), grouped in DuckDB as it reads."""
    same = " AND ".join(f"r.{c} IS NOT DISTINCT FROM kx.{c}" for c in KEY)  # a null field is a key of its own
    with scratch() as con:
        change.view(store, con, "responses", "new_rows")
        con.execute(
            "CREATE TEMP TABLE new_cells AS SELECT model, benchmark, config, coalesce(origin, '') = 'rerun' AS rerun, "
            "item_id, count(*)::BIGINT AS n FROM new_rows GROUP BY ALL"
        )
        sums = con.sql("SELECT model, benchmark, config, rerun, sum(n)::BIGINT FROM new_cells GROUP BY ALL").fetchall()
        items = con.sql(
            "SELECT DISTINCT benchmark, item_id FROM new_cells WHERE item_id IS NOT NULL ORDER BY benchmark, item_id"
        ).to_arrow_table()
        con.register("kx", pa.table({c: [s[j] for s in sums] for j, c in enumerate(KEY)} | {"g": range(len(sums))}))
        con.register("ix", items.append_column("j", pa.array(np.arange(items.num_rows))))
        pairs = con.sql(
            f"""SELECT kx.g, ix.j FROM new_cells r JOIN kx ON {same}
                JOIN ix ON ix.item_id = r.item_id AND ix.benchmark IS NOT DISTINCT FROM r.benchmark"""
        ).fetchnumpy()
    return _NewCells(
        [tuple(s[:-1]) for s in sums],
        np.array([s[-1] for s in sums], dtype=np.int64),
        items,
        (np.asarray(pairs["g"], dtype=np.int64), np.asarray(pairs["j"], dtype=np.int64)),
    )


def _codes(state: Coverage, distinct: pa.Table) -> pa.Table:
    """The ``distinct`` items (non-null ids, in key order) with their index code (-1: new to the index):
    searched for a few (``sorted_keys``), else joined."""
    if distinct.num_rows <= sorted_keys.FEW:
        keys = list(zip(distinct["benchmark"].to_pylist(), distinct["item_id"].to_pylist(), strict=True))
        found = sorted_keys.search(state.index, keys, state.order)
        if found is not None:
            return distinct.append_column("code", arrow_numpy.array(np.array([found[k] for k in keys], dtype=np.int64)))
    with scratch() as con:
        con.register("d", distinct.append_column("ord", arrow_numpy.array(np.arange(distinct.num_rows))))
        con.register("ix", state.index.append_column("code", arrow_numpy.array(np.arange(state.index.num_rows))))
        return con.sql(
            "SELECT d.benchmark, d.item_id, coalesce(ix.code, -1) AS code FROM d LEFT JOIN ix ON ix.item_id = d.item_id "
            "AND ix.benchmark IS NOT DISTINCT FROM d.benchmark ORDER BY d.ord"
        ).to_arrow_table()


def _grown_order(state: Coverage, added: pa.Table, codes: np.ndarray) -> np.ndarray:
    """The key order of the index with ``added`` (in key order, absent before) at its end as ``codes``."""
    if added.num_rows <= sorted_keys.FEW and not (sorted_keys.has_nulls(added) or sorted_keys.has_nulls(state.index)):
        keys = list(zip(added["benchmark"].to_pylist(), added["item_id"].to_pylist(), strict=True))
        return np.insert(state.order, sorted_keys.insertion(state.index, keys, state.order), codes)
    return sorted_keys.key_order(pa.concat_tables([state.index, added]))


def _read(folder: Path) -> tuple[dict, Coverage]:
    meta = json.loads((folder / "meta.json").read_text())
    keys = [tuple(k) for k in meta["keys"]]
    bits = np.load(folder / "bits.npy", mmap_mode="r")  # read-only: a patch copies it, most reads only count
    if bits.dtype != np.uint8 or bits.shape != (len(keys), -(-int(meta["n_items"]) // 8)):
        raise ValueError(f"{folder}: bits of shape {bits.shape}, not one packed row per key")
    index = arrow_numpy.read_file(folder / "index.arrow")  # entries are never changed in place
    try:
        order = np.load(folder / "order.npy", mmap_mode="r")
    except FileNotFoundError:  # an entry written before the order was kept
        order = sorted_keys.key_order(index)
    if order.shape != (index.num_rows,):
        raise ValueError(f"{folder}: an order of {order.shape} for {index.num_rows} items")
    return meta, Coverage(keys, np.asarray(meta["rows"], dtype=np.int64), index, bits, order)


def _save(store: Store, manifest: Manifest, state: Coverage, parts: delta.Parts, base: Path | None) -> None:
    """Publish the state at this manifest version (unless the manifest moved on), pruning older ones, off the
    reader's path (``cache_folder.publish_soon``); the item index is hard-linked from ``base`` (an entry with the
    same index: no item was new)."""

    def write(folder: Path) -> tuple[dict, Coverage]:
        folder.mkdir()
        np.save(folder / "bits.npy", state.bits, allow_pickle=False)
        if base is not None and (base / "index.arrow").exists() and (base / "order.npy").exists():
            os.link(base / "index.arrow", folder / "index.arrow")
            os.link(base / "order.npy", folder / "order.npy")
        else:
            arrow_numpy.write_file(state.index, folder / "index.arrow")
            np.save(folder / "order.npy", state.order, allow_pickle=False)
        meta = {
            "keys": state.keys,
            "rows": state.rows.tolist(),
            "n_items": state.index.num_rows,
            "parts": parts,
            "files": manifest.files["responses"],
        }
        (folder / "meta.json").write_text(json.dumps(meta))
        return meta, state  # what ``_read`` returns for it (its keys as tuples): not read back by this process

    state.bits.flags.writeable = False  # handed to the publishing thread
    cache_folder.publish_soon(store, manifest, ENTRY, write, KEPT)
