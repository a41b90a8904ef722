"""``load_matrix``: the matched matrix of a scope, from the store's kept cache where there is one.

Apart from ``backend.scope.matrix`` (the matrix, its one-pass loader and the rules it shares with the
cache) because it reads through ``backend.scope.matrix_cache``, which builds on that module: the
entry point sits above both, so neither imports the other.
"""

from __future__ import annotations

from backend.scope import matrix_cache
from backend.scope.filters import ItemFilter
from backend.scope.matrix import Matrix, _matched_grid, available, matched, narrow, scan
from store.errors import UserError
from store.store import Store


def load_matrix(
    store: Store,
    models: list[str],
    benchmark: str | None = None,
    grid: list[str] | None = None,
    item_filter: ItemFilter | None = None,
    include_answers: bool = False,
    include_reruns: bool = False,
    *,
    run: str | None = None,
) -> Matrix:
    """Load the matched matrix of ``models`` on ``benchmark`` (all when None) over ``grid``.

    Without ``grid``, the configurations every model has, in ``configs.order``; with it, exactly
    those in that order (``UserError`` for a malformed label or a model lacking one). Items in scope
    are those passing ``item_filter`` with at least one response in the grid; the ones lacking some
    (model, config) are excluded and counted. Live re-runs (``origin = 'rerun'``) are left out
    unless ``include_reruns``: they are an overlay, never part of a matrix by default.

    The unfiltered matrix of a large store is kept in the store's cache folder and patched after a
    write (``backend.scope.matrix_cache``); a filter is applied to it in memory when that is exact (``narrow``).
    ``run``: only that run's responses (``--run``), read without the cache.
    """
    models = list(dict.fromkeys(models))
    if not models:
        raise UserError("no model given")
    grid = _matched_grid(available(store), models, benchmark, grid, include_reruns)
    if (
        run is not None
    ):  # one run for every cell (backend.scope.runs): read directly, the cache holds the default choice
        return matched(scan(store, models, benchmark, grid, item_filter, include_answers, include_reruns, run))
    if include_answers:
        return matched(scan(store, models, benchmark, grid, item_filter, True, include_reruns))
    full = matrix_cache.load(store, models, benchmark, grid, include_reruns)
    cut = narrow(store, full, item_filter)
    return cut if cut is not None else matched(scan(store, models, benchmark, grid, item_filter, False, include_reruns))
