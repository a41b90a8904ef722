"""Store health: ``check`` says whether a store is sound, ``repair`` makes a damaged one readable.

A store is sound when ``manifest.json`` parses and every file it lists exists, is a readable
Parquet file with its table's schema, and holds the row count the manifest recorded (stores record
counts since this module exists; older entries are checked without one). Files no manifest entry
names (temporary files or unpublished Parquet files left by a killed writer) are reported as
orphans: harmless to readers, removed by ``repair``. The records of retired files (``store.retired``)
are checked too: an entry a write would refuse to delete (not the store's own file, a link out of
the store, a file the manifest lists) and a record that is not one the store writes are problems,
which ``repair`` drops (the entry from its record, never the file it names) or removes (the record).

``repair`` works under the store's writer lock, so no write runs beside it, and publishes one new
manifest atomically (temporary file + ``os.replace``), like every write. It never deletes what it cannot
prove is garbage:

* a manifest that parses: a committed write the manifest does not show yet (its writer was killed
  after its write-log entry, ``store.log``) is published first; entries whose files are missing or
  unreadable are dropped (unreadable files are moved to ``damaged/``) and the responses lost are
  counted from the recorded row counts;
* a manifest that is missing or does not parse is restored from the newest write-log entry: the
  manifest of the last committed write, exactly. With no log (a store written before it was kept) the
  files on disk cannot tell a killed write's from a committed one's, so ``repair`` refuses in one line;
  ``--take-all`` then takes every intact file except those another file supersedes (the rebuild of
  earlier versions, with its guard: no response key and no run id in two files);
* files on disk that no manifest entry lists: temporary files (never renamed into place) are deleted;
  Parquet files a committed write retired (named by an earlier log entry, or superseded by a listed
  file, ``trajaudit.supersedes``) are recorded in ``retired/`` with a full grace period from now; every
  other one is a killed write's, never committed, and is moved to ``damaged/`` with its rows counted;
* a newer store format (``NewerStoreError``) is refused before anything is touched.

The report says which rows it kept (per table), set aside (moved to ``damaged/``) and could not place
(listed files that are missing or unreadable).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from msgspec import field

from store import log, retired
from store.contract import Contract, doc
from store.errors import StoreError
from store.paths import inside, outside_reason, write_atomic
from store.schema import TABLES, folder, schema_problem
from store.store import MANIFEST, SUPERSEDES, Manifest, NewerStoreError, Store, newer_file

DAMAGED = "damaged"
CACHE = ".cache"  # backend.scope.cache_folder.FOLDER (store/ may not import backend/)


class Problem(Contract):
    """One thing wrong with the store (``check --json``'s ``problems``, ``repair --json``'s ``dropped``)."""

    file: Annotated[str, doc("the file, relative to the store")]
    table: Annotated[str | None, doc("its table (null: not a table's file)")]
    problem: Annotated[str, doc("what is wrong")]
    rows: Annotated[int | None, doc("the rows it held, where recorded")] = None


class Report(Contract):
    """``trajaudit check --json``: what is wrong with the store, if anything."""

    store: Annotated[str, doc("the store folder")]
    sound: Annotated[bool, doc("true when nothing is wrong")]
    version: Annotated[int | None, doc("the manifest's version (null: unreadable)")]
    files: Annotated[int, doc("files the manifest lists")]
    rows: Annotated[dict[str, int], doc("per table, rows recorded")]
    problems: Annotated[list[Problem], doc("what is wrong")] = field(default_factory=list)
    orphans: Annotated[list[str], doc("files an interrupted write left (harmless)")] = field(default_factory=list)


def _file_problem(
    root: Path, table: str, rel: str, expected_rows: int | None, deep: bool
) -> tuple[str | None, int | None]:
    """(what is wrong or None, rows the file holds when readable)."""
    escape = outside_reason(root, rel)
    if escape:
        return f"outside the store ({escape})", None
    path = root / rel
    if not path.is_file():
        return "missing", None
    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
        if deep:
            pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        return f"unreadable Parquet ({str(exc).splitlines()[0]})", None
    newer_file(path, table, schema)
    mismatch = schema_problem(table, schema)
    if mismatch:
        return mismatch, meta.num_rows
    if expected_rows is not None and meta.num_rows != expected_rows:
        return f"{meta.num_rows} rows where the manifest recorded {expected_rows}", meta.num_rows
    return None, meta.num_rows


def _own_tables(root: Path) -> list[str]:
    """The tables whose folder stays inside the store: a folder linked elsewhere is never listed,
    so nothing outside is ever taken into a rebuilt manifest or deleted as an orphan."""
    return [t for t in TABLES if outside_reason(root, folder(t)) is None]


def _cache_escapes(root: Path) -> bool:
    """``<store>/.cache`` is a link out of the store (the derived-data cache refuses to use it)."""
    return (root / CACHE).is_symlink() and outside_reason(root, CACHE) is not None


def _on_disk(root: Path) -> tuple[dict[str, list[str]], list[str]]:
    """({table: Parquet files on disk}, temporary files a writer left), in the store's own folders;
    a link out of the store is neither taken into a rebuilt manifest nor deleted as an orphan."""
    own = _own_tables(root)

    def listed(table: str, pattern: str) -> list[str]:
        found = (str(p.relative_to(root)) for p in (root / folder(table)).glob(pattern)) if table in own else ()
        return sorted(rel for rel in found if outside_reason(root, rel) is None)

    parquet = {t: listed(t, "*.parquet") for t in TABLES}
    temps = [rel for t in TABLES for rel in listed(t, "*.tmp")]
    temps += [p.name for p in root.glob(f".{MANIFEST}.*.tmp")]
    if not _retired_escapes(root):
        temps += [f"{retired.FOLDER}/{p.name}" for p in (root / retired.FOLDER).glob(".*.tmp")]
    return parquet, sorted(temps)


def _orphans(root: Path, m: Manifest, records: list[retired.Record]) -> list[str]:
    parquet, temps = _on_disk(root)
    known = set(m.listed()) | {rel for rel, _ in m.retired} | {f for r in records for f in r.files or []}
    return temps + [f for files in parquet.values() for f in files if f not in known]


def _retired_escapes(root: Path) -> bool:
    """``<store>/retired`` is a link out of the store (writers then record and collect nothing)."""
    return (root / retired.FOLDER).is_symlink() and outside_reason(root, retired.FOLDER) is not None


Unsafe = dict[str, list[tuple[str, str]]]  # record name -> (entry, why a write never deletes it)


def _records(root: Path, m: Manifest) -> tuple[list[retired.Record], Unsafe]:
    """The records of ``retired/`` (none when the folder links out) and, by record name, the (entry, why)
    of each entry a write would never delete: not the store's own file, a link out, a listed file."""
    if _retired_escapes(root):
        return [], {}
    listed = {retired.fold(rel) for rel in m.listed()}
    records, bad = retired.records(root), Unsafe()
    for r in records:
        for rel in r.files or []:
            why = retired.entry_problem(root, rel)
            if why or retired.fold(rel) in listed:
                bad.setdefault(r.name, []).append((rel, why or "a file the manifest lists"))
    return records, bad


def _record_problems(root: Path, records: list[retired.Record], bad: Unsafe) -> list[Problem]:
    link = "the retired-files folder is a link out of the store; repair removes the link"
    out = [Problem(retired.FOLDER, None, link)] if _retired_escapes(root) else []
    out += [Problem(r.rel, None, f"{r.problem}; repair removes it") for r in records if r.problem]
    return out + [
        Problem(rel, None, f"{why} (in {retired.FOLDER}/{name}); repair drops it from that record")
        for name, entries in bad.items()
        for rel, why in entries
    ]


def _existing(store: Store) -> Path:
    store.require_folder()
    if not store.root.is_dir():
        raise StoreError(f"no store at {store.root}; pass --store (or set TRAJAUDIT_STORE)")
    return store.root


def check(store: Store, deep: bool = False) -> Report:
    """Verify the manifest and every listed file (``deep``: decode every page, not just the footer)."""
    root = _existing(store)
    try:
        m = store.raw_manifest()
    except NewerStoreError:
        raise
    except StoreError as exc:
        parquet, _ = _on_disk(root)
        n = sum(len(f) for f in parquet.values())
        problem = Problem(MANIFEST, None, f"{exc}; {n} Parquet file(s) on disk")
        return Report(str(root), False, None, n, {}, [problem])
    problems = [Problem(rel, table, f"{why}; repair drops it from the manifest") for table, rel, why in m.foreign()]
    problems += [
        Problem(t, t, "the table's folder is a link out of the store") for t in TABLES if t not in _own_tables(root)
    ]
    records, bad = _records(root, m)
    problems += _record_problems(root, records, bad)
    if not (root / MANIFEST).is_file() and (versions := log.versions(root)):
        stand_in = (
            f"missing: reads use the newest write-log entry, {log.name(versions[-1])}; `trajaudit repair` restores it"
        )
        problems.insert(0, Problem(MANIFEST, None, stand_in))
    if log.read(root, m.version + 1) is not None:
        ahead = "a committed write the manifest does not show yet (its writer was stopped); `trajaudit repair` or the next write publishes it"
        problems.append(Problem(log.name(m.version + 1), None, ahead))
    foreign = {rel for _, rel, _ in m.foreign()}
    rows = {}
    for table in TABLES:
        rows[table] = 0
        for rel in (f for f in m.files[table] if f not in foreign):
            why, n_rows = _file_problem(root, table, rel, m.rows.get(rel), deep)
            rows[table] += n_rows or 0
            if why:
                problems.append(Problem(rel, table, why, m.rows.get(rel, n_rows)))
    files = sum(len(f) for f in m.files.values())
    return Report(str(root), not problems, m.version, files, rows, problems, _orphans(root, m, records))


class RepairReport(Contract):
    """``trajaudit repair --json``: what a repair did."""

    store: Annotated[str, doc("the store folder")]
    changed: Annotated[bool, doc("true when something was repaired")]
    rebuilt_manifest: Annotated[bool, doc("true when the manifest was rebuilt from the files on disk")]
    version: Annotated[int | None, doc("the manifest's version afterwards")]
    dropped: Annotated[list[Problem], doc("files dropped from the manifest, and why")] = field(default_factory=list)
    responses_lost: Annotated[int, doc("responses in the dropped files")] = 0
    responses_lost_unknown: Annotated[int, doc("dropped response files whose row count was never recorded")] = 0
    moved_to_damaged: Annotated[list[str], doc("where the dropped files were moved")] = field(default_factory=list)
    removed_orphans: Annotated[
        list[str], doc("temporary files an interrupted write left, and links out of the store, removed")
    ] = field(default_factory=list)
    taken: Annotated[list[str], doc("files a rebuilt manifest lists")] = field(default_factory=list)
    restored_from: Annotated[
        str | None, doc("the write-log entry a lost or corrupt manifest was restored from (null: not restored)")
    ] = None
    rolled_forward: Annotated[int, doc("committed writes the manifest did not show yet, published")] = 0
    kept_rows: Annotated[dict[str, int], doc("rows each table holds afterwards")] = field(default_factory=dict)
    set_aside: Annotated[
        list[Problem], doc("files of writes that never committed, moved to damaged/, with their rows")
    ] = field(default_factory=list)
    retired_recorded: Annotated[
        list[str], doc("retired files found unrecorded, now recorded for deletion after the grace period")
    ] = field(default_factory=list)


def repair(store: Store, take_all: bool = False) -> RepairReport:
    """Make the store readable from what is intact; see the module docstring. ``take_all``: with no manifest and
    no write log, take every intact file (a killed write's files too)."""
    root = _existing(store)
    with store.lock():
        restored_from: str | None = None
        unreadable: list[tuple[str, str, str]] = []
        try:
            if not (root / MANIFEST).is_file() and log.versions(root):
                raise StoreError(f"{root / MANIFEST} is missing")
            m, rebuilt = store.raw_manifest(), False
        except NewerStoreError:
            raise
        except StoreError as exc:
            (m, restored_from, unreadable), rebuilt = _restore(root, str(exc), take_all), True
        out = RepairReport(str(root), rebuilt, rebuilt, m.version, restored_from=restored_from)
        if not rebuilt:
            version = m.version
            m = store.roll_forward(m)
            out.rolled_forward = m.version - version
        out.dropped += _drop_foreign(root, m)
        for table, rel, why in unreadable:
            out.dropped.append(Problem(rel, table, why))
            out.moved_to_damaged.append(_quarantine(root, rel))
        for table in TABLES:
            for rel in list(m.files[table]):
                problem, n = _file_problem(root, table, rel, m.rows.get(rel), deep=False)
                if problem is None:
                    continue
                lost = m.rows.get(rel, n)
                out.dropped.append(Problem(rel, table, problem, lost))
                m.files[table].remove(rel)
                m.rows.pop(rel, None)
                if table == "responses":
                    out.responses_lost += lost or 0
                    out.responses_lost_unknown += lost is None
                if outside_reason(root, rel) is None and (root / rel).exists():
                    out.moved_to_damaged.append(_quarantine(root, rel))
        for link in [CACHE] * _cache_escapes(root) + [retired.FOLDER] * _retired_escapes(root):
            (root / link).unlink()  # the link only: what it points at is left alone
            out.removed_orphans.append(link)
        records, mended = _mend_records(root, m)
        _settle_orphans(root, m, records, out)
        if out.dropped or rebuilt:
            m.version = max(m.version + 1, int(time.time())) if rebuilt and not restored_from else m.version + 1
            legacy, m.retired = m.retired, []
            log.write(root, m.version, m.dump(retires=[]))
            m.save(root / MANIFEST)
            retired.write_all(root, legacy)  # recorded after the manifest that no longer lists them, as a write does
        out.dropped += mended
        out.changed = bool(
            out.dropped or rebuilt or out.rolled_forward or out.removed_orphans or out.set_aside or out.retired_recorded
        )
        out.version = m.version
        out.taken = [f for files in m.files.values() for f in files] if rebuilt else []
        out.kept_rows = {t: sum(m.rows.get(rel, 0) for rel in m.files[t]) for t in TABLES}
    return out


def _restore(root: Path, why: str, take_all: bool) -> tuple[Manifest, str | None, list[tuple[str, str, str]]]:
    """(the manifest of the last committed write, the log entry it came from, unreadable files) for a manifest
    that is lost (``why``); see the module docstring. StoreError when committed files cannot be told apart."""
    versions = log.versions(root)
    if versions:
        entry = log.name(versions[-1])
        try:
            return Manifest.parse(log.read(root, versions[-1]) or "", root / entry), entry, []
        except NewerStoreError:
            raise
        except StoreError:
            raise StoreError(
                f"{root / MANIFEST} is lost and the newest write-log entry {entry} is unreadable, so the last committed "
                f"write cannot be told from a killed one; nothing was changed. Move {entry} out of the store to restore "
                "the write before it, then run `trajaudit repair` again"
            ) from None
    if not take_all:
        raise StoreError(
            f"{why.split('; ')[0]}, and the store has no write log (log/) to restore it from: a store written before "
            "trajaudit kept one cannot tell a killed write's files from committed ones; nothing was changed. "
            "`trajaudit repair --take-all` takes every intact file (a killed write's rows too)"
        )
    m, unreadable = _rebuild(root)
    return m, None, unreadable


def _settle_orphans(root: Path, m: Manifest, records: list[retired.Record], out: RepairReport) -> None:
    """Files on disk no manifest entry lists: temporary files deleted, retired files recorded, the rest (a
    killed write's, never committed) moved to ``damaged/``."""
    parquet, temps = _on_disk(root)
    known = set(m.listed()) | {rel for rel, _ in m.retired} | {f for r in records for f in r.files or []}
    unlisted = {t: [f for f in files if f not in known] for t, files in parquet.items()}
    for rel in temps:
        inside(root, rel, "orphan file").unlink(missing_ok=True)
        out.removed_orphans.append(rel)
    if not any(unlisted.values()):
        return
    committed = _once_committed(root, m)
    retire = [f for files in unlisted.values() for f in files if f in committed]
    if retire:
        retired.write_all(root, [(rel, time.time()) for rel in retire])
        out.retired_recorded += retire
    for table, files in unlisted.items():
        for rel in (f for f in files if f not in committed):
            try:
                rows: int | None = pq.read_metadata(root / rel).num_rows
            except (pa.ArrowException, OSError):
                rows = None
            out.set_aside.append(Problem(rel, table, "written by a write that never committed", rows))
            out.moved_to_damaged.append(_quarantine(root, rel))


def _once_committed(root: Path, m: Manifest) -> set[str]:
    """Files a committed write published and a later one retired: those the write log's entries name, and
    those a listed file supersedes (``trajaudit.supersedes``), through every superseding file still on disk."""
    named = set()
    for v in log.versions(root):
        try:
            named |= set(Manifest.parse(log.read(root, v) or "", root / log.name(v)).listed())
        except StoreError:
            continue
    todo, seen = list(m.listed()), set(m.listed())
    while todo:
        try:
            meta = pq.read_schema(root / todo.pop()).metadata or {}
        except (pa.ArrowException, OSError):
            continue
        for rel in json.loads(meta[SUPERSEDES]) if SUPERSEDES in meta else []:
            if rel not in seen:
                seen.add(rel)
                todo.append(rel)
    return (named | seen) - set(m.listed())


def _drop_foreign(root: Path, m: Manifest) -> list[Problem]:
    """Remove from ``m`` every entry that is not the store's own file, and every retired entry that
    is a link out of the store (the next write would refuse to delete it), touching none of them."""
    foreign = m.foreign()
    escaping = {rel for rel, _ in m.retired} - {rel for _, rel, _ in foreign}
    foreign += [
        (None, rel, f"a link out of the store ({why})")
        for rel in sorted(escaping)
        if (why := outside_reason(root, rel))
    ]
    dropped = []
    for table, rel, why in foreign:
        if table:
            m.files[table].remove(rel)
        else:
            m.retired = [(r, when) for r, when in m.retired if r != rel]
        m.rows.pop(rel, None)
        dropped.append(Problem(rel, table, f"{why}; dropped from the manifest, left untouched"))
    return dropped


def _mend_records(root: Path, m: Manifest) -> tuple[list[retired.Record], list[Problem]]:
    """Drop from each record of ``retired/`` the entries a write would never delete (the files they
    name are left alone) and remove each record that is not one the store writes; returns the records
    as they are now and what was dropped."""
    records, bad = _records(root, m)
    kept, dropped = [], []
    for r in records:
        path = root / r.rel
        if r.problem:
            removable = path.is_symlink() or path.is_file()
            if removable:
                path.unlink()  # a link: the link only
            dropped.append(Problem(r.rel, None, f"{r.problem}; " + ("removed" if removable else "left (a folder)")))
            continue
        entries = dict(bad.get(r.name, []))
        if not entries:
            kept.append(r)
            continue
        files = [f for f in r.files or [] if f not in entries]
        if files:
            write_atomic(path, json.dumps({"files": files}))
            kept.append(retired.Record(r.name, r.at, files))
        else:
            path.unlink()
        dropped += [
            Problem(rel, None, f"{why} (in {r.rel}); dropped from that record, left untouched")
            for rel, why in entries.items()
        ]
    return kept, dropped


def _quarantine(root: Path, rel: str) -> str:
    """Move a damaged file to ``damaged/`` (kept for the user to inspect, out of every listing);
    both ends are confined, so a ``damaged`` folder linked elsewhere is refused, not written through."""
    source = inside(root, rel, "damaged file")
    target = inside(root, f"{DAMAGED}/{rel}", "quarantine path")
    target.parent.mkdir(parents=True, exist_ok=True)
    inside(root, f"{DAMAGED}/{rel}", "quarantine path")  # again: a link planted while the folders were made
    os.replace(source, target)
    return str(target.relative_to(root))


def _rebuild(root: Path) -> tuple[Manifest, list[tuple[str, str, str]]]:
    """A manifest from the intact Parquet files on disk (module docstring) and the (table, file,
    problem) of those that are not intact; StoreError when the rebuild would count rows twice."""
    parquet, _ = _on_disk(root)
    m = Manifest()
    unreadable = []
    superseded: set[str] = set()
    for table, files in parquet.items():
        for rel in files:
            problem, n = _file_problem(root, table, rel, None, deep=False)
            if problem:
                unreadable.append((table, rel, problem))
                continue
            meta = pq.read_schema(root / rel).metadata or {}
            superseded.update(json.loads(meta[SUPERSEDES]) if SUPERSEDES in meta else [])
            m.files[table].append(rel)
            m.rows[rel] = int(n or 0)
    now = time.time()
    for table in TABLES:
        for rel in [f for f in m.files[table] if f in superseded]:
            m.files[table].remove(rel)
            m.retired.append((rel, now))
    _refuse_overlaps(root, m)
    return m, unreadable


def _refuse_overlaps(root: Path, m: Manifest) -> None:
    """The rebuild's guard: no response key and no run id in two files."""
    checks = (("responses", "model, benchmark, item_id, config, run"), ("runs", "run_id"))
    with duckdb.connect() as con:
        for table, key in checks:
            files = [str(root / f) for f in m.files[table]]
            if len(files) < 2:
                continue
            clash = con.execute(
                f"SELECT list(DISTINCT filename ORDER BY filename) AS files FROM read_parquet($f, filename = true) "
                f"GROUP BY {key} HAVING count(DISTINCT filename) > 1 LIMIT 1",
                {"f": files},
            ).fetchall()
            if clash:
                names = " and ".join(str(Path(f).relative_to(root)) for f in clash[0][0])
                raise StoreError(
                    f"{root / MANIFEST} is corrupt and cannot be rebuilt safely: {table} rows with the same key are in "
                    f"{names}; move the older file out of {root} and run `trajaudit repair` again"
                )
