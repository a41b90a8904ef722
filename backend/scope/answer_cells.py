"""One model's chosen letters and raw-output kinds over a matrix's items and grid, read in one query.

``explain`` asks what a flip was made of: which letter the model chose (the letter prior, where a flow
went) and whether the raw output was something a parser could read at all. The matrix does not carry
``raw_output``, so this reads it, classified in DuckDB (the strings never reach Python), one row per cell
chosen as the matrix chooses (``backend.scope.matrix._winners``: not a re-run first, then run ``main``,
then the earliest written). A scan of one model's 2.5M responses costs about a second, so large results
are kept in the store's cache folder (``backend.scope.cache_folder``) and patched after a write like the
matrix cache (``backend.scope.matrix_cache``): an entry per (model, grid, re-runs, scope) and store
version (``answers-v2-<key>-<version>-<random>``, written whole, renamed into place), holding each
cell's chosen row's tier and time beside its letter and kind, so a write's new rows
(``backend.scope.delta``) take the cells whose row they are preferred to. A ``--replace`` (rows gone),
a matrix whose items changed, or two main rows in one cell count again from every file.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather

from backend.scope import cache_folder, delta
from backend.scope.matrix import ABSENT, CACHE_MIN_CELLS, Matrix, _winners, main_only
from backend.scope.matrix_cache import preferred_new_rows
from backend.scope.scratch import scratch
from store.schema import order_key_sql
from store.store import Store

ENTRY_FORMAT = "v2"
KEPT = 2  # versions per key: the newest, and the one a reader that started before the last write may read
NEVER = np.iinfo(np.int64).max  # the written time of a row without one (sorts last), and of a cell without a row


@dataclass(frozen=True)
class AnswerCells:
    """``letter[I, C]``: the parsed answer as a capital-letter code (0 "A" .. 25 "Z"; -1 no letter); ``kind[I, C]``:
    the raw output's kind, a code into ``backend.analysis.explain.RAW_KINDS`` (0 parsed, 1 empty, 2 degenerate,
    3 unparsed)."""

    letter: np.ndarray
    kind: np.ndarray


# Raw-output kinds in SQL: empty (null or whitespace), degenerate (two or more characters, every one the
# first: "AAAA", "...."), unparsed (text but no letter extracted), else parsed.
_KIND_SQL = """CASE WHEN t IS NULL OR length(t) = 0 THEN 1
                    WHEN length(t) >= 2 AND length(replace(t, left(t, 1), '')) = 0 THEN 2
                    WHEN answer IS NULL THEN 3 ELSE 0 END"""
_LETTER_SQL = "CASE WHEN length(answer) = 1 AND answer BETWEEN 'A' AND 'Z' THEN ascii(answer) - 65 ELSE -1 END"


@dataclass
class _State:
    """``AnswerCells`` with each cell's chosen row's ``tier`` (``ABSENT``: none) and ``written`` time."""

    letter: np.ndarray
    kind: np.ndarray
    tier: np.ndarray
    written: np.ndarray


def _rows(con: duckdb.DuckDBPyConnection, source: str, matrix: Matrix, model: str, include_reruns: bool) -> dict:
    """The rows of ``model`` in ``source`` on the matrix's items and grid: cell, letter, kind, tier, time."""
    keys = pd.DataFrame(
        {
            "benchmark": matrix.items["benchmark"].astype(str),
            "item_id": matrix.items["item_id"].astype(str),
            "i": np.arange(matrix.n_items),
        }
    )
    sql = f"""
        SELECT k.i, (list_position($grid, r.config) - 1)::INTEGER AS c, ({_LETTER_SQL})::TINYINT AS letter,
               ({_KIND_SQL})::TINYINT AS kind,
               (2 * (coalesce(r.origin, '') = 'rerun')::TINYINT + (coalesce(r.run, 'main') <> 'main')::TINYINT)::TINYINT
                   AS tier,
               {order_key_sql("r.")} AS written
        FROM (SELECT benchmark, item_id, config, answer, origin, run, written_at, seq,
                     regexp_replace(raw_output, '^\\s+|\\s+$', '', 'g') AS t
              FROM {source}
              WHERE model = $model AND list_contains($grid, config) {"" if include_reruns else "AND " + main_only()}) r
        JOIN explain_keys k ON k.benchmark = r.benchmark AND k.item_id = r.item_id
    """
    con.register("explain_keys", keys)
    try:
        return con.execute(sql, {"grid": list(matrix.grid), "model": model}).fetchnumpy()
    finally:
        con.unregister("explain_keys")


def _query(store: Store, matrix: Matrix, model: str, include_reruns: bool) -> _State:
    """Every cell's answer, from every file."""
    with store.connect() as con:
        rows = _rows(con, "responses", matrix, model, include_reruns)
    shape = (matrix.n_items, len(matrix.grid))
    state = _State(
        np.full(shape, -1, dtype=np.int8),
        np.ones(shape, dtype=np.int8),  # a cell without a row (none in a matched matrix) reads as empty
        np.full(shape, ABSENT, dtype=np.int8),
        np.full(shape, NEVER, dtype=np.int64),
    )
    cells = {"m": np.zeros(len(rows["i"]), dtype=np.int64), "i": np.asarray(rows["i"]), "c": np.asarray(rows["c"])}
    win = _winners(cells | {"tier": rows["tier"], "written": rows["written"]}, (1, *shape))
    idx = (cells["i"][win], cells["c"][win])
    for name in ("letter", "kind", "tier", "written"):
        getattr(state, name)[idx] = np.asarray(rows[name])[win]
    return state


def _patch(store: Store, state: _State, change: delta.Delta, matrix: Matrix, model: str, reruns: bool) -> _State | None:
    """``state`` (writable copies) with the new rows of ``change`` in the cells whose row they are preferred to
    (lower tier; in one tier, written earlier); None when a new main row meets a main row (rebuild cold)."""
    with scratch() as con:
        change.view(store, con, "responses", "new_rows")
        rows = _rows(con, "new_rows", matrix, model, reruns)
    out = _State(*(np.array(a) for a in (state.letter, state.kind, state.tier, state.written)))
    if not len(rows["i"]):
        return out
    flat = np.ravel_multi_index((np.asarray(rows["i"]), np.asarray(rows["c"])), state.tier.shape)
    tier, written = np.asarray(rows["tier"]), np.asarray(rows["written"])
    best = preferred_new_rows(flat, tier, written, out.tier)
    if best is None:
        return None
    cell = flat[best]
    wins = (tier[best] < out.tier.flat[cell]) | (
        (tier[best] == out.tier.flat[cell]) & (written[best] < out.written.flat[cell])
    )
    for name in ("letter", "kind", "tier", "written"):
        getattr(out, name).flat[cell[wins]] = np.asarray(rows[name])[best[wins]]
    return out


def _same_items(folder: Path, matrix: Matrix) -> bool:
    """Whether the entry in ``folder`` was computed on the matrix's items, in its order (False: unreadable)."""
    try:
        kept = feather.read_table(folder / "items.arrow")
    except (OSError, ValueError):
        return False
    return kept.num_rows == matrix.n_items and all(
        np.array_equal(kept[c].to_numpy(zero_copy_only=False), matrix.items[c].astype(str).to_numpy())
        for c in ("benchmark", "item_id")
    )


def _read(folder: Path) -> tuple[dict, _State]:
    meta = json.loads((folder / "meta.json").read_text())
    return meta, _State(*(np.load(folder / f"{name}.npy") for name in ("letter", "kind", "tier", "written")))


def load_answer_cells(
    store: Store, matrix: Matrix, model: str, include_reruns: bool = False, scope: object | None = None
) -> AnswerCells:
    """The answers and raw-output kinds of ``model`` on every (item, configuration) of ``matrix``.

    ``scope`` (the resolved ``Scope`` the matrix was loaded for) keys the cache entry: with the entry's
    item list checked against the matrix's, it names the matrix. Without it the items themselves are
    hashed, a cost that grows with the items.
    """
    if matrix.n_items * len(matrix.grid) < CACHE_MIN_CELLS:
        small = _query(store, matrix, model, include_reruns)
        return AnswerCells(small.letter, small.kind)
    manifest = store.manifest()
    if scope is None:
        scope = int(pd.util.hash_pandas_object(matrix.items[["benchmark", "item_id"]], index=False).sum())
    key = hashlib.sha256(repr((model, list(matrix.grid), include_reruns, scope)).encode()).hexdigest()[:24]
    prefix = f"answers-{ENTRY_FORMAT}-{key}"
    found = cache_folder.newest_readable(cache_folder.folder(store), prefix, manifest.version, _read)
    state: _State | None = None
    base: Path | None = None
    if found is not None and _same_items(found[0], matrix):
        base, (meta, old) = found
        if meta["files"] == manifest.files["responses"]:
            return AnswerCells(old.letter, old.kind)
        change = delta.delta(store, manifest, "responses", meta["parts"])
        if change is not None:
            state, parts = _patch(store, old, change, matrix, model, include_reruns), change.parts
    if state is None:
        base, state = None, _query(store, matrix, model, include_reruns)
        parts = delta.file_parts(store, manifest, "responses", {})

    def write(folder: Path) -> None:
        folder.mkdir()
        for name in ("letter", "kind", "tier", "written"):
            np.save(folder / f"{name}.npy", getattr(state, name), allow_pickle=False)
        if base is not None:
            os.link(base / "items.arrow", folder / "items.arrow")
        else:
            items = pa.table({c: pa.array(matrix.items[c].astype(str), pa.string()) for c in ("benchmark", "item_id")})
            feather.write_feather(items, folder / "items.arrow", compression="uncompressed")
        (folder / "meta.json").write_text(json.dumps({"parts": parts, "files": manifest.files["responses"]}))

    if cache_folder.publish_version(store, manifest, prefix, write, KEPT):
        cache_folder.prune(cache_folder.folder(store), "answers-*", keep=cache_folder.KEEP * KEPT)
    return AnswerCells(state.letter, state.kind)
