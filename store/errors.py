"""Errors a user can act on. The CLI prints their message and exits 2; pages show it in a box."""

from __future__ import annotations

import errno
import sys


class UserError(Exception):
    """Bad input or an impossible request: the message names what is wrong and where."""


class StoreError(UserError):
    """A store folder that cannot be read or written as it is (a file, read-only, damaged)."""


REPAIR_HINT = (
    "run `trajaudit check` to see what is wrong and `trajaudit repair` to rebuild the store from its intact files"
)


def user_message(exc: BaseException) -> str | None:
    """One line for a failure the user caused or can fix (permissions, paths, damaged files), or
    None for a bug, which should keep its traceback."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        why = {
            errno.ENOSPC: "no space left on the device",
            errno.EDQUOT: "the disk quota is exceeded",
            errno.EFBIG: "a file-size limit was reached",
        }[exc.errno]
        return (
            f"{why} while writing {exc.filename or 'a file'}; nothing was published (the store is as it was): "
            "free some space and run the command again"
        )
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return (
            f"{exc.filename or 'a file'} is a link; trajaudit never writes through a link planted in a store: remove it"
        )
    if isinstance(exc, PermissionError) or (isinstance(exc, OSError) and exc.errno == errno.EROFS):
        return f"{exc.filename or 'a file'}: permission denied (read-only); use a folder you can write, or fix its permissions"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError, IsADirectoryError)):
        return f"{exc.filename or 'a path'}: {exc.strerror or exc}; check the path (or --store / $TRAJAUDIT_STORE)"
    sqlite3 = sys.modules.get("sqlite3")  # only the job queue raises its errors, having imported it (a read need not)
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
        return f"the job queue database (jobs.sqlite in the store) cannot be used: {exc}; stop the workers and retry"
    if type(exc).__module__.startswith("duckdb") and ".parquet" in str(exc):
        return f"a store file cannot be read ({str(exc).splitlines()[0]}); {REPAIR_HINT}"
    return None
