"""Files retired from the manifest, kept on disk for a grace period: one small record per retiring write.

A write that retires files (``--replace``, a compaction) drops them from ``manifest.json`` but cannot
delete them yet: a reader may still be scanning the manifest it read before. They are deleted by a
later write, once ``RETIRED_GRACE_S`` has passed. Only writers (and ``check`` / ``repair``) need that
list, so it is kept out of the manifest, which every read parses: there it grew with every write of the
last ten minutes (about two entries a write, 3,700 after 2,000 single-row ingests, with the row count
of each), parsed by each read and parsed and rewritten by each write (``benchmarks/README.md``).

Layout: ``retired/<ns>-<hex>.json`` holding ``{"files": [...]}``, one record per write that retired
files, named by the time they were retired (nanoseconds since the epoch) and written whole under an
exclusive temporary name (``store.paths.write_atomic``). Each write lists the folder's names, opens only
the records past the grace period, deletes their files and then the record. So a write costs what it
retires and what fell due, plus one listing of names (no record read), not what the writes of the last
ten minutes retired; one ``retired.json`` parsed and rewritten by every write would only have moved
that cost out of the readers' way.

Crash order, all under the writer lock: a record is written after the manifest that drops its files,
so every record names files no manifest will list again. A write stopped between the two leaves its
retired files unrecorded: kept on disk, reported by ``check`` as orphans, removed by ``repair``. (The
other order would leave a record of files still listed; once a later write retired them, that older
record would fall due first and delete them before their grace period ran out.) Files are deleted
before their record, so a stop between those leaves a record of files already gone (deleted again,
``missing_ok``). The worst case is a retired file kept longer, never a listed one deleted.

A store is untrusted input, and a record may be edited or planted. :func:`collect` deletes only an
entry that is one of the store's own files (``store.paths.own_file_problem``), is not listed in the
manifest (compared case- and Unicode-folded, for file systems that fold names) and resolves inside the
store (``store.paths.outside_reason``): a listed entry is forgotten, any other is kept in its record,
and a record that is not one this store writes or a folder linked out of the store is left alone, for
``check`` to report and ``repair`` to mend (:func:`records`).
"""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path

from store.errors import StoreError
from store.paths import inside, outside_reason, own_file_problem, write_atomic

FOLDER = "retired"
_NAME = re.compile(r"(\d{1,20})-[0-9a-f]{12}\.json")


@dataclass(frozen=True)
class Record:
    """One entry of the ``retired/`` folder as ``check`` sees it: ``files`` when it reads as a record
    this store writes, else ``problem`` saying why not."""

    name: str
    at: float | None
    files: list[str] | None
    problem: str | None = None

    @property
    def rel(self) -> str:
        """The record's path inside the store."""
        return f"{FOLDER}/{self.name}"


def folder(root: Path) -> Path:
    """``<store>/retired``; StoreError when it is a link out of the store (``repair`` removes such a link)."""
    return inside(root, FOLDER, "retired-files folder")


def record_time(name: str) -> float | None:
    """When the files of the record ``name`` were retired (epoch seconds), or None: not a record's name."""
    match = _NAME.fullmatch(name)
    return int(match[1]) / 1e9 if match else None


def write(root: Path, files: list[str], at: float) -> Path:
    """Record ``files`` as retired at ``at``; the record's path."""
    inside(root, FOLDER, "retired-files folder").mkdir(exist_ok=True)
    target = folder(root) / _name(at)  # checked again: a link planted while the folder was made
    return write_atomic(target, json.dumps({"files": files}))


def write_all(root: Path, entries: list[tuple[str, float]]) -> None:
    """Record each (file, time retired): one record per time, so a file from a manifest's own retired
    list (a store written before this module) keeps the rest of its grace period."""
    by_time: dict[float, list[str]] = {}
    for rel, when in entries:
        by_time.setdefault(when, []).append(rel)
    for when, files in by_time.items():
        write(root, files, when)


def _name(at: float) -> str:
    return f"{max(int(at * 1e9), 0):019d}-{uuid.uuid4().hex[:12]}.json"


def read(root: Path, name: str) -> Record:
    """The record ``retired/<name>``, or why it is not one this store writes."""
    at = record_time(name)
    if at is None:
        return Record(name, None, None, "not a record this store writes (expected <ns>-<hex>.json)")
    if reason := outside_reason(root, f"{FOLDER}/{name}"):
        return Record(name, at, None, f"a link out of the store ({reason})")
    path = root / FOLDER / name
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a planted FIFO would block the writer reading it
            raise TypeError("not a regular file")
        files = json.loads(path.read_text())["files"]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise TypeError("'files' is not a list of paths")
    except (OSError, ValueError, TypeError, KeyError) as exc:
        return Record(name, at, None, f"unreadable ({type(exc).__name__}: {exc})")
    return Record(name, at, files)


def records(root: Path) -> list[Record]:
    """Every entry of the ``retired/`` folder, read (``check``, ``repair``); none when there is no folder.
    StoreError when the folder is a link out of the store."""
    try:
        names = sorted(os.listdir(folder(root)))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [read(root, name) for name in names if not name.startswith(".")]  # dot files: a writer's temporaries


def fold(rel: str) -> str:
    """``rel`` as a case- and Unicode-folding file system compares names."""
    return unicodedata.normalize("NFKC", rel).casefold()


def entry_problem(root: Path, rel: str) -> str | None:
    """Why the retired entry ``rel`` is not one of the store's own files inside it, or None."""
    if why := own_file_problem(rel, None):
        return why
    if reason := outside_reason(root, rel):
        return f"a link out of the store ({reason})"
    return None


def _older(path: Path, than: float) -> bool:
    """Whether ``path`` was last modified before ``than`` (False when it cannot be read)."""
    try:
        return path.stat().st_mtime < than
    except OSError:
        return False


def collect(root: Path, listed: list[str], now: float, grace: float, file_system_now: float | None = None) -> None:
    """Delete the files of every record retired more than ``grace`` seconds before ``now``, then the
    record. With ``file_system_now`` (the file system's time, from a file just written), a record is due
    only when its own modification time, set by the file system when it was written right after the
    manifest swap, is also that old: the name carries the retiring writer's clock, and a writer whose
    clock runs an hour behind would otherwise hand every open reader a grace of nothing. The name stays
    the first filter (no ``stat`` of a record it does not call due), which can only keep a file longer. An entry the manifest lists (``listed``; only an edit puts one there) is skipped and
    forgotten, so it is not deleted early should a later write retire that file. An entry that is not
    the store's own file (:func:`entry_problem`), or that could not be deleted, stays in its record for
    ``check`` and ``repair`` (or the next write). Never raises: the write that calls it is already
    published."""
    try:
        names = os.listdir(folder(root))
    except (OSError, StoreError):
        return
    due = [name for name in names if (at := record_time(name)) is not None and now - at > grace]
    if file_system_now is not None:
        due = [name for name in due if _older(root / FOLDER / name, file_system_now - grace)]
    if not due:
        return
    live = {fold(rel) for rel in listed}
    for name in due:
        record = read(root, name)
        if record.files is None:
            continue
        kept = []
        for rel in record.files:
            if fold(rel) in live:
                continue
            if entry_problem(root, rel):
                kept.append(rel)
                continue
            try:
                (root / rel).unlink(missing_ok=True)
            except OSError:
                kept.append(rel)
        try:
            if not kept:
                (root / record.rel).unlink(missing_ok=True)
            elif kept != record.files:
                write_atomic(root / record.rel, json.dumps({"files": kept}))
        except (OSError, StoreError):
            pass
