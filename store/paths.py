"""Confinement and safe writes: the one place where a path named by a store meets the file system.

A store is untrusted input (shared storage, a colleague's copy, a download beside a paper). Its
manifest names the files a reader scans, a writer retires and later deletes, and ``repair`` moves
aside; its registry names checkpoints. An edited entry such as ``../victim/gc.txt``,
``/etc/passwd`` or a link planted inside the store must never reach ``open``, ``unlink`` or
``os.replace``. So every such path goes through :func:`inside`, which refuses, in one line, a path
that is absolute, climbs with ``..``, holds a NUL byte, or resolves (links followed) outside the
root; ``check`` reports the same reasons through :func:`outside_reason`.

Temporary files are the other way in: a predictable name beside the target (``.r.html.tmp``) lets
anyone who can write that folder plant a link there and have the next write go through it. So
:func:`exclusive_temp` creates its file with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under an
unpredictable name in the destination's folder and removes it on every failure, and
:func:`write_atomic` publishes it with a rename (which replaces a link at the target rather than
following it), or, when overwriting is not allowed, with a hard link, which fails atomically when
the target exists.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

from store.errors import REPAIR_HINT, StoreError, UserError
from store.schema import TABLES, folder

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def outside_reason(root: str | os.PathLike, rel: object) -> str | None:
    """Why ``rel`` (a path a store names) does not stay inside ``root``, or None when it does.

    The lexical checks come first, so a hostile entry is refused for what it says before any
    ``resolve`` touches the file system; the resolved check then catches links out of the root.
    """
    if not isinstance(rel, str) or not rel.strip():
        return "not a path"
    if "\x00" in rel:
        return "it holds a NUL byte"
    if PurePosixPath(rel).is_absolute() or PureWindowsPath(rel).is_absolute() or PureWindowsPath(rel).drive:
        return "an absolute path"
    if ".." in PurePosixPath(rel).parts:
        return "it climbs out with '..'"
    base = Path(root).resolve()
    try:
        resolved = (base / rel).resolve()
    except (OSError, RuntimeError) as exc:  # a link loop, a name too long
        return f"it cannot be resolved ({exc})"
    if not resolved.is_relative_to(base):
        return f"it resolves to {resolved}, outside the store"
    return None


def own_file_problem(rel: str, table: str | None) -> str | None:
    """Why ``rel`` is not a file of ``table`` (any table when None) as a store's writers name them:
    ``<table folder>/<name>.parquet``, one level below the root, or None when it is.

    The test is lexical and costs no system call, so an edited ``../victim/gc.txt`` or
    ``/etc/passwd`` in the manifest or a retired-files record is caught before it is read, retired,
    deleted or moved; links that leave the root are caught by :func:`inside`.
    """
    parts = rel.split("/")
    name = parts[-1]
    if (
        len(parts) != 2
        or (parts[0] != folder(table) if table else parts[0] not in {folder(t) for t in TABLES})
        or not name.endswith(".parquet")
        or name in (".parquet", "..parquet")
        or any(c in name for c in "\\\x00")
    ):
        want = f"{folder(table)}/<name>.parquet" if table else "<table>/<name>.parquet"
        return f"not one of the store's own files (expected {want} inside the store)"
    return None


def inside(root: str | os.PathLike, rel: object, what: str = "path") -> Path:
    """``root / rel`` when it stays inside ``root``; StoreError in one line naming it otherwise."""
    reason = outside_reason(root, rel)
    if reason:
        raise StoreError(f"{what} {rel!r} points outside the store {Path(root)} ({reason}); {REPAIR_HINT}")
    return Path(root) / str(rel)


@contextmanager
def exclusive_temp(target: str | os.PathLike) -> Iterator[tuple[BinaryIO, Path]]:
    """A new, empty file beside ``target`` that nobody else could have created or linked.

    Yields the open file and its path; the file is removed when the block raises, and left for the
    caller to publish (rename) when it does not.
    """
    target = Path(target)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, _CREATE, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle, tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(target: str | os.PathLike, data: bytes | str, overwrite: bool = True) -> Path:
    """Write ``data`` to ``target`` whole or not at all, through :func:`exclusive_temp`.

    ``overwrite=False`` refuses an existing file (UserError naming it) without a race: the hard
    link that publishes fails when the name exists. A folder at ``target`` is refused either way.
    Nothing is left behind on failure.
    """
    target = Path(target)
    if target.is_dir():
        raise UserError(f"{target} is a folder; name a file to write")
    payload = data.encode() if isinstance(data, str) else data
    with exclusive_temp(target) as (handle, tmp):
        handle.write(payload)
    try:
        if overwrite:
            os.replace(tmp, target)
        else:
            os.link(tmp, target, follow_symlinks=False)
    except FileExistsError:
        raise UserError(f"{target} already exists; pass --force to overwrite it") from None
    except IsADirectoryError:
        raise UserError(f"{target} is a folder; name a file to write") from None
    finally:
        tmp.unlink(missing_ok=True)
    return target
