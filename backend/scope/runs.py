"""Cells that hold several runs (issue 35): which run a view shows, said on every page and command.

Two ingests of one model, benchmark and configuration under different ``--run`` names (a repeat, another
prompt) both stay in the store. A matrix takes one response per (model, item, config): the ``main`` run's,
else the run ingested first (``backend.scope.matrix._winners``). That choice is silent unless said, so a
scope lists the (model, config) pairs of its grid that hold several runs and the run it shows; ``--run``
(the URL's ``run=``) picks one run for every cell instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from backend.scope.matrix import main_only
from store.schema import order_key_sql
from store.store import Store

MAIN = "main"


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
    bench = "" if benchmark is None else "AND benchmark = $benchmark"
    with Store(root).connect() as con:
        rows = con.execute(
            f"""SELECT model, config, run, min({order_key_sql()}) AS first
                FROM responses
                WHERE list_contains($models, model) AND list_contains($grid, config) AND {main_only()} {bench}
                GROUP BY ALL ORDER BY model, config, first, run""",
            {"models": list(models), "grid": list(grid)} | ({} if benchmark is None else {"benchmark": benchmark}),
        ).fetchall()
    found: dict[tuple[str, str], list[str]] = {}
    for model, config, name, _ in rows:
        found.setdefault((model, config), []).append(name or MAIN)  # rows from before the column: the main run
    order = {c: i for i, c in enumerate(grid)}
    pairs = sorted(found.items(), key=lambda kv: (models.index(kv[0][0]), order[kv[0][1]]))
    return tuple((m, c, tuple(runs)) for (m, c), runs in pairs)


SAY_PAIRS = 3  # pairs named one by one in the notice; more are counted (the demo's repeats fill every cell)


def notice(choices: tuple[RunChoice, ...]) -> str | None:
    """One short sentence for the pages' scope line and the CLI's stderr, None when every cell holds one run.

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
    return f"several runs in one cell: {said}. Pick another with --run RUN (the URL's run=RUN)"
