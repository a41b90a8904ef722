"""Server-side time of each script run, for measuring where a user's wait goes (opt-in).

With ``TRAJAUDIT_RUN_LOG=1`` every run logs ``trajaudit run: <page> <seconds> s`` to the server's
stderr; with ``TRAJAUDIT_RUN_LOG=<folder>`` each run is also profiled (``cProfile``) into
``<folder>/<n>-<page>.prof``. ``benchmarks/dashboard_browser.py`` sets it to put the server's share
beside each wait it measures in the browser (the rest is the browser drawing and the round trip).
Off by default: a run then pays nothing but one environment lookup.
"""

from __future__ import annotations

import cProfile
import itertools
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV = "TRAJAUDIT_RUN_LOG"
_runs = itertools.count(1)


@dataclass
class RunTimer:
    """One script run's clock (and profiler, when a folder was given)."""

    page: str
    enabled: bool
    folder: Path | None = None
    started: float = field(default_factory=time.perf_counter)
    profiler: cProfile.Profile | None = None

    def stop(self) -> None:
        if not self.enabled:
            return
        seconds = time.perf_counter() - self.started
        n = next(_runs)
        if self.profiler is not None and self.folder is not None:
            self.profiler.disable()
            self.profiler.dump_stats(self.folder / f"{n:04d}-{self.page}.prof")
        print(f"trajaudit run: {self.page} {seconds:.3f} s", file=sys.stderr, flush=True)


def start(page: str) -> RunTimer:
    """A timer for this run: a no-op unless ``TRAJAUDIT_RUN_LOG`` is set."""
    value = os.environ.get(ENV, "")
    if not value:
        return RunTimer(page, enabled=False)
    folder = None if value == "1" else Path(value)
    timer = RunTimer(page, enabled=True, folder=folder)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        timer.profiler = cProfile.Profile()
        timer.profiler.enable()
    return timer
