"""How each configuration's frames are known (``trajaudit info``): responses per frames source.

docs/metrics.md "Frames seen": ``logged`` (indices stored with the response), ``reconstructed`` (the
harness sampler named at ingest, computed from the linked video at read time) or ``unknown``. Rows
written before ``frames_source`` existed count as logged where they hold indices, else unknown, as
``backend.scope.inspector.response_frames`` reads them. Text-only rows see no frames and are left out.

The counts are sums over rows, so they are kept in the store's cache folder and a write's new rows add
to them (``backend.scope.delta``), as ``backend.scope.coverage`` keeps the distinct items: a scan of
every response's ``frame_indices`` was most of a warm ``info`` at 10M rows, and after a write a cold
read of every file. An entry is a JSON file per store version (``frames-v1-<version>-<random>.json``),
written whole and renamed into place; a ``--replace`` (rows gone) counts again from every file.
"""

from __future__ import annotations

import json
from pathlib import Path

from backend.scope import cache_folder, delta
from backend.scope.matrix import main_only
from backend.scope.scratch import scratch
from store import configs
from store.store import Manifest, Store

ENTRY = "frames-v1"
KEPT = 2  # the newest, and the one a reader that started before the last write may read
SOURCE_SQL = """CASE WHEN frames_source = 'reconstructed' THEN 'reconstructed'
                     WHEN frame_indices IS NOT NULL THEN 'logged' ELSE 'unknown' END"""

Counts = dict[tuple[str, str, str, str], int]  # (model, benchmark, config, source) -> responses


def frames_known(store: Store) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """``{model: {benchmark: {config: {source: responses}}}}`` over main-run visual rows, with the
    sampler named for reconstructed rows as ``reconstructed:<sampler>``."""
    out: dict = {}
    for (model, bench, config, source), n in sorted(counts(store, store.manifest()).items()):
        out.setdefault(model, {}).setdefault(bench, {}).setdefault(config, {})[source] = n
    return {  # configurations in grid order (8f before 16f), as every other listing has them
        m: {b: {c: per[c] for c in configs.order(list(per))} for b, per in benches.items()}
        for m, benches in out.items()
    }


def counts(store: Store, manifest: Manifest) -> Counts:
    """The counts over the responses listed in ``manifest``: the newest entry, with the rows it lacks added."""
    found = cache_folder.newest_readable(cache_folder.folder(store), ENTRY, manifest.version, _read)
    held, known = found[1] if found else ({}, {})
    if found and list(known) == manifest.files["responses"] and cache_folder.all_files_present(store, manifest):
        return held  # the files it was counted from: nothing new
    store.connect().close()  # names a listed file that is missing or not the store's own (a StoreError)
    change = delta.delta(store, manifest, "responses", known)
    if change is None:  # rows were dropped: count again from every file
        held, change = {}, delta.delta(store, manifest, "responses", {})
    assert change is not None  # against no known part nothing is missing
    total = dict(held)  # a compaction adds no range: the entry is saved again with the parts' new files
    for key, n in _count(store, change).items():
        total[key] = total.get(key, 0) + n
    _save(store, manifest, total, change.parts)
    return total


def _count(store: Store, change: delta.Delta) -> Counts:
    """The new rows' responses per (model, benchmark, config, source)."""
    if not change.ranges:
        return {}
    with scratch() as con:
        change.view(store, con, "responses", "new_rows")
        rows = con.sql(
            f"""SELECT model, benchmark, config,
                       {SOURCE_SQL} || CASE WHEN frames_source = 'reconstructed' THEN ':' || coalesce(sampler, '?')
                                            ELSE '' END AS source,
                       count(*) AS n
                FROM new_rows WHERE config <> 'text' AND {main_only()} GROUP BY ALL"""
        ).fetchall()
    return {(m, b, c, s): int(n) for m, b, c, s, n in rows}


def _read(path: Path) -> tuple[Counts, delta.Parts]:
    entry = json.loads(path.read_text())
    return {tuple(row[:4]): int(row[4]) for row in entry["counts"]}, entry["parts"]


def _save(store: Store, manifest: Manifest, total: Counts, parts: delta.Parts) -> None:
    entry = {"counts": [[*key, n] for key, n in sorted(total.items())], "parts": parts}

    def write(path: Path) -> None:
        path.write_text(json.dumps(entry))

    cache_folder.publish_version(store, manifest, ENTRY, write, KEPT)
