"""The store's ``videos`` table: read one benchmark's links, replace one benchmark's links.

A re-link of a benchmark replaces all of its rows in one write (the files holding them are rewritten
without them and retired, as ``ingest --replace`` does for responses), so the table never holds two
links for one item and a reader sees the old catalog or the new one, never a mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

from store.rows import Record, records
from store.schema import VIDEOS
from store.store import Store

if TYPE_CHECKING:  # pandas is imported where a table is built: one item's row (``entry``) is read without it
    import duckdb
    import pandas as pd

COLUMNS = VIDEOS.names
STATUSES = ("linked", "missing", "unreadable")
T = TypeVar("T")


def _frame(table: pa.Table) -> pd.DataFrame:
    import pandas as pd

    # Integer columns stay integers where a missing or unreadable file has no probe (pandas' nullable ints).
    nullable = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}
    return table.cast(VIDEOS).to_pandas(types_mapper=nullable.get)


def empty() -> pd.DataFrame:
    """The catalog's columns with no rows (typed as the table stores them)."""
    return _frame(VIDEOS.empty_table())


def lookup(store: Store, benchmark: str, item_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """The catalog rows of ``benchmark`` (only ``item_ids`` when given), one per item, in item order.

    An empty frame with the catalog's columns when nothing is linked: callers fall back to
    ``items.video`` without testing for a missing table.
    """
    got = _read(store, benchmark, item_ids, lambda rows: rows.to_arrow_table())
    return empty() if got is None else _frame(got)


def entry(store: Store, benchmark: str, item_id: str) -> Record | None:
    """One item's catalog row as a record (column -> value, None where missing); None when the catalog does
    not list the item. ``lookup`` for one item without building a DataFrame (``trajaudit inspect``)."""
    return _read(store, benchmark, [item_id], _first)


def _first(rows: duckdb.DuckDBPyRelation) -> Record | None:
    got = records(rows)  # one row at most: the catalog holds one link per item
    return got[0] if got else None


def _read(
    store: Store, benchmark: str, item_ids: Sequence[str] | None, read: Callable[[duckdb.DuckDBPyRelation], T]
) -> T | None:
    """``read`` of the catalog rows of ``benchmark`` (only ``item_ids`` when given), in item order; None without a
    query when the store links no video or no item is asked for."""
    # Nothing linked in this store: no query (the Inspector asks twice an item, 12 ms each at 10M responses).
    if not store.manifest().files["videos"]:
        return None
    where, params = "benchmark = ?", list[object]([benchmark])
    if item_ids is not None:
        ids = [str(i) for i in item_ids]
        if not ids:
            return None
        where += " AND item_id IN (SELECT unnest(?))"
        params.append(ids)
    with store.connect() as con:
        return read(con.sql(f"SELECT * FROM videos WHERE {where} ORDER BY item_id", params=params))


def length(store: Store, benchmark: str, item_id: str) -> tuple[int, float] | None:
    """(frames, fps) of the item's linked video as the catalog probed it (fps 0.0 where the probe found none);
    None where the catalog links no readable video for the item."""
    row = entry(store, benchmark, item_id)
    if row is None or row["status"] != "linked" or row["n_frames"] is None:
        return None
    fps = row["fps"]
    return int(row["n_frames"]), 0.0 if fps is None or fps != fps else float(fps)  # NaN is unequal to itself


def replace(store: Store, benchmark: str, rows: pd.DataFrame) -> int:
    """Publish ``rows`` as ``benchmark``'s whole catalog in one write; returns the new store version.

    Every stored file holding a row of ``benchmark`` is rewritten without those rows and retired in
    the same write, so an interrupted link leaves the previous catalog intact.
    """
    with store.writer() as w:
        files = list(w.manifest.files["videos"])
        if files:
            with w.connect() as con:
                paths = [str(store.root / f) for f in files]
                hit = con.execute(
                    "SELECT DISTINCT filename FROM read_parquet(?, filename = true) WHERE benchmark = ?",
                    [paths, benchmark],
                ).fetchall()
                for (path,) in hit:
                    rel = files[paths.index(path)]
                    kept = con.sql("SELECT * FROM read_parquet(?) WHERE benchmark <> ?", params=[path, benchmark])
                    w.retire("videos", [rel])
                    w.add("videos", kept.to_arrow_table(), supersedes=[rel])
        w.add("videos", pa.Table.from_pandas(rows.assign(benchmark=benchmark), preserve_index=False))
    return w.manifest.version


def with_videos(store: Store, benchmark: str, items: pd.DataFrame) -> pd.DataFrame:
    """``items`` (rows of the items table) with ``video`` set to the catalog's path wherever the catalog
    links the item; ``items.video`` is kept for the others (the demo's clips, stores linked before)."""
    if items.empty:
        return items
    ids = items["item_id"].astype("str")
    paths = ids.map(lookup(store, benchmark, ids.unique().tolist()).set_index("item_id")["path"])
    return items.assign(video=paths.astype(object).where(paths.notna(), items["video"].astype(object)))


def probed(store: Store, items: pd.DataFrame) -> pd.DataFrame:
    """The catalog's probed ``fps`` and ``duration_s`` of each of ``items`` (benchmark, item_id), aligned
    with ``items``' rows; NaN where an item is not linked or its file could not be read."""
    import numpy as np
    import pandas as pd

    out = pd.DataFrame({"fps": np.nan, "duration_s": np.nan}, index=items.index)
    for bench in items["benchmark"].dropna().unique():
        rows = lookup(store, str(bench))
        rows = rows[rows["status"] == "linked"].set_index("item_id")
        mine = items["benchmark"] == bench
        for col in ("fps", "duration_s"):
            out.loc[mine, col] = items.loc[mine, "item_id"].astype(str).map(rows[col]).astype(float)
    return out


def link_hint(benchmark: str) -> str:
    """The command that links a benchmark's videos (for notices)."""
    return f"run `trajaudit videos link --benchmark {benchmark} --dataset DIR` (DIR: the downloaded benchmark under the video root)"


def video_for(store: Store, benchmark: str, item_id: str, fallback: str | None) -> tuple[str | None, str | None]:
    """(path to open, catalog status): the catalog's path when it links the item, else ``fallback``
    (``items.video``) with status None."""
    row = entry(store, benchmark, item_id)
    if row is None:
        return fallback, None
    return str(row["path"]), str(row["status"])


def notice(benchmark: str, item_id: str, status: str | None, problem: str) -> str:
    """Why an item's video cannot be shown, and the command that fixes it."""
    if status is None:
        return f"no video linked for {benchmark} item {item_id} ({problem}): {link_hint(benchmark)}"
    if status == "unreadable":
        return f"the video linked for {benchmark} item {item_id} is not a readable video ({problem}): replace it and {link_hint(benchmark)}"
    return f"the video linked for {benchmark} item {item_id} is missing ({problem}): {link_hint(benchmark)}"
