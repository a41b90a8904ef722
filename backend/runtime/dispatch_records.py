"""The dispatcher's remote actors, where the Workers page and ``trajaudit jobs`` read them.

A dispatcher heartbeats each of its actors into the queue's ``workers`` table (so a re-run panel
sees the model served and starts no local worker, and an actor whose dispatcher died ages out of
"online" like any worker), and keeps what that table has no column for (node, GPU, jobs done) in
``<store>/logs/dispatch-<dispatcher id>.json``, rewritten whole on every change. A reader keeps the
actors whose heartbeat is current: a file left by a killed dispatcher shows nothing.
Imports nothing heavy (the dashboard reads it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import msgspec

from backend.contracts.base import to_json
from backend.contracts.store import RemoteActor
from store.paths import inside, write_atomic

LOG_DIR = "logs"
PREFIX = "dispatch-"


def records_path(store_root: str | os.PathLike, dispatcher_id: str) -> Path:
    """The dispatcher's record file, inside the store's logs folder."""
    folder = inside(store_root, LOG_DIR, "dispatcher log folder")
    return folder / f"{PREFIX}{dispatcher_id}.json"


def save(path: Path, actors: Iterable[RemoteActor]) -> None:
    """Publish the actors' records whole (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(to_json(list(actors)), indent=1))


def remote_actors(store_root: str | os.PathLike, online: set[str]) -> list[RemoteActor]:
    """Every dispatcher's actors whose worker id is ``online`` (a current heartbeat), by model then node."""
    folder = Path(store_root) / LOG_DIR
    out: list[RemoteActor] = []
    for path in sorted(folder.glob(f"{PREFIX}*.json")) if folder.is_dir() else []:
        try:
            actors = json.loads(path.read_text())
        except (OSError, ValueError):  # removed or replaced between the glob and the read
            continue
        out += [msgspec.convert(a, RemoteActor) for a in actors if a.get("worker_id") in online]
    return sorted(out, key=lambda a: (a.model, a.node_ip or "", a.worker_id))
