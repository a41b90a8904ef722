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

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.feather as feather

from backend.scope import delta, diskcache, sorted_keys
from backend.scope.scratch import scratch
from store.store import Manifest, Store

ENTRY = "coverage-v1"
KEPT = 2
KEY = ("model", "benchmark", "config", "rerun")
# one key per row as the old per-file counts grouped them; NULL-safe joins keep a null field a key of its own
_SAME = " AND ".join(f"r.{c} IS NOT DISTINCT FROM {{t}}.{c}" for c in KEY)


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
    diskcache.settle(ENTRY)  # this process's last entry, if it is still being written
    found = diskcache.newest_readable(diskcache.folder(store), ENTRY, manifest.version, _read)
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
    index = pa.table({"benchmark": pa.array([], pa.string()), "item_id": pa.array([], pa.string())})
    none = np.zeros(0, dtype=np.int64)
    return Coverage([], none, index, np.zeros((0, 0), dtype=np.uint8), none)


def _add(store: Store, state: Coverage, change: delta.Delta) -> Coverage:
    """``state`` with the new rows of ``change`` counted. The index (250k items) is joined once, by the
    new rows' distinct items; the bits are set from a join of the new rows with those few codes."""
    with scratch() as con:
        change.view(store, con, "responses", "new_rows")
        con.execute(
            "CREATE TEMP TABLE new_cells AS SELECT model, benchmark, config, coalesce(origin, '') = 'rerun' AS rerun, "
            "item_id, count(*)::BIGINT AS n FROM new_rows GROUP BY ALL"
        )
        seen = _codes(con, state)
        fresh = seen["code"].is_null().to_numpy(zero_copy_only=False)
        codes = seen["code"].fill_null(-1).to_numpy().astype(np.int64)
        n_old = state.index.num_rows
        codes[fresh] = n_old + np.arange(int(fresh.sum()))  # new items join the index's end
        added = seen.select(["benchmark", "item_id"]).filter(fresh).cast(state.index.schema)
        index = pa.concat_tables([state.index, added])
        order = state.order
        if fresh.any():
            order = _grown_order(state, added, codes[fresh])
        sums = con.sql("SELECT model, benchmark, config, rerun, sum(n)::BIGINT FROM new_cells GROUP BY ALL").fetchall()
        keys, rows = list(state.keys), np.array(state.rows)
        code = {k: i for i, k in enumerate(keys)}
        for *key, n in sums:
            if tuple(key) not in code:
                code[tuple(key)] = len(keys)
                keys.append(tuple(key))
                rows = np.append(rows, 0)
            rows[code[tuple(key)]] += n
        kx = {c: [k[j] for k in keys] for j, c in enumerate(KEY)}
        con.register("kx", pa.table(kx | {"code": list(range(len(keys)))}))
        con.register("nc", seen.set_column(2, "code", pa.array(codes)))
        pairs = con.sql(
            f"""SELECT kx.code AS k, nc.code AS i FROM new_cells r JOIN kx ON {_SAME.format(t="kx")}
                JOIN nc ON nc.item_id = r.item_id AND nc.benchmark IS NOT DISTINCT FROM r.benchmark"""
        ).fetchnumpy()
    bits = np.zeros((len(keys), -(-index.num_rows // 8)), dtype=np.uint8)
    bits[: state.bits.shape[0], : state.bits.shape[1]] = state.bits
    k, i = (np.asarray(pairs[c], dtype=np.int64) for c in ("k", "i"))
    np.bitwise_or.at(bits, (k, i >> 3), (0x80 >> (i & 7)).astype(np.uint8))
    return Coverage(keys, rows, index, bits, order)


def _codes(con: duckdb.DuckDBPyConnection, state: Coverage) -> pa.Table:
    """The distinct items of ``new_cells`` in key order with their index code (null: new to the index):
    searched for a few (``sorted_keys``), else joined."""
    distinct = con.sql(
        "SELECT DISTINCT benchmark, item_id FROM new_cells WHERE item_id IS NOT NULL ORDER BY benchmark, item_id"
    ).to_arrow_table()
    if distinct.num_rows <= sorted_keys.FEW:
        keys = list(zip(distinct["benchmark"].to_pylist(), distinct["item_id"].to_pylist(), strict=True))
        found = sorted_keys.search(state.index, keys, state.order)
        if found is not None:
            code = pa.array([found[k] if found[k] >= 0 else None for k in keys], pa.int64())
            return distinct.append_column("code", code)
    con.register("d", distinct.append_column("ord", pa.array(np.arange(distinct.num_rows))))
    con.register("ix", state.index.append_column("code", pa.array(np.arange(state.index.num_rows))))
    try:
        return con.sql(
            "SELECT d.benchmark, d.item_id, ix.code FROM d LEFT JOIN ix ON ix.item_id = d.item_id "
            "AND ix.benchmark IS NOT DISTINCT FROM d.benchmark ORDER BY d.ord"
        ).to_arrow_table()
    finally:
        con.unregister("ix")
        con.unregister("d")


def _grown_order(state: Coverage, added: pa.Table, codes: np.ndarray) -> np.ndarray:
    """The key order of the index with ``added`` (in key order, absent before) at its end as ``codes``."""
    if added.num_rows <= sorted_keys.FEW and not (sorted_keys.has_nulls(added) or sorted_keys.has_nulls(state.index)):
        keys = list(zip(added["benchmark"].to_pylist(), added["item_id"].to_pylist(), strict=True))
        return np.insert(state.order, sorted_keys.insertion(state.index, keys, state.order), codes)
    return sorted_keys.key_order(pa.concat_tables([state.index, added]))


def _read(folder: Path) -> tuple[dict, Coverage]:
    meta = json.loads((folder / "meta.json").read_text())
    keys = [tuple(k) for k in meta["keys"]]
    bits = np.load(folder / "bits.npy")
    if bits.dtype != np.uint8 or bits.shape != (len(keys), -(-int(meta["n_items"]) // 8)):
        raise ValueError(f"{folder}: bits of shape {bits.shape}, not one packed row per key")
    index = feather.read_table(folder / "index.arrow", memory_map=True)  # entries are never changed in place
    try:
        order = np.load(folder / "order.npy", mmap_mode="r")
    except FileNotFoundError:  # an entry written before the order was kept
        order = sorted_keys.key_order(index)
    if order.shape != (index.num_rows,):
        raise ValueError(f"{folder}: an order of {order.shape} for {index.num_rows} items")
    return meta, Coverage(keys, np.asarray(meta["rows"], dtype=np.int64), index, bits, order)


def _save(store: Store, manifest: Manifest, state: Coverage, parts: delta.Parts, base: Path | None) -> None:
    """Publish the state at this manifest version (unless the manifest moved on), pruning older ones, off the
    reader's path (``diskcache.publish_soon``); the item index is hard-linked from ``base`` (an entry with the
    same index: no item was new)."""

    def write(folder: Path) -> None:
        folder.mkdir()
        np.save(folder / "bits.npy", state.bits, allow_pickle=False)
        if base is not None and (base / "index.arrow").exists() and (base / "order.npy").exists():
            os.link(base / "index.arrow", folder / "index.arrow")
            os.link(base / "order.npy", folder / "order.npy")
        else:
            feather.write_feather(state.index, folder / "index.arrow", compression="uncompressed")
            np.save(folder / "order.npy", state.order, allow_pickle=False)
        meta = {
            "keys": state.keys,
            "rows": state.rows.tolist(),
            "n_items": state.index.num_rows,
            "parts": parts,
            "files": manifest.files["responses"],
        }
        (folder / "meta.json").write_text(json.dumps(meta))

    state.bits.flags.writeable = False  # handed to the publishing thread
    diskcache.publish_soon(store, manifest, ENTRY, write, KEPT)
