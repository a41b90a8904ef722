"""Tie a background process's life to another one's: a worker the dashboard started dies with the dashboard.

The dashboard starts CPU workers detached (their own session, so a Ctrl-C in the dashboard's terminal
does not tear a job in half), and a detached process outlives its parent. Each such worker therefore
watches the dashboard's pid and stops itself when that process is gone. A pid alone can be recycled
by an unrelated process, so the process's start time (psutil's ``create_time``, on every OS) is part
of its identity. Nothing here imports anything heavy: the watch starts before the worker loads its model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psutil

POLL_S = 0.5


def identity(pid: int) -> str | None:
    """``pid`` plus its start time; None when no such process (or only its zombie is left)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return f"{pid}:{process.create_time()}"
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        return str(pid)  # alive, owned by someone else (its start time hidden)


def watch(pid: int, on_gone: Callable[[], None], poll_s: float = POLL_S) -> threading.Thread:
    """Call ``on_gone`` once (from a daemon thread) as soon as the process ``pid`` is seen at start is gone."""
    seen = identity(pid)

    def loop() -> None:
        while seen is not None and identity(pid) == seen:
            time.sleep(poll_s)
        on_gone()

    thread = threading.Thread(target=loop, name=f"lifeline-{pid}", daemon=True)
    thread.start()
    return thread
