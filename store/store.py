"""The store folder: Parquet files listed by an atomically replaced manifest, queried by DuckDB.

Three processes use one store at once (the Streamlit server reads, the worker appends, the CLI
ingests), and DuckDB allows one read-write process per database file, so there is no database
file here. Instead:

* every write is a new Parquet file, written under a temporary name and renamed into place;
* ``manifest.json`` lists the live files of each table and a version number; a write publishes its
  files by replacing the manifest (write to a temporary file, ``os.replace``), so a reader sees a
  whole batch or none of it, across all tables at once;
* writers serialise on a short file lock (``filelock``: ``flock`` on POSIX, ``msvcrt`` on Windows; the
  kernel drops it when its holder dies, even by kill -9) held only inside one write call (read manifest,
  check, publish); readers never lock;
* files a write retires (``--replace``, compaction) stay on disk for a grace period, because a
  reader may still be scanning the manifest it read before; they are recorded outside the manifest,
  in ``retired/`` (``store.retired``: only writers read it, so the manifest every read parses holds
  the live files alone); the file that replaces them names them in its Parquet metadata
  (``trajaudit.supersedes``), so a lost manifest can be rebuilt from disk without counting a row
  twice (``store.health``);
* the manifest records each live file's row count, so ``trajaudit check`` can verify it;
* a write is committed by its entry in the write log (``store.log``: the manifest it publishes, written
  after its data files and before the manifest swap), so a lost or corrupt manifest is restored exactly,
  and a killed write's files are told apart from committed ones (``store.health``);
* rows carry the write's sequence number (``seq``, the version the write publishes): "the latest row"
  is ordered by it, never by a writer's wall clock (``store.schema.order_key_sql``).

A damaged store (a file in place of the folder, a corrupt manifest, a listed file gone) raises
``StoreError`` naming the file and pointing at ``trajaudit repair``, never a raw traceback.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from store import log, parquet_files, retired
from store.errors import REPAIR_HINT, StoreError
from store.paths import exclusive_temp, inside, own_file_problem, write_atomic
from store.schema import (
    SCHEMAS,
    SEQUENCED,
    TABLES,
    conform,
    folder,
    newer_columns,
    order_key_sql,
    schema_problem,
)

if TYPE_CHECKING:  # pandas (0.3-0.6 s to import) is loaded where a DataFrame is asked for: by DuckDB's ``.df()``
    import pandas as pd

DEFAULT_STORE = "./trajaudit-data"
MANIFEST = "manifest.json"
# The store's format, in the manifest: 2 added the write log (store.log), ``seq`` and the history table. A
# store of a newer format is refused by every command (``NewerStoreError``), ``repair`` included.
FORMAT = 2
RETIRED_GRACE_S = 600.0  # how long a retired file stays on disk for readers of an older snapshot (store.retired)
LOCK = ".write.lock"
LOCK_POLL_S = 0.005  # a waiting writer retries this often (filelock polls a non-blocking flock; writes are short)
VERIFIED = ".cache/verified-schemas.json"  # files whose schema was read and fits (Store._require_own_files)
SUPERSEDES = b"trajaudit.supersedes"  # Parquet metadata key: JSON list of the files a file replaces
# Parquet metadata key of a compacted file: JSON [[file, rows], ...], the files first written (never a compacted
# one) whose rows it holds, in its row order. Derived caches read it to tell rows they already hold from new ones
# (``backend.scope.delta``): a compaction moves rows, a ``--replace`` rewrite (which names no parts) drops some.
PARTS = b"trajaudit.parts"
# Automatic compaction after each write: a table's files are grouped by size (level k holds files of
# FANOUT**k to FANOUT**(k+1) - 1 rows) and a level holding FANOUT files is merged into one file of the next
# level. A row is rewritten about log_FANOUT(rows) times over its life, a table keeps under FANOUT files a
# level, so a write costs what it writes however many came before it (benchmarks/writes.py).
FANOUT = 16
# Rows per Parquet row group. DuckDB skips a row group whose min/max statistics exclude a filter, so one
# item's rows (the Inspector) are read from a few small groups instead of scanning million-row ones, for
# slightly larger files (the figures: benchmarks/README.md).
ROW_GROUP_ROWS = {"items": 16_384}
DEFAULT_ROW_GROUP_ROWS = 131_072


class NewerStoreError(StoreError):
    """The store was written by a newer trajaudit: nothing here may read, write or repair it."""


def resolve_root(path: str | os.PathLike | None) -> Path:
    """The store folder: the argument, else ``TRAJAUDIT_STORE``, else ``./trajaudit-data``."""
    return Path(path or os.environ.get("TRAJAUDIT_STORE") or DEFAULT_STORE).expanduser().resolve()


@dataclass
class Manifest:
    """``manifest.json``: the version and the live files of each table, with their row counts.

    ``retired`` is read from stores written before ``store.retired`` kept that list outside the
    manifest; the next write moves it there (``Writer.publish``), and until then it is written back as
    it was read, so no tool that saves a manifest (``repair``) loses a retired file's grace period.
    """

    version: int = 0
    files: dict[str, list[str]] = field(default_factory=lambda: {t: [] for t in TABLES})
    retired: list[tuple[str, float]] = field(default_factory=list)  # legacy: (relative path, time retired)
    rows: dict[str, int] = field(default_factory=dict)  # listed file -> rows (stores written since it was added)

    @classmethod
    def load(cls, path: Path) -> Manifest | None:
        """The manifest at ``path``, None when absent; StoreError naming it when it is damaged, and
        ``NewerStoreError`` when a newer trajaudit wrote it."""
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            raise StoreError(f"{path.parent} is a file, not a store folder; pass --store with a folder") from None
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text: str, path: Path) -> Manifest:
        """A manifest (or a write-log entry, which is one) from its text; ``path`` names it in errors."""
        try:
            raw = json.loads(text)
            found = int(raw.get("format", 1))
        except (ValueError, TypeError, AttributeError) as exc:
            raise StoreError(f"{path} is corrupt ({type(exc).__name__}: {exc}); {REPAIR_HINT}") from None
        if found > FORMAT:
            raise NewerStoreError(
                f"{path} was written by a newer trajaudit (store format {found}; this version reads formats up to "
                f"{FORMAT}): upgrade trajaudit to use this store; nothing was changed"
            )
        try:
            files = {t: [str(f) for f in raw.get("files", {}).get(t, [])] for t in TABLES}
            retired = [(str(r[0]), float(r[1])) for r in raw.get("retired", [])]
            rows = {str(k): int(v) for k, v in raw.get("rows", {}).items()}
            return cls(int(raw["version"]), files, retired, rows)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise StoreError(f"{path} is corrupt ({type(exc).__name__}: {exc}); {REPAIR_HINT}") from None

    def dump(self, retires: list[str] | None = None) -> str:
        """The manifest's JSON; ``retires``: a write-log entry's files retired by its write (``store.log``)."""
        legacy = {"retired": self.retired} if self.retired else {}
        entry = {"retires": retires} if retires is not None else {}
        return json.dumps(
            {"format": FORMAT, "version": self.version, "files": self.files, **legacy, "rows": self.rows, **entry},
            indent=1,
        )

    def save(self, target: Path) -> None:
        """Publish: write an exclusive temporary file beside ``target``, then atomically replace it."""
        write_atomic(target, self.dump())

    def foreign(self) -> list[tuple[str | None, str, str]]:
        """The (table, entry, why) of every listed (or legacy retired) file that is not one of this
        store's own files (``store.paths.own_file_problem``), caught before it is read, retired,
        deleted or moved. Links that leave the root are caught where files are opened
        (:meth:`Store.connect`) and before anything is deleted or moved (``store.paths.inside``).
        """
        out = [(t, rel, why) for t in TABLES for rel in self.files[t] if (why := own_file_problem(rel, t))]
        return out + [(None, rel, why) for rel, _ in self.retired if (why := own_file_problem(rel, None))]

    def listed(self) -> list[str]:
        """Every live file, all tables."""
        return [rel for files in self.files.values() for rel in files]


class Store:
    """A store folder. Cheap to construct; holds no open handles between calls.

    ``clock``: the time a write retires files at and collects them by (tests pass their own to step past
    the grace period, or to play a writer whose clock is off). With the default, the wall clock, a
    retired file's grace is also counted on the file system's clock (``retired.collect``): a writer
    whose clock runs behind cannot shorten another reader's grace."""

    def __init__(self, root: str | os.PathLike | None = None, clock: Callable[[], float] | None = None):
        self.root = resolve_root(root)
        self.clock = clock or time.time
        self.file_system_clock = clock is None

    # -- reading ---------------------------------------------------------------------------
    def manifest(self) -> Manifest:
        """The published manifest; StoreError naming the first entry that is not the store's own file
        (``Manifest.foreign``), so no reader or writer ever acts on it."""
        m = self.raw_manifest()
        for _, rel, why in m.foreign()[:1]:
            raise StoreError(f"{self.root / MANIFEST} lists {rel!r}: {why}; {REPAIR_HINT}")
        return m

    def raw_manifest(self) -> Manifest:
        """The manifest as written, foreign entries included (``check`` reports them, ``repair`` drops them).

        Without a manifest, the newest write-log entry is the manifest of the last committed write
        (``store.log``: a lost manifest, or a first write killed before its swap), read in its place until
        ``repair`` (or the next write) puts it back; ``check`` names the missing file meanwhile. Read as an
        empty store only where nothing was ever committed: reading a lost manifest as empty would hide every
        row (and ``repair`` once took them all for a killed write's leftovers). Data files with no write log
        at all are a store written before the log was kept: its lost manifest is a StoreError."""
        self.require_folder()
        m = Manifest.load(self.root / MANIFEST)
        if m is not None:
            return m
        if versions := log.versions(self.root):
            newest = versions[-1]
            return Manifest.parse(log.read(self.root, newest) or "", self.root / log.name(newest))
        if (self.root / log.FOLDER).is_dir() or not (found := _data_files(self.root)):
            return Manifest()
        raise StoreError(
            f"{self.root / MANIFEST} is missing but the store holds {found} data file(s) and no write log to restore it "
            "from; run `trajaudit repair`"
        )

    def require_folder(self) -> None:
        """A file where the folder should be is named here, before mkdir or a read trips on it."""
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(
                f"{self.root} is a file, not a store folder; pass --store with a folder (or set TRAJAUDIT_STORE)"
            )

    def version(self) -> int:
        """Increases with every published write: the cache key for everything read from the store."""
        return self.manifest().version

    def is_empty(self) -> bool:
        return not self.manifest().files["responses"]

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with one view per table over one manifest snapshot.

        ``items`` and ``responses`` are also offered deduplicated: ``items`` keeps the latest row of
        each (benchmark, item_id); the raw tables are ``items_all`` and ``responses``.

        The views of a snapshot are built once per process and each call gets its own cursor on
        them (:class:`_Snapshots`): building them reads every file's footer, which a
        dashboard click would pay on every query, and a snapshot never changes (a write
        publishes a new manifest). Closing the cursor leaves the snapshot for the next caller.
        """
        snap = self.manifest()
        paths = {table: [str(self.root / p) for p in snap.files[table]] for table in TABLES}
        for table in TABLES:
            if snap.files[table]:
                inside(self.root, folder(table), "table folder")  # a link out of the store is refused, not read
        self._require_own_files(snap)
        return _SNAPSHOTS.cursor(paths)

    def _require_own_files(self, snap: Manifest) -> None:
        """Every listed file exists, is no link out of the store, and has its table's schema.

        One ``lstat`` a file, and a resolve only for a link: reading a planted link to
        ``/etc/passwd`` would hand its bytes to DuckDB. The schema is read from the footer once per
        file: files are immutable, so what was verified (path, size, mtime) is remembered in the
        process and in ``.cache/verified-schemas.json`` (a stat is 100 times cheaper than a footer),
        and a file that does not fit is named here, not by a DuckDB binder error or a silent cast.
        """
        stats = {}
        for table in TABLES:
            for rel in snap.files[table]:
                path = self.root / rel
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    raise StoreError(f"{path} is listed in {self.root / MANIFEST} but missing; {REPAIR_HINT}") from None
                if stat.S_ISLNK(st.st_mode):
                    inside(self.root, rel, "store file")
                stats[rel] = (table, [st.st_size, st.st_mtime_ns])
        todo = {rel: v for rel, v in stats.items() if (str(self.root), rel, *v[1]) not in _SCHEMA_CHECKED}
        if not todo:
            return
        record = inside(self.root, VERIFIED, "cache folder")
        try:
            known = json.loads(record.read_text())
        except (OSError, ValueError):
            known = {}
        fresh = False
        for rel, (table, key) in todo.items():
            if not isinstance(known, dict) or known.get(rel) != key:
                try:
                    schema = parquet_files.schema(self.root / rel)
                    problem = schema_problem(table, schema)
                except (pa.ArrowException, OSError) as exc:
                    problem = f"unreadable Parquet ({str(exc).splitlines()[0]})"
                else:
                    newer_file(self.root / rel, table, schema)
                if problem:
                    raise StoreError(f"{self.root / rel}: {problem}; {REPAIR_HINT}")
                fresh = True
            _SCHEMA_CHECKED.add((str(self.root), rel, key[0], key[1]))
        if fresh:
            try:
                record.parent.mkdir(exist_ok=True)
                write_atomic(record, json.dumps({rel: key for rel, (_, key) in stats.items()}))
            except OSError:  # a read-only store keeps working; it just verifies again next time
                pass

    def query(self, sql: str, params: list | dict | None = None) -> pd.DataFrame:
        """Run one read query on a fresh snapshot (the CLI and tests); ``params``: positional or named."""
        with self.connect() as con:
            return con.execute(sql, params or []).df()

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store's writer lock (creating the folder); StoreError when it cannot be written."""
        from filelock import FileLock  # imported by writers only: a read never locks

        self.require_folder()  # named before mkdir trips on it
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = FileLock(self.root / LOCK, poll_interval=LOCK_POLL_S)
            lock.acquire()
        except PermissionError as exc:
            raise StoreError(
                f"cannot write to the store {self.root} ({exc.strerror}: {exc.filename}); use a folder you can write"
            ) from None
        try:
            yield
        finally:
            lock.release()

    @contextmanager
    def writer(self) -> Iterator[Writer]:
        """Serialise writers for the duration of one write; publish everything added on success.

        On an exception nothing is published and the files written so far are removed, so the
        store is exactly as it was.
        """
        with self.lock():
            w = Writer(self, self.roll_forward(self.manifest()))
            try:
                yield w
            except BaseException:
                w.abandon()
                raise
            try:
                w.publish()
            except PermissionError as exc:
                w.abandon()
                raise StoreError(
                    f"cannot write to the store {self.root} ({exc.strerror}: {exc.filename}); use a folder you can write"
                ) from None
            except BaseException:
                w.abandon()
                raise
            w.settle()
            if w.added:
                self._auto_compact()

    def roll_forward(self, m: Manifest) -> Manifest:
        """Publish the committed writes the manifest does not show yet (a writer killed between its log entry
        and the manifest swap, ``store.log``), recording what they retired; called under the writer lock."""
        while (text := log.read(self.root, m.version + 1)) is not None:
            entry = json.loads(text)
            m = Manifest.parse(text, self.root / log.name(m.version + 1))
            m.save(self.root / MANIFEST)
            try:
                retired.write_all(self.root, [(str(rel), self.clock()) for rel in entry.get("retires", [])])
            except (OSError, StoreError):  # kept on disk as orphans, for ``check`` and ``repair``
                pass
        return m

    def _auto_compact(self) -> None:
        """Merge each full size level (``FANOUT``) into one file, published as one more version under the
        lock already held. Readers keep their snapshot (the merged files are retired, as ``compact``
        does). The write before it is published whatever happens here: a compaction that fails leaves
        the store as that write left it, and the next write tries again."""
        w = Writer(self, self.manifest())
        try:
            for table in TABLES:
                for group in _full_levels({rel: self._rows(w.manifest, rel) for rel in w.manifest.files[table]}):
                    w.merge(table, group)
            w.publish()
        except (OSError, pa.ArrowException, StoreError):  # a damaged file is named by the next read or `check`
            w.abandon()
            return
        w.settle()

    def _rows(self, manifest: Manifest, rel: str) -> int:
        """A listed file's rows: from the manifest, else (a store written before it kept them) the footer."""
        if rel not in manifest.rows:
            manifest.rows[rel] = parquet_files.metadata(self.root / rel).num_rows
        return manifest.rows[rel]

    def append(self, tables: dict[str, pd.DataFrame | pa.Table]) -> int:
        """Publish one batch across tables atomically; returns the new store version."""
        with self.writer() as w:
            for table, data in tables.items():
                w.add(table, data)
        return w.manifest.version

    def compact(self) -> dict[str, int]:
        """Merge each table's files into one (readers keep working on their old snapshot); a lone file
        written with larger row groups than today's is rewritten too, so an older store gains the
        row-group skipping of one item's lookup (``ROW_GROUP_ROWS``)."""
        merged = {}
        with self.writer() as w:
            self._require_own_files(w.manifest)  # compaction reads the files itself, not through connect()
            for table in TABLES:
                files = list(w.manifest.files[table])
                if len(files) < 2 and not (files and self._coarse(table, files[0])):
                    continue
                w.merge(table, files)
                merged[table] = len(files)
        return merged

    def _coarse(self, table: str, rel: str) -> bool:
        """The file has a row group larger than this table's size today."""
        meta = parquet_files.metadata(self.root / rel)
        size = ROW_GROUP_ROWS.get(table, DEFAULT_ROW_GROUP_ROWS)
        return any(meta.row_group(k).num_rows > size for k in range(meta.num_row_groups))


class Writer:
    """The state of one write: new files staged, old files to retire, then one manifest swap."""

    def __init__(self, store: Store, manifest: Manifest):
        self.store = store
        self.manifest = manifest
        self.seq = manifest.version + 1  # the version this write publishes: every row it adds carries it
        self._added: list[tuple[str, str]] = []
        self._retired: list[tuple[str, str]] = []
        self._published = False
        self._logged: int | None = None  # the version whose log entry this write wrote (store.log)
        self._now = 0.0
        self._to_record: list[tuple[str, float]] = []  # (file, time retired) for retired/, once published

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A reader over the manifest this writer started from (for conflict checks)."""
        return self.store.connect()

    def add(
        self,
        table: str,
        data: pd.DataFrame | pa.Table,
        supersedes: list[str] | None = None,
        parts: list[list] | None = None,
    ) -> str | None:
        """Stage one Parquet file (written now, published at the end of the write).

        ``supersedes``: the files this one replaces (retired in the same write), recorded in its
        metadata; such a file is written even when empty, so the record survives. ``parts``: for a
        compaction, where its rows come from (``PARTS``).
        """
        import pyarrow.parquet as pq  # writes only: a read opens files through ``store.parquet_files``

        arrow = conform(table, data)
        if arrow.num_rows == 0 and not supersedes:
            return None
        if table in SEQUENCED and not supersedes:  # new rows; a merge or a rewrite keeps each row's own
            seq = arrow.schema.get_field_index("seq")
            arrow = arrow.set_column(seq, "seq", pa.repeat(pa.scalar(self.seq, pa.int64()), arrow.num_rows))
        if supersedes:
            meta = {SUPERSEDES: json.dumps(supersedes).encode()}
            arrow = arrow.replace_schema_metadata(meta | ({PARTS: json.dumps(parts).encode()} if parts else {}))
        rel = f"{folder(table)}/{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}.parquet"
        path = self.store.root / rel
        if not self._added:  # before the write's first data file: see ``Store.raw_manifest``
            log.folder(self.store.root).mkdir(exist_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        inside(self.store.root, folder(table), "table folder")  # a table folder linked out of the store is refused
        self._added.append((table, rel))  # before writing: abandon() removes a half-written file too
        with exclusive_temp(path) as (handle, tmp):
            row_group = ROW_GROUP_ROWS.get(table, DEFAULT_ROW_GROUP_ROWS)
            pq.write_table(arrow, handle, compression="zstd", row_group_size=row_group)
        try:
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        self.manifest.rows[rel] = arrow.num_rows
        return rel

    def merge(self, table: str, files: list[str]) -> str | None:
        """Stage one file holding the rows of ``files`` in their order, retiring them; its metadata names
        them (``SUPERSEDES``) and the first-written files its rows come from (``PARTS``)."""
        import pyarrow.parquet as pq  # writes only, as in ``add``

        data = pq.read_table([str(self.store.root / f) for f in files], schema=SCHEMAS[table])
        parts = [part for f in files for part in self._parts(f)]
        self.retire(table, files)
        return self.add(table, data, supersedes=files, parts=parts)

    def _parts(self, rel: str) -> list[list]:
        meta = parquet_files.schema(self.store.root / rel).metadata or {}
        if PARTS in meta:
            return json.loads(meta[PARTS])
        return [[rel, self.store._rows(self.manifest, rel)]]

    def retire(self, table: str, files: list[str]) -> None:
        """Drop files from the table at publish time (kept on disk for the grace period)."""
        self._retired.extend((table, f) for f in files)

    @property
    def added(self) -> bool:
        """Whether this write staged any file."""
        return bool(self._added)

    def abandon(self) -> None:
        """Remove what this unpublished write put on disk: its log entry first (a commit whose manifest swap
        failed must not be rolled forward onto files deleted here), then its data files."""
        if self._logged is not None and not self._published:
            (self.store.root / log.name(self._logged)).unlink(missing_ok=True)
            self._logged = None
        for _, rel in self._added:
            inside(self.store.root, rel, "store file").unlink(missing_ok=True)
            self.manifest.rows.pop(rel, None)
        self._added.clear()

    def publish(self) -> None:
        """Swap in the manifest with this write's files and without the ones it retires (and without a
        legacy manifest's retired list); :meth:`settle` then records those in ``retired/``. That order
        makes a stop between the two keep the retired files on disk until ``repair`` (orphans), never
        delete one early (``store.retired``)."""
        if not self._added and not self._retired:
            return
        m, root = self.manifest, self.store.root
        self._now = self.store.clock()
        self._to_record = [(rel, self._now) for _, rel in self._retired] + m.retired
        if self._to_record:
            retired.folder(root)  # a folder linked out of the store is refused before anything is published
        for table, rel in self._retired:
            m.files[table].remove(rel)
        for table, rel in self._added:
            m.files[table].append(rel)
        m.retired = []
        live = set(m.listed())
        m.rows = {rel: n for rel, n in m.rows.items() if rel in live}
        m.version += 1
        log.write(root, m.version, m.dump(retires=[rel for _, rel in self._retired]))  # the commit
        self._logged = m.version
        m.save(root / MANIFEST)
        self._published = True

    def _file_system_now(self) -> float | None:
        """The file system's time now, as the manifest just written shows it (None with an injected clock)."""
        if not self.store.file_system_clock:
            return None
        try:
            return os.stat(self.store.root / MANIFEST).st_mtime
        except OSError:
            return None

    def settle(self) -> None:
        """After a published write: record the files it retired, delete those whose grace period is over,
        and record the files just written as verified, so the next read writes nothing of its own. Never
        raises: the write is published; what fails is tried again, or named by ``check`` or the next read."""
        if not self._published:
            return
        root = self.store.root
        try:
            retired.write_all(root, self._to_record)
        except (OSError, StoreError):  # the retired files stay on disk as orphans (``check``, ``repair``)
            pass
        retired.collect(root, self.manifest.listed(), self._now, RETIRED_GRACE_S, self._file_system_now())
        log.prune(root, self.manifest.version)
        try:
            self.store._require_own_files(self.manifest)
        except StoreError:  # a damaged file the write did not add is named by the next read
            pass


def newer_file(path: Path, table: str, schema: pa.Schema) -> None:
    """``NewerStoreError`` when the file at ``path`` adds columns to ``table``'s schema (``newer_columns``)."""
    if extra := newer_columns(table, schema):
        raise NewerStoreError(
            f"{path} has columns this trajaudit does not know ({', '.join(extra)}): it was written by a newer "
            "version; upgrade trajaudit to use this store (`repair` leaves it alone)"
        )


def _data_files(root: Path) -> int:
    """How many Parquet files the store's table folders hold."""
    return sum(1 for t in TABLES if (root / folder(t)).is_dir() for _ in (root / folder(t)).glob("*.parquet"))


def _full_levels(rows: dict[str, int]) -> list[list[str]]:
    """The files to merge: each size level holding ``FANOUT`` files or more, in manifest order."""
    levels: dict[int, list[str]] = {}
    for rel, n in rows.items():
        level, size = 0, FANOUT
        while n >= size:
            level, size = level + 1, size * FANOUT
        levels.setdefault(level, []).append(rel)
    return [files for files in levels.values() if len(files) >= FANOUT]


def _open_snapshot(paths: dict[str, list[str]]) -> duckdb.DuckDBPyConnection:
    """An in-memory database with the store's views over the given files (one manifest snapshot)."""
    con = duckdb.connect(":memory:")
    for table in TABLES:
        name = "items_all" if table == "items" else table
        # a table, not a registered object: cursors do not see their parent's registrations; from no batches, as
        # ``Schema.empty_table`` imports pandas (pyarrow's probe: backend/scope/arrow_numpy.py)
        con.from_arrow(pa.Table.from_batches([], schema=SCHEMAS[table])).create(f"_{name}_empty")
        if paths[
            table
        ]:  # by name, over the empty table: files written before a nullable column was added read as null there
            con.execute(
                f"CREATE VIEW {name} AS SELECT * FROM _{name}_empty UNION ALL BY NAME "
                f"SELECT * FROM read_parquet({_sql_list(paths[table])}, union_by_name=true)"
            )
        else:
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM _{name}_empty")
    con.execute(
        "CREATE VIEW items AS SELECT * EXCLUDE (written_at, seq) FROM items_all "
        f"QUALIFY row_number() OVER (PARTITION BY benchmark, item_id ORDER BY {order_key_sql()} DESC) = 1"
    )
    return con


class _Snapshots:
    """The last few snapshots' databases in this process, keyed by their exact file lists.

    A cursor is a connection of its own to its snapshot's database (its own registrations and
    temporary tables, safe to use from one thread while another uses a sibling), so callers keep
    the ``with store.connect() as con`` pattern; a snapshot dropped from the cache stays open for
    the cursors still using it and closes with the last one.
    """

    KEEP = 4

    def __init__(self) -> None:
        self._open: dict[tuple, duckdb.DuckDBPyConnection] = {}
        self._lock = threading.Lock()

    def cursor(self, paths: dict[str, list[str]]) -> duckdb.DuckDBPyConnection:
        key = tuple((table, tuple(files)) for table, files in paths.items())
        with self._lock:
            con = self._open.pop(key, None) or _open_snapshot(paths)
            self._open[key] = con  # most recent last
            while len(self._open) > self.KEEP:
                self._open.pop(next(iter(self._open)))
            return con.cursor()


_SNAPSHOTS = _Snapshots()
_SCHEMA_CHECKED: set[tuple[str, str, int, int]] = set()  # (root, file, size, mtime) whose schema fits


def _sql_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"
