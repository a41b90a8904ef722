"""How the programs log: the worker, the dispatcher, the sweep and the CLI write timestamped, levelled lines to stderr.

One logger tree, ``trajaudit``, with one handler: ``2026-12-03 14:05:01,234 INFO trajaudit.worker: job 3
done``. It is set up on first use by any of them (a worker run inside a test or a script logs the same
lines as ``trajaudit worker``), at INFO; ``trajaudit --verbose`` lowers it to DEBUG. The handler writes to
whatever ``sys.stderr`` is when a line is written (the CLI's tests and ``redirect_stderr`` swap it), and the
tree does not propagate to the root logger, so a library that configures the root (Ray, Streamlit) neither
doubles nor swallows these lines. A dashboard-started worker's stderr is its log file
(``backend.runtime.worker_pool``), so those lines carry their time too.
"""

from __future__ import annotations

import logging
import sys

ROOT = "trajaudit"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _CurrentStderr(logging.StreamHandler):
    """A stream handler on ``sys.stderr`` as it is at each write, not as it was when the handler was made."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass  # always the current sys.stderr


def get(name: str) -> logging.Logger:
    """The logger ``trajaudit.<name>``, with the tree's handler installed on first use."""
    root = logging.getLogger(ROOT)
    if not root.handlers:
        handler = _CurrentStderr()
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        root.propagate = False
    return logging.getLogger(f"{ROOT}.{name}")


def configure(verbose: bool) -> None:
    """The CLI's ``--verbose``: DEBUG lines too; INFO and above otherwise."""
    get("cli")
    logging.getLogger(ROOT).setLevel(logging.DEBUG if verbose else logging.INFO)
