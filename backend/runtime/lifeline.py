"""Tie a background process's life to another one's: a worker the dashboard started dies with the dashboard.

The dashboard starts CPU workers detached (their own session, so a Ctrl-C in the dashboard's terminal
does not tear a job in half), and a detached process outlives its parent. Each such worker therefore
watches the dashboard's pid and stops itself when that process is gone. A pid alone can be recycled
by an unrelated process, so on Linux the process's start time (``/proc/<pid>/stat``) is part of its
identity; elsewhere the pid is checked alone. Nothing here imports anything heavy: the watch starts
before the worker loads its model.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.5


def identity(pid: int) -> str | None:
    """``pid`` plus its start time (clock ticks since boot) where ``/proc`` has it; None when no such process."""
    if Path("/proc/self/stat").is_file():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return f"{pid}:{fields[19]}" if fields[0] != "Z" else None  # field 22 of stat; a zombie has ended
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, owned by someone else
    return str(pid)


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
