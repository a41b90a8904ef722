"""Open pages follow the store's writes: a re-run's answer or a sweep's batch shows without a page refresh.

Every cached read is keyed on ``Store.version()`` (``pages.common.data``), so a page drawn again after a
write reads the new data and keeps everything the write did not touch. What was missing is the trigger: a
page only reran when the user acted. Each run records the store version it drew (``follow_writes``); one
watcher thread per server wakes every few seconds and, for every session whose drawn version is no longer
the published one, asks Streamlit for a rerun of that session with its last client state: the rerun
Streamlit itself makes when the app's source changes ("run on save"), over the open websocket, so the
page, its URL, widgets and scroll stay.

Why a server thread and not a ``st.fragment(run_every=...)`` in each page: a fragment's timer lives in the
browser and outlives a page switch; when it fired while the browser was taking the next page, that stale
fragment run left the new page's main area blank (one walk to the Inspector in five under load, in CI).
A server thread also spares each tab a request every few seconds.

A wake-up must cost next to nothing: it compares each followed store's manifest ``stat`` (inode, size,
mtime; a write publishes a new file by an atomic rename) with the last one seen and parses the manifest
only when that changed. ``TRAJAUDIT_LIVE_POLL_S`` sets the period (0 turns it off).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from store.errors import StoreError
from store.store import MANIFEST, Store

if TYPE_CHECKING:
    from streamlit.runtime.app_session import AppSession

POLL_ENV = "TRAJAUDIT_LIVE_POLL_S"
DEFAULT_POLL_S = 2.0

_drawn: dict[str, tuple[str, int]] = {}  # session id -> (store root, version its last run drew)
_lock = threading.Lock()
_watcher: threading.Thread | None = None
_LOG = logging.getLogger(__name__)


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


def published(root: str, seen: dict[str, tuple]) -> int | None:
    """The version the store at ``root`` publishes now (None: no store, or one being repaired). ``seen``
    keeps each root's last (stamp, version), so an unchanged manifest is never parsed again."""
    stamp = manifest_stamp(root)
    if root in seen and seen[root][0] == stamp:
        return seen[root][1]
    version = None
    with contextlib.suppress(StoreError, OSError):  # a store being repaired: the next run says so
        version = Store(root).version() if stamp is not None else None
    seen[root] = (stamp, version)
    return version


def stale(drawn: dict[str, tuple[str, int]], seen: dict[str, tuple]) -> list[str]:
    """The sessions whose drawn version is not the one their store publishes now (one check per store)."""
    now = {root: published(root, seen) for root in {root for root, _ in drawn.values()}}
    return [sid for sid, (root, version) in drawn.items() if now[root] is not None and now[root] != version]


def follow_writes(root: str, version: int) -> None:
    """Rerun this session once the store at ``root`` moves past ``version`` (the version this run drew)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    every = poll_seconds()
    ctx = get_script_run_ctx()
    if not every or ctx is None:
        return
    global _watcher
    with _lock:
        _drawn[ctx.session_id] = (root, version)
        if _watcher is None:
            _watcher = threading.Thread(target=_watch, args=(every,), name="trajaudit-live", daemon=True)
            _watcher.start()


def _watch(every: float) -> None:
    """The watcher thread's loop; a failed wake-up is logged and the next one tries again (a dead thread would
    stop every tab following writes until the server restarts). A session behind its store is rerun as
    Streamlit's run-on-save does, unless its script is running: that run reads the new version, or the next
    wake-up reruns it (a rerun now would restart it with the client state from before the user's latest action)."""
    from streamlit.runtime.app_session import AppSessionState

    seen: dict[str, tuple] = {}
    while True:
        time.sleep(every)
        try:
            with _lock:
                drawn = dict(_drawn)
            behind = set(stale(drawn, seen))
            for sid, was in drawn.items():
                session = _session(sid)
                if session is None:  # the tab was closed
                    _forget(sid, was)
                elif sid in behind and session._state != AppSessionState.APP_IS_RUNNING:
                    _forget(sid, was)  # one rerun per write: that run records the version it drew
                    session.request_rerun(session._client_state)
        except Exception:
            _LOG.exception("trajaudit: following the store's writes failed; trying again in %s s", every)


def _session(sid: str) -> AppSession | None:
    """The open session ``sid``; None once its tab is closed."""
    from streamlit.runtime import Runtime

    return Runtime.instance().get_app_session(sid) if Runtime.exists() else None


def _forget(sid: str, drawn: tuple[str, int]) -> None:
    """Drop ``sid`` unless a newer run recorded another version meanwhile."""
    with _lock:
        if _drawn.get(sid) == drawn:
            del _drawn[sid]
