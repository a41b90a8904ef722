"""The unfiltered matched matrix of a large store, kept in ``<store>/.cache/`` and patched after each write.

A cold load scans every response (seconds at 10M rows); a write usually adds a few. So an entry keeps a
scope's full state (``backend.scope.matrix.Cells``: every item in scope, complete or not, and each
cell's chosen response with its preference tier) with the parts of the files it was computed from
(``backend.scope.delta``). The next read after a write reads only the new rows and patches:

* a new row takes its cell when it is preferred to the cell's row by the matrix's own rule (lower
  tier; in the same tier, written earlier), so the patched state is the one a cold load builds;
* rows of new items insert them in the cold load's order, a configuration joining the grid adds a
  column (its rows are read from every file, being new to this grid), new item rows refresh fields;
* a ``--replace`` (rows gone), a model set or grid that lost a member, or a store breaking the
  response key (two main rows in one cell) is rebuilt cold; a compaction only moves rows and is read
  as no change at all.

Each version is its own folder (``matrix-v5-<scope>-<version>-<random>``), written under a temporary
name and renamed into place, never changed after: a reader maps one folder whole, and a folder pruned
while a reader maps it stays readable (or the read fails and the reader rebuilds). Re-run overlay rows
are outside a default scope's rows, so an overlay write moves a default entry to the next version with
its arrays hard-linked, unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from backend.scope import arrow_numpy, cache_folder, delta, sorted_keys
from backend.scope import matrix as matrix_module
from backend.scope.matrix import (
    ABSENT,
    CELL_VALUES,
    ITEM_FIELDS,
    Cells,
    Matrix,
    _first_per_cell,
    main_only,
    matched,
    scan,
    task_type_codes,
)
from backend.scope.scratch import scratch
from store.schema import order_key
from store.store import Manifest, Store

ENTRY_FORMAT = "v6"  # in the entry's name: a change of layout never reads an old entry (v6: -1 = no verdict)
ARRAYS = ("tier", "correct", "confidence", "score")
VERSIONS_KEPT = 2  # per scope: the newest, and the one a reader that started before the last write may map
TABLES = ("responses", "items")
KEY = np.dtypes.StringDType()  # item keys: variable-width strings, as long as each key (``_keys``)


def load(store: Store, models: list[str], benchmark: str | None, grid: list[str], reruns: bool) -> Matrix:
    """The unfiltered matched matrix (``load_matrix``'s contract), from the newest entry of the scope,
    patched when the store moved on since, else cold. Written back only when the manifest did not move
    during the load, so an entry always holds what its recorded files hold."""
    return matched(cells(store, models, benchmark, grid, reruns))


def cells(store: Store, models: list[str], benchmark: str | None, grid: list[str], reruns: bool) -> Cells:
    """The scope's full state as of the store's current manifest (see ``load``)."""
    manifest = store.manifest()
    scope = _scope_id(models, benchmark, reruns)
    root = cache_folder.folder(store)
    present = cache_folder.all_files_present(store, manifest)  # else the cold load names the missing file
    base = _newest(root, scope, manifest.version) if present else None
    if base is not None:
        folder, meta, state = base
        if meta["files"] == {t: manifest.files[t] for t in TABLES} and state.grid == grid:
            return state
        patched = _patch(store, manifest, state, meta, folder, grid, benchmark, reruns)
        if patched is not None:
            new, parts, changed = patched
            _save(store, manifest, scope, new, parts, folder, changed)
            return new
    state = scan(store, models, benchmark, grid, None, False, reruns)
    if len(models) * state.items.num_rows * len(grid) >= matrix_module.CACHE_MIN_CELLS:  # read now: tests lower it
        parts = {t: delta.file_parts(store, manifest, t, {}) for t in TABLES}
        _save(store, manifest, scope, state, parts, None, set(ARRAYS) | {"items"})
    return state


def _scope_id(models: list[str], benchmark: str | None, reruns: bool) -> str:
    return hashlib.sha256(json.dumps([models, benchmark, reruns]).encode()).hexdigest()[:16]


def _newest(root: Path, scope: str, version: int) -> tuple[Path, dict, Cells] | None:
    """The newest readable entry of the scope written at ``version`` or before (a later one holds rows
    this reader's manifest does not list), once this process's own entry of it is written."""
    prefix = f"matrix-{ENTRY_FORMAT}-{scope}"
    cache_folder.settle(prefix)
    found = cache_folder.newest_readable(root, prefix, version, _read)
    return None if found is None else (found[0], *found[1])


def _read(folder: Path) -> tuple[dict, Cells]:
    """An entry, memory-mapped (read-only views: a state is never written in place); OSError, ValueError or
    KeyError when it is unreadable or was pruned while being read."""
    meta = json.loads((folder / "meta.json").read_text())
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ARRAYS if name not in meta["all_nan"]}
    later = np.load(folder / "later.npy")
    items = arrow_numpy.read_file(folder / "items.arrow")
    shape = arrays["tier"].shape
    arrays |= {name: np.broadcast_to(np.float32(np.nan), shape) for name in meta["all_nan"]}  # read-only, no memory
    task_types = None
    if "task_types" in meta:  # an entry written before they were kept has none: coded when asked
        codes = np.load(folder / "task_types.npy", mmap_mode="r")
        if codes.shape != (items.num_rows,):
            raise ValueError(f"{folder}: task type codes do not match the items")
        task_types = (np.asarray(codes), list(meta["task_types"]))
    state = Cells(
        meta["models"],
        meta["grid"],
        items,
        later=dict(zip(("m", "i", "c", "written"), later, strict=True)),
        task_types=task_types,
        **{name: np.asarray(arrays[name]) for name in ARRAYS},
    )
    return meta, state


def _save(
    store: Store, manifest: Manifest, scope: str, state: Cells, parts: dict, base: Path | None, changed: set[str]
) -> None:
    """Publish ``state`` as the scope's entry at this manifest version (when the manifest has not moved
    on), hard-linking from ``base`` what did not change, off the reader's path (``cache_folder.publish_soon``);
    then prune older versions."""

    def write(folder: Path) -> tuple[dict, Cells]:
        folder.mkdir()
        base_meta = json.loads((base / "meta.json").read_text()) if base is not None else {}
        kept = base_meta.get("all_nan", [])

        def nan_only(name: str) -> bool:
            """An all-NaN array (score in an MCQA store) is not worth its 4 bytes a cell; an unchanged one is as
            its base says (the base's meta read here: a base pruned meanwhile fails the write, never misleads it)."""
            if base is not None and name not in changed:
                return name in kept
            return bool(state.items.num_rows) and not np.isfinite(getattr(state, name)).any()

        all_nan = [name for name in ("confidence", "score") if nan_only(name)]
        for name in ARRAYS:
            if name in all_nan:
                continue
            if base is not None and name not in changed:
                os.link(base / f"{name}.npy", folder / f"{name}.npy")
            else:
                np.save(folder / f"{name}.npy", getattr(state, name), allow_pickle=False)
        if base is not None and "items" not in changed:
            os.link(base / "items.arrow", folder / "items.arrow")
        else:
            arrow_numpy.write_file(state.items, folder / "items.arrow")
        later = np.stack([state.later[k].astype(np.int64) for k in ("m", "i", "c", "written")])
        np.save(folder / "later.npy", later, allow_pickle=False)
        # The items' task type codes (``Matrix.task_types``, 50-80 ms to code at 250k items): the base's where
        # the items did not change, else coded here, off the reader's path
        task_types = state.task_types
        if base is not None and "items" not in changed and "task_types" in base_meta:
            os.link(base / "task_types.npy", folder / "task_types.npy")
            names = base_meta["task_types"]
            if task_types is None:
                task_types = (np.asarray(np.load(folder / "task_types.npy", mmap_mode="r")), list(names))
        else:
            task_types = task_types or task_type_codes(state.items)
            np.save(folder / "task_types.npy", np.asarray(task_types[0], dtype=np.int64), allow_pickle=False)
            names = task_types[1]
        meta = {
            "models": state.models,
            "grid": state.grid,
            "all_nan": all_nan,
            "parts": parts,
            "files": {t: manifest.files[t] for t in TABLES},
            "task_types": names,
        }
        (folder / "meta.json").write_text(json.dumps(meta))
        # what ``_read`` returns for it: this process's next read does not read it back
        return meta, dataclasses.replace(state, task_types=task_types)

    for name in ARRAYS:  # handed to the publishing thread and to readers: nobody may change them now
        getattr(state, name).flags.writeable = False
    cache_folder.publish_soon(
        store,
        manifest,
        f"matrix-{ENTRY_FORMAT}-{scope}",
        write,
        VERSIONS_KEPT,
        lambda: cache_folder.prune(cache_folder.folder(store), "matrix-*", keep=cache_folder.KEEP * VERSIONS_KEPT),
    )


def _patch(
    store: Store,
    manifest: Manifest,
    state: Cells,
    meta: dict,
    folder: Path,
    grid: list[str],
    benchmark: str | None,
    reruns: bool,
) -> tuple[Cells, dict, set[str]] | None:
    """``state`` (the entry in ``folder``) brought up to ``manifest`` from the new rows only, with the parts to
    record and which arrays changed; None when only a cold load can say (see the module docstring)."""
    if not set(state.grid) <= set(grid):
        return None
    found = {t: delta.delta(store, manifest, t, meta["parts"][t]) for t in TABLES}
    changes = {t: c for t, c in found.items() if c is not None}
    if len(changes) < len(found):
        return None
    parts = {t: c.parts for t, c in changes.items()}
    joined = [g for g in grid if g not in state.grid]
    held = [g for g in grid if g in state.grid]
    touched = {"benchmark": np.array([], dtype=object), "item_id": np.array([], dtype=object)}
    where = (state.models, grid, held, benchmark, reruns)
    if changes["responses"].few() and not changes["items"].ranges:  # the usual write: no DuckDB opened at all
        rows = _few_rows(store, changes["responses"], *where)
    else:
        with scratch() as con:
            changes["responses"].view(store, con, "responses", "new_responses")
            rows = _rows(con, "new_responses", *where)
            if changes["items"].ranges:  # most writes add responses only: no view, no statement (1-2 ms)
                changes["items"].view(store, con, "items", "new_items")
                touched = con.sql("SELECT DISTINCT benchmark, item_id FROM new_items").fetchnumpy()
    if joined:  # a configuration new to the grid: its rows in every file
        with store.connect() as con:
            more = _rows(con, "responses", state.models, grid, joined, benchmark, reruns)
        rows = {k: np.concatenate([np.asarray(rows[k]), np.asarray(more[k])]) for k in rows}
    if not len(rows["m"]) and not len(touched["item_id"]) and not joined:
        return state, parts, set()  # e.g. re-run overlay rows outside this scope
    at = _positions(state.items, rows["benchmark"], rows["item_id"])  # -1: an item new to the scope
    seen = _positions(state.items, touched["benchmark"], touched["item_id"])
    refresh = np.unique(seen[seen >= 0])
    fresh_rows = at < 0
    fresh_keys = _keys(rows["benchmark"][fresh_rows], rows["item_id"][fresh_rows])
    fresh = np.unique(fresh_keys)
    items, old_at, ins = _merge_items(store, state.items, fresh, refresh)
    # an all-NaN array (score in an MCQA store) the new rows leave all NaN stays the entry's broadcast: not
    # materialised (40 MB at 10M cells), not written, not saved
    stay_nan = {name for name in meta["all_nan"] if not np.isfinite(np.asarray(rows[name], dtype=np.float64)).any()}
    grown = _grow(state, folder, old_at, items, grid, stay_nan)
    i = np.where(fresh_rows, 0, old_at[np.maximum(at, 0)])
    if fresh_rows.any():
        k = np.searchsorted(fresh, fresh_keys)
        i[fresh_rows] = ins[k] + k
    coded = {"m": np.asarray(rows["m"], dtype=np.int64), "i": i, "c": np.asarray(rows["c"], dtype=np.int64)}
    took = _apply(
        grown,
        coded | {k: np.asarray(rows[k]) for k in ("tier", "written", "correct", "confidence", "score")},
        stay_nan,
    )
    if took is None:
        return None
    if not len(fresh) and not len(refresh):  # the same items: their task type codes hold
        grown.task_types = state.task_types
    # a write whose rows took no cell (a repeat under another run, a re-run outside the scope) changes no array:
    # the new entry links the old one's files instead of writing 20-60 MB again beside the next read
    changed = set(ARRAYS) - stay_nan if took or joined or len(fresh) else set()
    return grown, parts, changed | ({"items"} if len(fresh) or len(refresh) else set())


def _positions(items: pa.Table, benchmark: np.ndarray, item_id: np.ndarray) -> np.ndarray:
    """Each (benchmark, item_id)'s row in ``items`` (sorted by them), -1 where absent: searched for a few
    keys, else a join in DuckDB (no Python strings)."""
    if not len(item_id):
        return np.zeros(0, dtype=np.int64)
    if len(item_id) <= sorted_keys.FEW_ROWS:  # a few keys: a binary search of the sorted items
        keys = list(zip(np.asarray(_plain(benchmark)).tolist(), np.asarray(_plain(item_id)).tolist(), strict=True))
        searched = sorted_keys.search(items, keys)
        if searched is not None:
            return np.array([searched[k] for k in keys], dtype=np.int64)
    with scratch() as con:
        con.register(
            "old", items.select(["benchmark", "item_id"]).append_column("pos", pa.array(np.arange(items.num_rows)))
        )
        con.register(
            "q",
            pa.table(
                {
                    "benchmark": pa.array(benchmark, pa.string()),
                    "item_id": pa.array(item_id, pa.string()),
                    "ord": np.arange(len(item_id)),
                }
            ),
        )
        found = con.sql(
            "SELECT coalesce(o.pos, -1) AS pos FROM q LEFT JOIN old o ON o.benchmark = q.benchmark "
            "AND o.item_id = q.item_id ORDER BY q.ord"
        ).fetchnumpy()
    return np.asarray(found["pos"], dtype=np.int64)


def _rows(
    con: duckdb.DuckDBPyConnection,
    source: str,
    models: list[str],
    grid: list[str],
    configs: list[str],
    benchmark: str | None,
    reruns: bool,
) -> dict:
    """The scope's rows of ``source`` at ``configs``, coded as a cold load codes them, with their item keys."""
    bench = "" if benchmark is None else "AND r.benchmark = $benchmark"
    sql = f"""SELECT r.benchmark, r.item_id, {CELL_VALUES} FROM {source} r
              WHERE list_contains($models, r.model) AND list_contains($configs, r.config) {bench}
              {"" if reruns else "AND " + main_only("r.")}"""
    params = {"models": models, "grid": grid, "configs": configs} | (
        {} if benchmark is None else {"benchmark": benchmark}
    )
    return con.execute(sql, params).fetchnumpy()


def _few_rows(store: Store, change: delta.Delta, *where: Any) -> dict:
    """``_rows`` of a few new rows (``Delta.few``) from their Python values: the same rows, columns and types as
    ``CELL_VALUES`` codes them, without a DuckDB statement (or opening the process's DuckDB: 15-20 ms). ``where``:
    ``_rows``' models, grid, configs, benchmark and reruns."""
    models, grid, configs, benchmark, reruns = where
    v = change.values(
        store,
        "responses",
        [
            "model",
            "benchmark",
            "item_id",
            "config",
            "correct",
            "confidence",
            "score",
            "origin",
            "run",
            "seq",
            "written_at",
        ],
    )
    keep = [
        k
        for k in range(change.n_rows())
        if v["model"][k] in models
        and v["config"][k] in configs
        and (benchmark is None or v["benchmark"][k] == benchmark)
        and (reruns or v["origin"][k] != "rerun")  # ``main_only``
    ]

    def column(name: str, dtype: Any, value: Callable[[Any], Any] = lambda x: x) -> np.ndarray:
        return np.array([value(v[name][k]) for k in keep], dtype=dtype)

    nan = float("nan")
    return {
        "benchmark": column("benchmark", object),
        "item_id": column("item_id", object),
        "m": column("model", np.int8, models.index),
        "c": column("config", np.int16, grid.index),
        "correct": column("correct", np.int8, lambda x: -1 if x is None else x),
        "confidence": column("confidence", np.float32, lambda x: nan if x is None else x),
        "score": column("score", np.float32, lambda x: nan if x is None else x),
        "tier": np.array(
            [
                2 * (v["origin"][k] == "rerun") + ((v["run"][k] if v["run"][k] is not None else "main") != "main")
                for k in keep
            ],
            dtype=np.int8,
        ),
        "written": np.array([order_key(v["seq"][k], v["written_at"][k]) for k in keep], dtype=np.int64),
    }


def _keys(benchmark: object, item_id: object) -> np.ndarray:
    """One sortable string per (benchmark, item_id), ordered as DuckDB orders the pair (by code point; \\x01
    sorts below any printable character). Variable-width (``KEY``): a fixed-width ``<U`` array gives every
    item the longest key's width, so one 100,000-character id among 262k items asked 9.76 GiB."""
    b, i = (np.asarray(_plain(x), dtype=KEY) for x in (benchmark, item_id))
    return np.strings.add(np.strings.add(b, "\x01"), i)


def _plain(values: object) -> object:
    return values.to_numpy(zero_copy_only=False) if isinstance(values, pa.ChunkedArray) else values


def _merge_items(
    store: Store, items: pa.Table, fresh: np.ndarray, refresh: np.ndarray
) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The scope's items with the ``fresh`` keys inserted in order and the rows ``refresh`` read again; each old
    item's new position, and each fresh key's count of old keys before it."""
    n_old = items.num_rows
    if not len(fresh) and not len(refresh):
        return items, np.arange(n_old), np.zeros(0, dtype=np.int64)
    ins = np.zeros(0, dtype=np.int64)
    old_at = np.arange(n_old)
    if len(fresh):
        ins = np.searchsorted(_keys(items["benchmark"], items["item_id"]), fresh)
        old_at = old_at + np.searchsorted(ins, old_at, side="right")
    split = [part.astype(object) for part in np.strings.partition(fresh, np.asarray("\x01", dtype=KEY))]
    again = items.take(pa.array(refresh, pa.int64()))
    types = {name: items.schema.field(name).type for name in ("benchmark", "item_id")}
    wanted = pa.table(
        {
            "benchmark": pa.concat_arrays(
                [pa.array(split[0], types["benchmark"]), again["benchmark"].combine_chunks()]
            ),
            "item_id": pa.concat_arrays([pa.array(split[2], types["item_id"]), again["item_id"].combine_chunks()]),
            "ord": np.arange(len(fresh) + len(refresh)),
        }
    )
    with store.connect() as con:
        con.register("wanted", wanted)
        try:
            read = con.sql(f"""SELECT r.benchmark, r.item_id, {ITEM_FIELDS} FROM wanted r
                               LEFT JOIN items it ON it.benchmark = r.benchmark AND it.item_id = r.item_id
                               ORDER BY r.ord""").to_arrow_table()
        finally:
            con.unregister("wanted")
    order = np.empty(n_old + len(fresh), dtype=np.int64)
    order[old_at] = np.arange(n_old)
    order[ins + np.arange(len(fresh))] = n_old + np.arange(len(fresh))
    order[old_at[refresh]] = n_old + len(fresh) + np.arange(len(refresh))
    return pa.concat_tables([items, read.cast(items.schema)]).take(order).combine_chunks(), old_at, ins


def _grow(
    state: Cells, folder: Path, old_at: np.ndarray, items: pa.Table, grid: list[str], stay_nan: set[str]
) -> Cells:
    """A writable copy of ``state`` (the entry in ``folder``) on ``items`` and ``grid``, its cells moved to their
    new places; the arrays named in ``stay_nan`` are read-only all-NaN broadcasts of the new shape. Where
    nothing moves, an array is the entry's file mapped copy-on-write: a patch copies the pages it changes,
    not the 60-100 MB of a 10M-cell entry (5 ms a read)."""
    n_items = items.num_rows
    at_c = np.array([grid.index(g) for g in state.grid], dtype=np.int64)
    shape = (len(state.models), n_items, len(grid))
    same = n_items == len(old_at) and list(grid) == list(state.grid)

    def moved(name: str, fill: object, dtype: type) -> np.ndarray:
        a = getattr(state, name)
        if name in stay_nan:
            return np.broadcast_to(np.float32(np.nan), shape)
        if same:  # the entry's own file (``a`` is its content), copy-on-write; a copy where it has none (all NaN)
            try:
                return np.load(folder / f"{name}.npy", mmap_mode="c")
            except OSError:  # or where it was pruned since: ``a`` is still mapped, or held (``cache_folder._HELD``)
                return np.array(a)
        out = np.full(shape, fill, dtype=dtype)
        out[:, old_at[:, None], at_c[None, :]] = a
        return out

    later = state.later | {"i": old_at[state.later["i"]], "c": at_c[state.later["c"]]}
    return Cells(
        state.models,
        list(grid),
        items,
        moved("tier", ABSENT, np.int8),
        moved("correct", 0, np.int8),
        moved("confidence", np.nan, np.float32),
        moved("score", np.nan, np.float32),
        later,
    )


def preferred_new_rows(
    flat: np.ndarray, tier: np.ndarray, written: np.ndarray, old_tier: np.ndarray
) -> np.ndarray | None:
    """Of a write's new rows (at cells ``flat`` of ``old_tier``'s shape), the one the matrix's rule prefers per
    cell (lowest tier, then earliest written); None when a new main row meets another main row, new or
    held (a store breaking the response key: only a cold load resolves it)."""
    main = flat[tier == 0]
    if len(np.unique(main)) < len(main) or (old_tier.flat[main] == 0).any():
        return None
    return _first_per_cell(flat, tier, written, np.arange(len(flat)))


def _apply(state: Cells, rows: dict, stay_nan: set[str]) -> int | None:
    """Let each new row take its cell where the matrix's rule prefers it to the cell's row (in place; the
    ``stay_nan`` arrays are NaN in every new row and stay as they are): how many cells changed hands; None
    when two main rows meet in one cell (a store breaking the response key: rebuild cold)."""
    if not len(rows["m"]):
        return 0
    shape = state.tier.shape
    flat = np.ravel_multi_index((rows["m"], rows["i"], rows["c"]), shape)
    tier, written = np.asarray(rows["tier"]), np.asarray(rows["written"])
    best = preferred_new_rows(flat, tier, written, state.tier)
    if best is None:
        return None
    cell = flat[best]
    old_tier = state.tier.flat[cell]
    later_flat = np.ravel_multi_index((state.later["m"], state.later["i"], state.later["c"]), shape)
    by_cell = np.argsort(later_flat)
    pos = np.minimum(np.searchsorted(later_flat[by_cell], cell), max(len(by_cell) - 1, 0))
    known = (later_flat[by_cell][pos] == cell) if len(by_cell) else np.zeros(len(cell), dtype=bool)
    old_written = np.zeros(len(cell), dtype=np.int64)  # only read where the cell's row has tier above 0
    old_written[known] = state.later["written"][by_cell[pos[known]]]
    wins = (tier[best] < old_tier) | ((tier[best] == old_tier) & (written[best] < old_written))
    won, cell = best[wins], cell[wins]
    state.tier.flat[cell] = tier[won]
    state.correct.flat[cell] = rows["correct"][won]
    for name in {"confidence", "score"} - stay_nan:
        getattr(state, name).flat[cell] = rows[name][won]
    keep = ~np.isin(later_flat, cell)
    up = won[tier[won] > 0]
    m, i, c = np.unravel_index(flat[up], shape)
    state.later = {
        k: np.concatenate([state.later[k][keep], v])
        for k, v in (("m", m), ("i", i), ("c", c), ("written", written[up]))
    }
    return len(won)
