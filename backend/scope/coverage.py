"""Rows and distinct items per (model, benchmark, configuration, re-run?), updated from a write's new rows.

``info`` and every default grid need the distinct items of each cell of the store. Counting them
again after each write rescans every file holding that cell (seconds at 10M rows for a one-row
write), so the count is kept as one bit per (cell, item) over an item index that only grows: a
write's new rows set bits, their rows add up, and a distinct count is a sum of bits. The state is
versioned like the matrix cache (``coverage-v1-<version>-<random>`` folders, written whole, renamed
into place, never changed); the rows it was computed from are told apart from new ones by
``backend.scope.delta``, and a ``--replace`` (rows gone) counts again from every file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.feather as feather

from backend.scope import delta, diskcache
from store.store import Manifest, Store

ENTRY = "coverage-v1"
KEPT = 2
KEY = ("model", "benchmark", "config", "rerun")
# one key per row as the old per-file counts grouped them; NULL-safe joins keep a null field a key of its own
_SAME = " AND ".join(f"r.{c} IS NOT DISTINCT FROM {{t}}.{c}" for c in KEY)


@dataclass
class Coverage:
    """``keys[k]`` (model, benchmark, config, rerun) has ``rows[k]`` rows and item ``j`` of ``index``
    where ``bits[k, j]``."""

    keys: list[tuple]
    rows: np.ndarray
    index: pa.Table
    bits: np.ndarray

    def items(self, k: np.ndarray | int) -> int:
        """Distinct items over the keys ``k`` (one key, or a mask of keys: their union)."""
        picked = self.bits[k]
        return int(picked.sum() if picked.ndim == 1 else np.logical_or.reduce(picked, axis=0).sum())


def counts(store: Store, manifest: Manifest) -> Coverage:
    """The coverage of the responses listed in ``manifest``: the newest entry, brought up to date."""
    root = diskcache.folder(store)
    base = _newest(root, manifest.version)
    state, known = (base[1], base[0]["parts"]) if base else (_empty(), {})
    if base and base[0]["files"] == manifest.files["responses"]:
        return state
    change = delta.delta(store, manifest, "responses", known)
    if change is None:  # rows were dropped: count again from every file
        state, change = _empty(), delta.delta(store, manifest, "responses", {})
    assert change is not None  # against no known part nothing is missing
    if change.ranges:
        state = _add(store, state, change)
    _save(store, manifest, state, change.parts)
    return state


def _empty() -> Coverage:
    index = pa.table({"benchmark": pa.array([], pa.string()), "item_id": pa.array([], pa.string())})
    return Coverage([], np.zeros(0, dtype=np.int64), index, np.zeros((0, 0), dtype=bool))


def _add(store: Store, state: Coverage, change: delta.Delta) -> Coverage:
    """``state`` with the new rows of ``change`` counted."""
    with duckdb.connect(":memory:") as con:
        change.view(store, con, "responses", "new_rows")
        con.execute(
            "CREATE TEMP TABLE new_cells AS SELECT model, benchmark, config, coalesce(origin, '') = 'rerun' AS rerun, "
            "item_id, count(*)::BIGINT AS n FROM new_rows GROUP BY ALL"
        )
        con.register("ix", state.index.append_column("code", pa.array(np.arange(state.index.num_rows))))
        fresh = con.sql(
            "SELECT DISTINCT benchmark, item_id FROM new_cells r WHERE item_id IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM ix WHERE ix.item_id = r.item_id AND ix.benchmark IS NOT DISTINCT FROM r.benchmark) "
            "ORDER BY ALL"
        ).to_arrow_table()
        index = pa.concat_tables([state.index, fresh.cast(state.index.schema)])
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
        con.register("ix2", index.append_column("code", pa.array(np.arange(index.num_rows))))
        pairs = con.sql(
            f"""SELECT kx.code AS k, ix2.code AS i FROM new_cells r JOIN kx ON {_SAME.format(t="kx")}
                JOIN ix2 ON ix2.item_id = r.item_id AND ix2.benchmark IS NOT DISTINCT FROM r.benchmark"""
        ).fetchnumpy()
    bits = np.zeros((len(keys), index.num_rows), dtype=bool)
    bits[: state.bits.shape[0], : state.bits.shape[1]] = state.bits
    bits[np.asarray(pairs["k"], dtype=np.int64), np.asarray(pairs["i"], dtype=np.int64)] = True
    return Coverage(keys, rows, index, bits)


def _newest(root: Path, version: int) -> tuple[dict, Coverage] | None:
    for at, folder in diskcache.versions(root, ENTRY):
        if at > version:
            continue
        try:
            meta = json.loads((folder / "meta.json").read_text())
            n_items = int(meta["n_items"])
            bits = np.unpackbits(np.load(folder / "bits.npy"), axis=1, count=n_items).astype(bool)
            index = feather.read_table(folder / "index.arrow")
        except (OSError, ValueError, KeyError):
            continue
        keys = [tuple(k) for k in meta["keys"]]
        return meta, Coverage(keys, np.asarray(meta["rows"], dtype=np.int64), index, bits.reshape(len(keys), n_items))
    return None


def _save(store: Store, manifest: Manifest, state: Coverage, parts: delta.Parts) -> None:
    """Publish the state at this manifest version (unless the manifest moved on), pruning older ones."""
    if store.manifest().version != manifest.version:
        return

    def write(folder: Path) -> None:
        folder.mkdir()
        np.save(folder / "bits.npy", np.packbits(state.bits, axis=1), allow_pickle=False)
        feather.write_feather(state.index, folder / "index.arrow", compression="uncompressed")
        meta = {
            "keys": state.keys,
            "rows": state.rows.tolist(),
            "n_items": state.index.num_rows,
            "parts": parts,
            "files": manifest.files["responses"],
        }
        (folder / "meta.json").write_text(json.dumps(meta))

    root = diskcache.folder(store)
    if diskcache.write_atomic(root / diskcache.versioned(ENTRY, manifest.version), write):
        for _, old in diskcache.versions(root, ENTRY)[KEPT:]:
            diskcache.remove(old)
