"""A view: one store version, one resolved scope and its matched matrix, built by one loader.

Every ``backend.views`` function takes a ``View``: the CLI opens one from its flags
(``open_view``), the pages open the same one from the sidebar (``pages.common.data.view``, which
caches it and hands ``open_view`` the cached unfiltered matrix to cut). Because both build it with
the same function, a page and its CLI twin (``twin``) read the same matrix.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from backend.scope.filters import split_list
from backend.scope.matrix import Matrix, available, canonical_grid
from backend.scope.paging import default_models
from backend.scope.resolve import Resolved, Scope, check_benchmark, command_line, default_benchmark
from store.errors import UserError
from store.store import Store


@dataclass(frozen=True, eq=False)
class View:
    """What a page draws and its CLI twin prints: the store (at ``version``), the resolved scope, the
    accuracy matrix and the score matrix (they differ only under ``--score-cutoff none``).

    Not hashable by value (the matrix is large): caches key it on ``key()``.
    """

    store: Store
    version: int
    resolved: Resolved
    matrix: Matrix
    scores: Matrix  # the score matrix (``Resolved.load_views``): every matched item, the score cut-off applied

    @property
    def scope(self) -> Scope:
        return self.resolved.scope

    @property
    def root(self) -> str:
        return str(self.store.root)

    def key(self) -> str:
        """What a result computed on this view depends on: store, version and the resolved scope (the
        matrix is fixed by them). Cheap, unlike hashing the dataclass (see ``Resolved.key``)."""
        return view_key(self.root, self.version, self.resolved)

    def twin(self, command: list[str], *extra: str, model_flag: str | None = "--models") -> str:
        """The view's CLI twin: the exact ``trajaudit COMMAND --store ... <scope flags> EXTRA`` line."""
        return command_line(command, self.resolved, self.root, *extra, model_flag=model_flag)


def view_key(root: str, version: int, resolved: Resolved) -> str:
    """``View.key`` from its parts (the pages key the cached view itself on it, before it exists)."""
    return repr((root, version, resolved.key()))


def args_view(args: argparse.Namespace, focus: str | None = None, pair: tuple[str, str] | None = None) -> View:
    """The view of the scope that ``add_scope_args``' flags name, on ``--store``: the opening of every command
    that reads one scope. ``focus`` (a command's ``--model``) joins ``--models`` after them, as on the pages.
    ``pair`` (a command's ``--from``/``--to``): when the default grid lacks either, the grid is the pair, so
    any two configurations of the scope compare without ``--grid``."""
    store = Store(args.store)
    scope = Scope.from_args(args, models=args_models(args, store, focus))
    resolved = scope.resolve(store)
    if pair is not None and not scope.grid and not set(canonical_grid(list(pair))) <= set(resolved.scope.grid):
        # a pair the default grid leaves out (8f against 8f+cot): the pair is the grid, as --grid A,B would say
        resolved = dataclasses.replace(scope, grid=pair).resolve(store)
    return open_view(store, resolved)


def args_models(args: argparse.Namespace, store: Store, focus: str | None = None) -> list[str]:
    """The models the scope flags name: ``--models`` with ``focus`` (a command's ``--model``) after them, else the
    models the dashboard opens with (``opening_models``), so a command run with no model prints what the first
    screen shows."""
    given = split_list(getattr(args, "models", None)) or []
    if focus is not None:
        return list(dict.fromkeys([*given, focus]))
    return given or opening_models(store, args.benchmark)


def opening_models(store: Store, benchmark: str | None) -> list[str]:
    """The models the sidebar selects when the dashboard opens on ``benchmark`` (default: the one it opens on,
    ``default_benchmark``): ``backend.scope.paging.default_models``. The first is its focus model."""
    info = available(store)
    check_benchmark(info, benchmark)
    bench = benchmark if benchmark is not None else default_benchmark(info)
    models = [] if bench is None else default_models(info, bench)
    if not models:
        raise UserError(f"the store at {store.root} holds no responses: ingest some first (trajaudit ingest)")
    return models


def open_view(
    store: Store,
    resolved: Resolved,
    *,
    include_answers: bool = False,
    base: Matrix | None = None,
    version: int | None = None,
) -> View:
    """The view of ``resolved`` on ``store``: its matrices by ``Resolved.load_views`` (``base``: see there), at
    ``version`` (the pages pass the version their cache key names; default: the store's now)."""
    version = store.version() if version is None else version
    matrix, scores = resolved.load_views(store, include_answers, base)
    return View(store, version, resolved, matrix, scores)
