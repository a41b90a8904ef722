"""The write log: ``log/<version>.json``, the manifest each write published, written before it is published.

A write is **committed** when its log entry exists: the entry is written whole (temporary name, then
rename) after every data file of the write is in place, and before ``manifest.json`` is swapped. So:

* a write killed before its entry left only files no entry lists: uncommitted, never taken by a rebuild
  (``repair`` moves them to ``damaged/``);
* a write killed between its entry and the manifest swap is committed but not yet visible: the next
  write (``Store.writer``) or ``repair`` publishes it (rolls forward) before doing anything else;
* a lost or corrupt ``manifest.json`` is restored from the newest entry, which lists exactly the files
  of the last committed write (``store.health``).

Each entry is a whole manifest (the live files, tens to a few hundred names), not a diff, so a rebuild
reads one entry, and a write deletes entries more than ``KEEP`` versions old: the folder stays small
whatever the store's age. An entry also names the files its write retired (``retires``), so a write
rolled forward records them in ``retired/`` as its own settle would have.

Entries are named by version, zero-padded, so their names sort as their versions.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from store.paths import inside, write_atomic

FOLDER = "log"
KEEP = 16  # entries kept behind the newest (a rebuild needs only the newest; the rest are for inspection)
_NAME = re.compile(r"(\d{20})\.json")


def name(version: int) -> str:
    """The entry of ``version``, relative to the store."""
    return f"{FOLDER}/{version:020d}.json"


def folder(root: Path) -> Path:
    """``<store>/log``; StoreError when it is a link out of the store."""
    return inside(root, FOLDER, "write-log folder")


def write(root: Path, version: int, text: str) -> None:
    """Commit: write the entry of ``version`` whole (the caller holds the writer lock)."""
    folder(root).mkdir(exist_ok=True)
    write_atomic(inside(root, name(version), "write-log entry"), text)


def read(root: Path, version: int) -> str | None:
    """The text of the entry of ``version``, or None when there is none."""
    try:
        return inside(root, name(version), "write-log entry").read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None


def versions(root: Path) -> list[int]:
    """The versions that have an entry, ascending; none when there is no log."""
    try:
        names = os.listdir(folder(root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(m[1]) for n in names if (m := _NAME.fullmatch(n)))


def prune(root: Path, newest: int) -> None:
    """Delete the entries older than ``newest - KEEP``. Never raises: the write calling it is published."""
    try:
        for v in versions(root):
            if v < newest - KEEP:
                (root / name(v)).unlink(missing_ok=True)
    except OSError:
        pass
