"""Open pages follow the store's writes: a re-run's answer or a sweep's batch shows without a page refresh.

Every cached read is keyed on ``Store.version()`` (``pages.common.data``), so a page drawn again after a
write reads the new data and keeps everything the write did not touch. What was missing is the trigger: a
page only reran when the user acted. ``follow_writes`` adds a fragment that wakes every few seconds and
reruns the app when the published version moved past the one the page was drawn from (a script rerun over
the open websocket, not a browser reload: widgets, scroll and session state stay).

A wake-up must cost next to nothing, since every open tab pays it: it compares the manifest file's
``stat`` (inode, size, mtime; a write publishes a new file by an atomic rename) with the last one seen and
parses the manifest only when that changed. ``TRAJAUDIT_LIVE_POLL_S`` sets the period (0 turns it off).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import streamlit as st

from store.errors import StoreError
from store.store import MANIFEST, Store

POLL_ENV = "TRAJAUDIT_LIVE_POLL_S"
DEFAULT_POLL_S = 2.0


def poll_seconds() -> float:
    """The period of the check, from ``TRAJAUDIT_LIVE_POLL_S`` (seconds; 0: off; not a number: the default)."""
    try:
        value = float(os.environ.get(POLL_ENV, DEFAULT_POLL_S))
    except ValueError:
        return DEFAULT_POLL_S
    return max(value, 0.0)


def manifest_stamp(root: str) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of the published manifest; None while there is none."""
    try:
        s = (Path(root) / MANIFEST).stat()
    except OSError:
        return None
    return s.st_ino, s.st_size, s.st_mtime_ns


def moved(root: str, version: int, seen: dict) -> bool:
    """Whether the store published a version other than ``version``; ``seen`` keeps the last stamp read, so
    an unchanged manifest is never parsed (the first check of a run parses it once: a write may have landed
    between the run reading its version and this check)."""
    stamp = manifest_stamp(root)
    if "stamp" in seen and stamp == seen["stamp"]:
        return False
    seen["stamp"] = stamp
    with contextlib.suppress(StoreError, OSError):  # a store being repaired: the next run says so
        return Store(root).version() != version
    return False


def follow_writes(root: str, version: int) -> None:
    """Rerun the app once the store at ``root`` moves past ``version`` (the version this run drew)."""
    every = poll_seconds()
    if not every:
        return
    seen: dict = {}  # per full run: a fragment rerun calls the function saved by the last full run

    @st.fragment(run_every=every)
    def watch() -> None:
        if moved(root, version, seen):
            st.rerun()

    watch()
