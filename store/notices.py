"""Notes a command owes its user about a choice it made silently (a cell's several runs: ``backend.scope.runs``).

A view records them with :func:`say` while it opens; ``backend.cli.main`` prints them on stderr once the
command succeeded, so ``--json`` stays one document on stdout and an error stays one line. Here, in a
module that imports nothing, because the CLI's entry point imports nothing heavy before a command runs.
"""

from __future__ import annotations

_PENDING: list[str] = []


def say(note: str) -> None:
    """Record a note for the running command."""
    _PENDING.append(note)


def take() -> list[str]:
    """The notes recorded since the last call, each once, emptied."""
    notes = list(dict.fromkeys(_PENDING))
    _PENDING.clear()
    return notes
