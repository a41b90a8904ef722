"""Derived data kept beside a store (``<store>/.cache/``), so a fresh process does not rescan 10M rows.

Everything here is a pure function of immutable Parquet files (each write adds new, uniquely named
files and swaps the manifest), so an entry is keyed on the files it was computed from: a write
changes the key, and a stale entry is never read. Entries are written to a temporary name and
renamed into place (readers never see half a file); a store that cannot be written simply gets no
cache. ``trajaudit check`` / ``repair`` ignore this folder; deleting it only costs time.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from store.paths import inside
from store.store import Manifest, Store

FOLDER = ".cache"
KEEP = 8  # entries of one kind kept (newest first): enough for the scopes a dashboard flips between
T = TypeVar("T")
# Per prefix, this process's entries being written (and, under PRUNING, old entries being deleted): what
# ``settle`` waits for. Threads, not processes, so the process must wait for them before it exits.
_PUBLISHING: dict[str, list[threading.Thread]] = {}
_PUBLISHING_LOCK = threading.Lock()
PRUNING = "\0prune"  # not a prefix any entry can have


def folder(store: Store) -> Path:
    """``<store>/.cache``; StoreError when it is a link out of the store, whose entries ``prune``
    would otherwise delete (``repair`` removes such a link)."""
    return inside(store.root, FOLDER, "cache folder")


def file_set_key(manifest: Manifest, tables: tuple[str, ...], *extra: object) -> str:
    """A short hash of the live files of ``tables`` and any ``extra`` parameters."""
    text = json.dumps([[manifest.files[t] for t in tables], [repr(e) for e in extra]])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def all_files_present(store: Store, manifest: Manifest) -> bool:
    """Whether every listed file is on disk (else ``Store.connect`` names the missing one)."""
    return all((store.root / rel).exists() for files in manifest.files.values() for rel in files)


def read_json(path: Path) -> object | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def remove(path: Path) -> None:
    """Delete an entry, file or folder (best effort)."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def discard(paths: list[Path]) -> None:
    """Delete entries off the reader's path, in a thread of their own: freeing the last copy of a matrix
    entry's arrays (100 MB at 10M responses) took 0.27 s of the first Overview after a re-run (the read two
    versions after the ingest that had replaced them; a load of 4 on this 2-core machine). A daemon thread,
    which ``settle()`` waits for: the CLI settles before its command returns, so nothing it started runs on
    after it. Readers are unaffected either way (a pruned folder stays readable to one mapping it, or fails
    its read and is rebuilt)."""
    if paths:
        thread = threading.Thread(target=_remove_all, args=(paths,), name="trajaudit-cache-prune", daemon=True)
        with _PUBLISHING_LOCK:  # started under the lock: ``settle`` never sees it listed and not yet alive
            _PUBLISHING[PRUNING] = [t for t in _PUBLISHING.get(PRUNING, []) if t.is_alive()] + [thread]
            thread.start()


def _remove_all(paths: list[Path]) -> None:
    for path in paths:
        remove(path)


def write_atomic(path: Path, write) -> bool:
    """``write(tmp_path)`` (a file or a folder) then rename onto ``path``; False, and nothing left
    behind, when the store cannot be written or another process published the same entry first."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
        return True
    except OSError:
        remove(tmp)
        return False


def write_json(path: Path, data: object) -> bool:
    return write_atomic(path, lambda tmp: tmp.write_text(json.dumps(data)))


def prune(directory: Path, pattern: str, keep: int = KEEP) -> None:
    """Delete all but the ``keep`` newest entries matching ``pattern`` (best effort)."""
    try:
        entries = sorted(directory.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    discard(entries[keep:])


def versioned(prefix: str, version: int) -> str:
    """The name of a new entry of ``prefix`` at store ``version`` (random tail: two processes writing the
    same version never collide; each entry is written whole and never changed)."""
    return f"{prefix}-{version:012d}-{uuid.uuid4().hex[:8]}"


def versions(directory: Path, prefix: str) -> list[tuple[int, Path]]:
    """The entries of ``prefix`` (``versioned`` names) as (store version, path), newest first."""
    out = []
    for path in directory.glob(f"{prefix}-*"):
        try:
            out.append((int(path.name[len(prefix) + 1 :].split("-")[0]), path))
        except ValueError:
            continue
    return sorted(out, reverse=True)


def newest_readable(directory: Path, prefix: str, version: int, read: Callable[[Path], T]) -> tuple[Path, T] | None:
    """The newest entry of ``prefix`` written at store ``version`` or before (a later one holds rows a reader of
    ``version`` does not list) that ``read`` can read, with what it read; an entry ``read`` fails on (OSError,
    ValueError, KeyError: pruned while read, or half-known) is passed over for the one before it. An entry this
    process published itself is not read back: ``publish_soon`` kept what it wrote (``_HELD``)."""
    held = _HELD.get(prefix)
    for at, path in versions(directory, prefix):
        if at > version:
            continue
        if held is not None and held[0] == path:
            return path, cast(T, held[1])
        try:
            return path, read(path)
        except (OSError, ValueError, KeyError):
            continue
    return None


# Per prefix, the entry this process published last and what ``read`` would return for it. The next read in
# this process patches from it (the dashboard after each write) without parsing its meta.json again, which
# names every part a compacted file holds (230 KB after 4,000 writes: 1.4 ms a parse, 2026-12-02) or mapping
# its arrays (2-4 ms). A few prefixes only: the states share their arrays with the matrices the pages hold.
_HELD: dict[str, tuple[Path, object]] = {}
HELD_PREFIXES = 4


def publish_soon(
    store: Store,
    manifest: Manifest,
    prefix: str,
    write: Callable[[Path], object],
    kept: int,
    then: Callable[[], None] | None = None,
) -> None:
    """``publish_version``, its entry written in a thread of its own, then ``then()`` if it published: the
    reader that patched a state already holds it, so writing it to disk (100 MB of matrix arrays at 10M
    responses: 80 ms of the first Overview after a one-row ingest, 2026-12-02) is not on its path. Whether the
    store moved on during the read is asked here, at the end of the read (a write after it does not make
    the entry wrong, and a sweep writing every second would otherwise never see one published). The next read
    of ``prefix`` in this process waits for the entry first (``settle``), so it finds it instead of patching
    or scanning again; it usually comes later than the write takes. A daemon thread, which ``settle()``
    waits for: the CLI settles before its command returns, so a CLI process finishes the entry and then
    exits at once. ``write`` must only read what it is given, which nobody changes
    afterwards (a patched state's arrays are made read-only first); what it returns, unless None, is what
    reading the entry back would return, kept for this process's next ``newest_readable`` (``_HELD``)."""
    if store.manifest().version != manifest.version:
        return

    def run() -> None:
        held: list[object] = []
        path = _publish(store, manifest, prefix, lambda tmp: held.append(write(tmp)), kept)
        if path is None:
            return
        if held[0] is not None:
            with _PUBLISHING_LOCK:
                _HELD.pop(prefix, None)
                _HELD[prefix] = (path, held[0])
                while len(_HELD) > HELD_PREFIXES:  # the least recently published first
                    del _HELD[next(iter(_HELD))]
        if then is not None:
            then()

    thread = threading.Thread(target=run, name=f"trajaudit-cache-publish-{prefix}", daemon=True)
    with _PUBLISHING_LOCK:  # started under the lock: ``settle`` never sees it listed and not yet alive
        _PUBLISHING[prefix] = [t for t in _PUBLISHING.get(prefix, []) if t.is_alive()] + [thread]
        thread.start()


def settle(prefix: str | None = None) -> None:
    """Wait until this process's entries of ``prefix`` being published are written (None: every prefix's,
    and every deletion of old entries: what the CLI waits for before its command returns)."""
    while True:  # a publication prunes, which starts a thread of its own
        with _PUBLISHING_LOCK:
            pending = [t for key, threads in _PUBLISHING.items() if prefix in (None, key) for t in threads]
        if not any(t.is_alive() for t in pending):
            return
        for thread in pending:
            thread.join()


# A process that exits with an entry still being written (a script calling ``load_matrix``; the CLI settles
# itself) would have the interpreter kill its daemon thread inside DuckDB's or Arrow's C++ code, which aborts
# the process ("terminate called after throwing..."): exit waits for them instead.
atexit.register(settle)


def publish_version(store: Store, manifest: Manifest, prefix: str, write: Callable[[Path], None], kept: int) -> bool:
    """Write an entry of ``prefix`` at ``manifest``'s version (``write_atomic``), unless the store moved on
    during the read (an entry holds what its recorded files hold, no more); then keep the ``kept`` newest
    versions (one reader that started before the last write may still read the one before)."""
    return store.manifest().version == manifest.version and _publish(store, manifest, prefix, write, kept) is not None


def _publish(store: Store, manifest: Manifest, prefix: str, write: Callable[[Path], None], kept: int) -> Path | None:
    """The entry written and older versions pruned: its path, or None when it could not be written."""
    directory = folder(store)
    path = directory / versioned(prefix, manifest.version)
    if not write_atomic(path, write):
        return None
    discard([old for _, old in versions(directory, prefix)[kept:]])
    return path
