"""Cells that hold several runs (issue 35): which run a view shows, said on every page and command.

Two ingests of one model, benchmark and configuration under different ``--run`` names (a repeat, another
prompt) both stay in the store. A matrix takes one response per (model, item, config): the ``main`` run's,
else the run ingested first (``backend.scope.matrix._winners``). That choice is silent unless said, so a
scope lists the (model, config) pairs of its grid that hold several runs and the run it shows; ``--run``
(the URL's ``run=``) picks one run for every cell instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from backend.scope import cache_folder, delta
from backend.scope.matrix import main_only
from backend.scope.scratch import scratch
from store.schema import order_key, order_key_sql
from store.store import Store

MAIN = "main"
ENTRY = "runs-v1"  # the store's runs per cell, kept like the coverage (``backend.scope.coverage``)
KEPT = 2
Seen = list[list]  # [model, benchmark, config, run, first order key] per main run of a (model, benchmark, config)


@dataclass(frozen=True)
class RunChoice:
    """One (model, config) of a scope whose cells hold several runs, and the run the view shows there."""

    model: str
    config: str
    runs: tuple[str, ...]  # every main (non re-run) run at the pair, first ingested first (one write: by name)
    shown: str


def several_runs(
    store: Store, models: list[str], benchmark: str | None, grid: list[str], run: str | None
) -> tuple[RunChoice, ...]:
    """The pairs of ``models`` x ``grid`` (on ``benchmark``, all when None) holding more than one run, each with
    the run shown: ``run`` when given, else ``main`` where present, else the run ingested first. Kept per store
    version: a page resolves its scope several times a render, and a snapshot never changes."""
    if not grid or store.is_empty():
        return ()
    runs = _runs_per_pair(str(store.root), store.version(), tuple(models), benchmark, tuple(grid))
    return tuple(
        RunChoice(m, c, names, run or (MAIN if MAIN in names else names[0])) for m, c, names in runs if len(names) > 1
    )


@lru_cache(maxsize=256)
def _runs_per_pair(
    root: str, version: int, models: tuple[str, ...], benchmark: str | None, grid: tuple[str, ...]
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(model, config, runs first ingested first) per pair of the grid, in model then grid order (``version``
    only keys the cache: a write publishes a new version)."""
    first: dict[tuple[str, str], dict[str, int]] = {}
    for model, bench, config, name, key in _seen(Store(root)):
        if model in models and config in grid and benchmark in (None, bench):
            runs = first.setdefault((model, config), {})
            runs[name] = min(key, runs.get(name, key))
    order = {c: i for i, c in enumerate(grid)}
    pairs = sorted(first.items(), key=lambda kv: (models.index(kv[0][0]), order[kv[0][1]]))
    return tuple((m, c, tuple(sorted(runs, key=lambda r: (runs[r], r)))) for (m, c), runs in pairs)


def _seen(store: Store) -> Seen:
    """Every main run of each (model, benchmark, config) with its first row's order key, as of the store's
    manifest. Grouping 10M responses took 0.14 s of every first read after a write (the whole of a cold
    ``metrics`` on a warm matrix cache was 1 s, 2026-12-03), so the groups are kept per store version and a
    write's new rows only are grouped and merged (a ``--replace``, rows gone, groups every file again)."""
    manifest = store.manifest()
    cache_folder.settle(ENTRY)  # this process's last entry, if it is still being written
    found = cache_folder.newest_readable(cache_folder.folder(store), ENTRY, manifest.version, _read)
    meta: dict = found[1] if found else {"parts": {}, "seen": []}
    if found and meta["files"] == manifest.files["responses"]:
        return meta["seen"]
    change = delta.delta(store, manifest, "responses", meta["parts"])
    if change is None:
        meta, change = {"parts": {}, "seen": []}, delta.delta(store, manifest, "responses", {})
    assert change is not None  # against no known part nothing is missing
    seen = _merged(meta["seen"], _grouped(store, change)) if change.ranges else meta["seen"]
    out = {"parts": change.parts, "files": manifest.files["responses"], "seen": seen}

    def write(path: Path) -> dict:
        path.write_text(json.dumps(out))
        return out  # what ``_read`` returns for it: this process does not read it back

    cache_folder.publish_soon(store, manifest, ENTRY, write, KEPT)
    return seen


def _grouped(store: Store, change: delta.Delta) -> Seen:
    """The new rows' main runs per (model, benchmark, config), each with its first order key (a row from
    before the ``run`` column is the main run's); a few rows grouped in Python (``Delta.few``: no DuckDB)."""
    if change.few():
        v = change.values(store, "responses", ["model", "benchmark", "config", "run", "origin", "seq", "written_at"])
        first: dict[tuple, int] = {}
        for k in range(change.n_rows()):
            if v["origin"][k] == "rerun":  # ``main_only``
                continue
            key = (v["model"][k], v["benchmark"][k], v["config"][k], v["run"][k] or MAIN)
            at = order_key(v["seq"][k], v["written_at"][k])
            first[key] = min(at, first.get(key, at))
        return [[*key, at] for key, at in first.items()]
    with scratch() as con:
        change.view(store, con, "responses", "new_responses")
        rows = con.execute(
            f"""SELECT model, benchmark, config, coalesce(nullif(run, ''), '{MAIN}'), min({order_key_sql()})
                FROM new_responses WHERE {main_only()} GROUP BY ALL"""
        ).fetchall()
    return [list(r) for r in rows]


def _merged(old: Seen, new: Seen) -> Seen:
    """``old`` and ``new`` as one list, the earlier key kept where both hold a run."""
    first = {tuple(r[:4]): r[4] for r in old}
    for *key, at in new:
        first[tuple(key)] = min(at, first.get(tuple(key), at))
    return [[*key, at] for key, at in first.items()]


def _read(path: Path) -> dict:
    meta = json.loads(path.read_text())
    if not isinstance(meta.get("seen"), list):
        raise ValueError(f"{path}: no runs listed")
    return meta


SAY_PAIRS = 3  # pairs named one by one in the notice; more are counted (the demo's repeats fill every cell)


CLI_PICK = "Pick another with --run RUN (the URL's run=RUN)"


def notice(choices: tuple[RunChoice, ...], pick: str = CLI_PICK) -> str | None:
    """One short sentence for the pages' scope line and the CLI's stderr, None when every cell holds one run;
    ``pick`` says how to show another run where the sentence is read (a flag in the CLI, the sidebar on a page).

    Pairs holding the same runs and showing the same one are said once: named when few, counted when many,
    so a store whose every cell holds seed repeats gets one line, not a paragraph above its numbers."""
    if not choices:
        return None
    groups: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for c in choices:
        runs = tuple(sorted(c.runs, key=lambda r: (r != MAIN, r)))
        groups.setdefault((runs, c.shown), []).append(f"{c.model} at {c.config}")
    said = "; ".join(
        f"{', '.join(where) if len(where) <= SAY_PAIRS else f'{len(where)} model and configuration pairs'} "
        f"{'holds' if len(where) == 1 else 'hold'} runs {', '.join(runs)}, showing {shown}"
        for (runs, shown), where in groups.items()
    )
    return f"several runs in one cell: {said}. {pick}"
