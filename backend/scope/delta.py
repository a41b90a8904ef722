"""Which rows of a table a derived cache has not seen yet: the new files' rows, read without the old ones.

A cache entry records the files it was computed from and, for each, the first-written files ("parts")
its rows come from (``store.store.PARTS``: a compaction moves rows into a new file and names where
they came from; any other file is its own part). Against today's manifest, a part the entry holds is
skipped wherever it now lives, a new part is a row range of the file holding it, and a part the entry
holds that no listed file holds any more (a ``--replace`` dropped its rows) means the entry cannot be
patched: the caller rebuilds.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from backend.scope import arrow_numpy, sorted_keys
from store import parquet_files
from store.schema import SCHEMAS
from store.store import PARTS, Manifest, Store

Parts = dict[str, list[list]]  # listed file -> [[part, rows], ...] in the file's row order


@dataclass(frozen=True)
class Delta:
    """The rows of one table a cache lacks: ``ranges`` of (file, first row, end row); ``parts`` to record."""

    ranges: list[tuple[str, int, int]]
    parts: Parts

    def n_rows(self) -> int:
        """How many rows are new."""
        return sum(end - start for _, start, end in self.ranges)

    def files_rows(self) -> int:
        """How many rows the files holding new rows hold (what ``arrow`` reads)."""
        return sum(rows for rel in {rel for rel, _, _ in self.ranges} for _, rows in self.parts[rel])

    def few(self) -> bool:
        """Whether the new rows are few, in small files: read as Arrow (``arrow``) and handled in Python and NumPy,
        where each DuckDB statement costs 1-2 ms however few its rows, and opening the process's DuckDB 15-20 ms
        (2026-12-02: the five statements of coverage's count made 13 ms of the first read after a one-row write,
        against 3 ms)."""
        return self.n_rows() <= sorted_keys.FEW_ROWS and self.files_rows() <= sorted_keys.FEW_ROWS

    def values(self, store: Store, table: str, columns: list[str]) -> dict[str, list]:
        """The new rows' ``columns`` as Python values (``arrow``; None where null), a timestamp column as its
        microseconds since the epoch (no Arrow compute kernel, no pandas)."""
        new = self.arrow(store, table, columns)
        out = {}
        for name in columns:
            column = new[name]
            if pa.types.is_timestamp(column.type) and column.type.unit == "us":
                out[name] = [v for chunk in column.chunks for v in chunk.view(pa.int64()).to_pylist()]
            else:
                out[name] = column.to_pylist()
        return out

    def arrow(self, store: Store, table: str, columns: list[str]) -> pa.Table:
        """The new rows' ``columns`` as Arrow, typed as the table's schema (null where a file predates a
        column): for a few rows in small files (``files_rows``), where a DuckDB statement costs more than
        the read."""
        schema = pa.schema([SCHEMAS[table].field(c) for c in columns])
        pieces = [arrow_numpy.empty(schema)]
        for rel in dict.fromkeys(rel for rel, _, _ in self.ranges):  # each file read once, in range order
            have = [c for c in columns if c in _schema(store.root / rel).names]
            read = parquet_files.read(store.root / rel, have)  # pq.read_table: twice the time
            whole = arrow_numpy.table(
                {c: read[c] if c in have else pa.nulls(read.num_rows, schema.field(c).type) for c in columns}
            )
            for piece in (whole.slice(start, end - start) for r, start, end in self.ranges if r == rel):
                # a file of the table's schema (every file since) is read as it is: ``cast`` is a compute kernel
                pieces.append(piece if piece.schema.equals(schema) else piece.cast(schema))
        return pa.concat_tables(pieces)

    def view(self, store: Store, con: duckdb.DuckDBPyConnection, table: str, name: str) -> None:
        """Create the temporary view ``name`` over exactly the new rows, with every column of the table's
        schema (a file written before a nullable column was added reads null there, as ``Store.connect``).
        The usual write, one new file with every column, is read as it is: the union with an empty table of
        the schema and the row-number filter took 4 ms of a read against 1.5 ms (2026-12-02), paid by each
        cache a read patches."""
        if len(self.ranges) == 1:
            rel, start, end = self.ranges[0]
            path = store.root / rel
            whole = start == 0 and end == sum(rows for _, rows in self.parts[rel])
            if whole and _has_schema(path, SCHEMAS[table]):
                con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM read_parquet({_quote(path)})")
                return
        empty = f"_{name}_empty"
        con.register(empty, arrow_numpy.empty(SCHEMAS[table]))  # the connection's own (``scratch``): no table created
        selects = [
            f"SELECT * EXCLUDE (file_row_number) FROM read_parquet({_quote(store.root / rel)}, file_row_number = true)"
            f" WHERE file_row_number >= {start} AND file_row_number < {end}"
            for rel, start, end in self.ranges
        ]
        con.execute(f"CREATE TEMP VIEW {name} AS " + " UNION ALL BY NAME ".join([f"SELECT * FROM {empty}", *selects]))


def file_parts(store: Store, manifest: Manifest, table: str, known: Parts) -> Parts:
    """Every listed file of ``table`` with its parts (from ``known`` where recorded, else its footer)."""
    out: Parts = {}
    for rel in manifest.files[table]:
        if rel in known:
            out[rel] = known[rel]
            continue
        path = store.root / rel
        meta = _schema(path).metadata or {}
        rows = manifest.rows.get(rel)
        if PARTS in meta:
            out[rel] = json.loads(meta[PARTS])
        else:
            out[rel] = [[rel, rows if rows is not None else parquet_files.metadata(path).num_rows]]
    return out


def delta(store: Store, manifest: Manifest, table: str, known: Parts) -> Delta | None:
    """The rows of ``table`` not among the parts of ``known`` (the entry's files); None when some of
    those parts are gone (rows removed: rebuild).

    Only what changed is walked: a listed file the entry holds is unchanged (files never change), so its
    parts are held and live; a part held elsewhere can only have moved out of a file the entry holds and
    the manifest no longer lists (a part lives in one listed file). A compacted file lists every write
    merged into it (thousands after a day of re-runs), so walking every part cost a read time that grew
    with the writes before it."""
    parts = file_parts(store, manifest, table, known)
    moved = {part for rel, listed in known.items() if rel not in parts for part, _ in listed}
    ranges: list[tuple[str, int, int]] = []
    for rel, listed in parts.items():
        if rel in known:
            continue
        start = 0
        for part, rows in listed:
            if part in moved:
                moved.discard(part)
            elif rows:
                if ranges and ranges[-1][0] == rel and ranges[-1][2] == start:
                    ranges[-1] = (rel, ranges[-1][1], start + rows)  # adjacent new parts read as one range
                else:
                    ranges.append((rel, start, start + rows))
            start += rows
    if moved:  # held rows that no listed file holds any more
        return None
    return Delta(ranges, parts)


@functools.lru_cache(maxsize=256)
def _schema(path: Path) -> pa.Schema:
    """A listed file's schema, read from its footer once per process (files are never changed)."""
    return parquet_files.schema(path)


def _has_schema(path: Path, schema: pa.Schema) -> bool:
    """Whether the file has every column of ``schema``, each of its type."""
    have = _schema(path)
    return all(have.get_field_index(f.name) >= 0 and have.field(f.name).type == f.type for f in schema)


def _quote(path: object) -> str:
    return "'" + str(path).replace("'", "''") + "'"
