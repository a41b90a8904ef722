"""What a view is about, as one value: the contract between the sidebar, the URL, the CLI and the reports.

A ``Scope`` names a benchmark, models, a grid (or "the default grid"), item filters, a trajectory
tag, the within-noise toggle and whether re-runs are compared. Every page builds one from the
sidebar and every CLI command from its flags (``from_args``); ``resolve`` turns "the default grid"
into docs/metrics.md's default grid, stating which configurations it left out and why
(``grid_excluded``); ``load`` gives the matched matrix. Because both sides go through these three
steps, a page and its CLI twin (``to_argv``) cannot disagree about what they look at.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from backend.contracts.base import UNSET
from backend.contracts.common import RunsInCell, ScopeHeader
from backend.contracts.store import StoreContents
from backend.scope import binary
from backend.scope.filters import ItemFilter, split_list
from backend.scope.loader import load_matrix
from backend.scope.matrix import Matrix, available, canonical_grid, narrow, restrict
from backend.scope.runs import RunChoice, several_runs
from backend.scope.tags import TAGS, tag_masks
from store import configs, registry
from store.errors import UserError
from store.store import Store

COVERAGE = 0.9  # docs/metrics.md: a default-grid configuration covers at least 90% of the benchmark's items


@dataclass(frozen=True)
class Scope:
    """A view's selection. Hashable, so pages cache every result on it.

    ``grid`` empty means "the default grid" (resolved per store by ``resolve``). ``tag`` selects
    the items carrying that trajectory tag for ``tag_model`` (default: the first model).
    """

    benchmark: str | None
    models: tuple[str, ...]
    grid: tuple[str, ...] = ()
    item_filter: ItemFilter = field(default_factory=ItemFilter)
    tag: str | None = None
    tag_model: str | None = None
    beyond_noise: bool = False
    include_reruns: bool = False
    score_cutoff: str = binary.STORED  # how scored responses enter accuracy (backend.scope.binary)
    run: str | None = None  # one run for every cell (--run); None: main, else the first ingested (backend.scope.runs)

    def __post_init__(self) -> None:
        object.__setattr__(self, "models", tuple(dict.fromkeys(self.models)))
        object.__setattr__(self, "grid", tuple(self.grid))
        object.__setattr__(self, "score_cutoff", binary.canonical_cutoff(self.score_cutoff))
        if not self.models:
            raise UserError("no model given")
        if self.tag is not None and self.tag not in TAGS:
            raise UserError(f"unknown trajectory tag {self.tag!r}: expected one of {', '.join(TAGS)}")
        if self.tag_model is not None and self.tag_model not in self.models:
            raise UserError(f"tag model {self.tag_model!r} is not one of the models ({', '.join(self.models)})")

    @property
    def focus(self) -> str:
        """The model whose trajectory tags select items (and that single-model views draw)."""
        return self.tag_model or self.models[0]

    def resolve(self, store: Store, info: StoreContents | None = None) -> Resolved:
        """The benchmark and grid this scope means on ``store``: the given ones, or the benchmark the dashboard
        opens on (``default_benchmark``) and docs/metrics.md's default grid."""
        if info is None:
            info = available(store)
        if self.benchmark is None and (bench := default_benchmark(info, self.models)) is not None:
            chosen = dataclasses.replace(self, benchmark=bench).resolve(store, info)
            return dataclasses.replace(chosen, benchmark_source="default", benchmarks=tuple(info.benchmarks))
        self._check_names(info)
        if self.grid:
            grid, source = tuple(canonical_grid(list(self.grid))), "given"
        else:
            grid, source = tuple(default_grid(info, list(self.models), self.benchmark, store.root)), "default"
        runs = several_runs(store, list(self.models), self.benchmark, list(grid), self.run)
        return Resolved(dataclasses.replace(self, grid=grid), source, excluded_configs(info, self, grid), runs=runs)

    def _check_names(self, info: StoreContents) -> None:
        check_benchmark(info, self.benchmark)
        for m in self.models:
            have = info.configs.get(m, {})
            if not have or (self.benchmark is not None and self.benchmark not in have):
                where = f" on {self.benchmark!r}" if self.benchmark else ""
                known = [k for k in info.models if self.benchmark is None or self.benchmark in info.configs[k]]
                raise UserError(f"model {m!r} has no responses{where}: models there are {', '.join(known) or 'none'}")

    def to_argv(self, *, model_flag: str | None = "--models") -> list[str]:
        """The CLI flags that select this scope (the pages print them as the view's CLI twin).

        ``model_flag`` is how the command names its models: ``--models`` (a list), ``--model`` (the
        one-model commands, ``backend.views.single_scope``), or None (a command that takes none)."""
        argv = [model_flag, ",".join(self.models)] if model_flag else []
        argv += ["--benchmark", self.benchmark] if self.benchmark else []
        argv += ["--grid", ",".join(self.grid)] if self.grid else []
        argv += self.item_filter.to_argv()
        argv += ["--tag", self.tag] if self.tag else []
        argv += ["--tag-model", self.tag_model] if self.tag_model and self.tag_model != self.models[0] else []
        argv += ["--beyond-noise"] if self.beyond_noise else []
        argv += ["--include-reruns"] if self.include_reruns else []
        argv += ["--score-cutoff", self.score_cutoff] if self.score_cutoff != binary.STORED else []
        argv += ["--run", self.run] if self.run else []
        return argv

    @classmethod
    def from_args(cls, args: argparse.Namespace, models: list[str] | None = None) -> Scope:
        """The scope named by ``add_scope_args``' flags (``models`` overrides ``--models``)."""
        models = models if models is not None else split_list(getattr(args, "models", None)) or []
        if not models:
            raise UserError("--models is empty")
        return cls(
            benchmark=args.benchmark,
            models=tuple(models),
            grid=tuple(split_list(args.grid) or ()),
            item_filter=item_filter_from(args),
            tag=getattr(args, "tag", None),
            tag_model=getattr(args, "tag_model", None),
            beyond_noise=bool(getattr(args, "beyond_noise", False)),
            include_reruns=bool(getattr(args, "include_reruns", False)),
            score_cutoff=getattr(args, "score_cutoff", None) or binary.STORED,
            run=getattr(args, "run", None),
        )


@dataclass(frozen=True)
class Resolved:
    """A scope with its benchmark and grid fixed, where each came from, and what the grid left out (with why).

    ``benchmarks`` are the store's benchmarks when the benchmark was chosen for the scope (``benchmark_source``
    "default"), so a command can say which it took and what else there was."""

    scope: Scope
    grid_source: str  # "default" | "given"
    grid_excluded: dict[str, dict] = field(default_factory=dict, hash=False, compare=False)
    benchmark_source: str = "given"  # "default" (``default_benchmark``) | "given"
    benchmarks: tuple[str, ...] = field(default=(), hash=False, compare=False)
    runs: tuple[RunChoice, ...] = field(default=(), hash=False, compare=False)  # cells holding several runs

    def load(self, store: Store, include_answers: bool = False, base: Matrix | None = None) -> Matrix:
        """The matched matrix of the scope's accuracy views, narrowed to its trajectory tag (``load_views``)."""
        return self.load_views(store, include_answers, base)[0]

    def load_views(
        self, store: Store, include_answers: bool = False, base: Matrix | None = None
    ) -> tuple[Matrix, Matrix]:
        """The accuracy matrix and the score matrix of the scope, from one load (``scope_views``): the one
        loader of the CLI and the pages.

        ``base`` is the matrix of ``unfiltered()`` when the caller holds it (the pages cache it): the
        item filter then cuts it in memory (``backend.scope.matrix.narrow``) where that is exact,
        instead of rescanning every response.
        """
        s = self.scope
        if len(s.grid) == 0:
            raise UserError(no_grid_message(s))
        matrix = narrow(store, base, s.item_filter) if base is not None and not include_answers else None
        if matrix is None:
            matrix = load_matrix(
                store,
                list(s.models),
                s.benchmark,
                list(s.grid),
                s.item_filter,
                include_answers,
                s.include_reruns,
                run=s.run,
            )
        return scope_views(matrix, s)

    def unfiltered(self) -> Resolved:
        """The same models, benchmark, grid and re-run choice with no item filter, tag, noise toggle or score
        cut-off (the stored verdicts): the matrix every filtered view of the grid is cut from, before any
        cut-off drops or recodes a scored item (and the sidebar's filter choices)."""
        bare = dataclasses.replace(
            self.scope,
            item_filter=ItemFilter(),
            tag=None,
            tag_model=None,
            beyond_noise=False,
            score_cutoff=binary.STORED,
        )
        return dataclasses.replace(self, scope=bare)

    def key(self) -> str:
        """What a result computed on this resolved scope depends on, as a short string (a cache key).

        Streamlit hashes a dataclass argument by deep-copying it into a dict (``dataclasses.asdict``),
        4-11 ms a call: a ``repr`` of these few small values costs microseconds."""
        return repr((self.scope, self.grid_source, sorted(self.grid_excluded)))

    def to_argv(self, *, model_flag: str | None = "--models") -> list[str]:
        """The flags of the scope as the user chose it: a default grid stays "default" (no ``--grid``)."""
        chosen = dataclasses.replace(self.scope, grid=()) if self.grid_source == "default" else self.scope
        return chosen.to_argv(model_flag=model_flag)

    def header(self, matrix: Matrix | None = None) -> ScopeHeader:
        """The scope as every report's JSON states it (``scope`` key)."""
        s = self.scope
        return ScopeHeader(
            benchmark=s.benchmark,
            benchmark_source=self.benchmark_source,
            models=list(s.models),
            grid=list(s.grid),
            grid_source=self.grid_source,
            grid_excluded={label: e["n_items"] for label, e in self.grid_excluded.items()},
            grid_excluded_why={label: e["why"] for label, e in self.grid_excluded.items()},
            item_filter=s.item_filter.spec(),
            tag=s.tag,
            tag_model=s.focus if s.tag else None,
            beyond_noise=s.beyond_noise,
            include_reruns=s.include_reruns,
            score_cutoff=binary.header_value(s.score_cutoff),
            run=s.run,
            runs=[RunsInCell(model=c.model, config=c.config, runs=list(c.runs), shown=c.shown) for c in self.runs],
            n_items=UNSET if matrix is None else matrix.n_items,
            n_excluded=UNSET if matrix is None else matrix.n_excluded,
        )


def check_benchmark(info: StoreContents, benchmark: str | None) -> None:
    """Refuse a benchmark the store does not have, naming those it has (None: none named, nothing to check)."""
    if benchmark is not None and benchmark not in info.benchmarks:
        raise UserError(f"unknown benchmark {benchmark!r}: the store has {', '.join(info.benchmarks) or 'none'}")


def default_benchmark(info: StoreContents, models: Sequence[str] = ()) -> str | None:
    """The benchmark a view that names none looks at: of those every one of ``models`` answered (all of them
    when none is shared, so the scope check names what is missing), the largest, the one with the most items
    any model answered (ties: the store's order); None on a store without one.

    Why not all of them: a matched grid pools items, and pooling two benchmarks' items mixes their item
    sets and budgets into numbers of neither, which no one means. Why the largest: it is the store's main
    benchmark as far as the data can tell, and its numbers carry the narrowest intervals; a smaller one
    (a side task, a few open-ended items) is a click away. The sidebar opens on this same benchmark, so a
    command run without ``--benchmark`` prints the numbers the dashboard first shows.
    """
    benches = info.benchmarks
    shared = [b for b in benches if all(b in info.configs.get(m, {}) for m in models)] or benches
    size = {b: max((n.get(b, 0) for n in info.model_items.values()), default=0) for b in shared}
    return max(shared, key=lambda b: size[b], default=None)  # max keeps the first of equals


def no_grid_message(scope: Scope) -> str:
    where = f" on {scope.benchmark}" if scope.benchmark else ""
    return (
        f"models {', '.join(scope.models)} share no configuration covering {COVERAGE:.0%} of the items{where}: "
        "name one with --grid (see `trajaudit info`)"
    )


def _ceiling(store_root, models: list[str]) -> dict[str, int]:
    """Context ceilings (``max_frames``) of the registered models among ``models``."""
    try:
        specs = registry.load(store_root)
    except UserError:
        return {}
    return {m: specs[m].max_frames for m in models if m in specs}


def _coverage(info: StoreContents, model: str, benchmark: str | None) -> tuple[dict[str, int], int]:
    """Items per main-run configuration of ``model`` and the model's items, on one benchmark or all."""
    per_bench = info.coverage.get(model, {})
    benches = [benchmark] if benchmark else list(per_bench)
    counts: dict[str, int] = {}
    for b in benches:
        for label, n in per_bench.get(b, {}).items():
            counts[label] = counts.get(label, 0) + n
    n_items = sum(info.model_items.get(model, {}).get(b, 0) for b in benches)
    return counts, n_items


def _ladder(labels: list[str]) -> list[str]:
    """docs/metrics.md's budget ladder: text plus uniform frame budgets at one spatial budget.

    The model's default resolution (labels without ``@``) where the store has it, else the
    spatial budget with the most frame budgets (ties: the larger pixel count). Protocol variants,
    kept scale-grid tags and approximate protocols are never on it, unless the store has no uniform
    ladder of two budgets: then it is the longest policy or protocol ladder (``_longest_ladder``).
    """
    parsed = [configs.parse(c) for c in labels]
    by_pixels: dict[int | None, list[str]] = {}
    for c in (c for c in parsed if c.is_budget_step):
        by_pixels.setdefault(c.pixels, []).append(c.label)
    if not by_pixels:
        chosen: list[str] = []
    elif None in by_pixels:
        chosen = by_pixels[None]
    else:
        chosen = by_pixels[max(by_pixels, key=lambda p: (len(by_pixels[p]), p))]
    if len(chosen) < 2:  # no uniform ladder: the longest other one (docs/metrics.md)
        chosen = _longest_ladder(parsed) or chosen
    text = ["text"] if any(c.is_text for c in parsed) else []
    return configs.order(text + chosen)


def _longest_ladder(parsed: list[configs.Config]) -> list[str]:
    """The one sampling policy or protocol with the most frame budgets (``8f/adaptive``, ``16f/adaptive``...):
    the default ladder of a store with no uniform one (a harness that logged query-adaptive selections).
    Ties: the ladder whose first label comes first in ``configs.order``, as ``info`` lists them. Approximate
    protocols never; a ladder needs two budgets."""
    ladders: dict[tuple, list[str]] = {}
    for c in sorted((c for c in parsed if not c.is_text and c.is_exact), key=lambda c: configs.sort_key(c.label)):
        ladders.setdefault(c.ladder_key, []).append(c.label)
    best = max(ladders.values(), key=len, default=[])  # max keeps the first of equal lengths
    return best if len(best) > 1 else []


def default_grid(info: StoreContents, models: list[str], benchmark: str | None, store_root=None) -> list[str]:
    """docs/metrics.md's default grid for ``models`` on ``benchmark`` (all benchmarks when None).

    Candidates are main-run configurations (``info`` never lists re-runs among them) that every
    model covers on at least ``COVERAGE`` of the benchmark's items (the most items any of the
    models answered there), within each registered model's context ceiling; the grid is their
    budget ladder.
    """
    ceilings = _ceiling(store_root, models) if store_root is not None else {}
    shared: set[str] | None = None
    per_model = {m: _coverage(info, m, benchmark) for m in models}
    n_bench = max((n for _, n in per_model.values()), default=0)
    for m, (counts, _) in per_model.items():
        ok = {
            c
            for c, n in counts.items()
            if n >= COVERAGE * n_bench and configs.parse(c).frames <= ceilings.get(m, configs.MAX_FRAMES)
        }
        shared = ok if shared is None else shared & ok
    return _ladder(sorted(shared or ()))


def excluded_configs(info: StoreContents, scope: Scope, grid: tuple[str, ...]) -> dict[str, dict]:
    """Every configuration some model of the scope has that the grid leaves out: items covered and why.

    ``n_items`` is the most items any model of the scope has at that configuration (main runs
    and re-runs), so "24f: 1 item, re-runs only" reads straight off it.
    """
    per_model = {m: _coverage(info, m, scope.benchmark) for m in scope.models}
    n_bench = max((n for _, n in per_model.values()), default=0)
    reruns: dict[str, dict[str, int]] = {}
    for m in scope.models:
        for b, per_label in info.reruns.get(m, {}).items():
            if scope.benchmark is None or b == scope.benchmark:
                for label, n in per_label.items():
                    reruns.setdefault(label, {})[m] = reruns.setdefault(label, {}).get(m, 0) + n
    labels = {c for counts, _ in per_model.values() for c in counts} | set(reruns)
    out: dict[str, dict] = {}
    for label in configs.order(list(labels - set(grid))):
        main = {m: per_model[m][0].get(label, 0) for m in scope.models}
        n = max(main[m] + reruns.get(label, {}).get(m, 0) for m in scope.models)
        out[label] = {"n_items": n, "why": _why(label, main, reruns.get(label, {}), n_bench)}
    return out


def _why(label: str, main: dict[str, int], reruns: dict[str, int], n_bench: int) -> str:
    c = configs.parse(label)
    if not any(main.values()):
        return "re-runs only"
    if not c.is_exact:
        return "approximate protocol (compared with its exact twin by paired drift)"
    thin = [m for m, n in main.items() if n < COVERAGE * n_bench]
    if thin:
        items = "item" if n_bench == 1 else "items"
        return (
            "covers " + ", ".join(f"{main[m]} of {n_bench} {items} for {m}" for m in thin) + f" (under {COVERAGE:.0%})"
        )
    if c.tag is not None:
        return "scale-grid variant"
    if c.policy != configs.DEFAULT_POLICY:
        return "sampling-policy variant"
    if c.prompting is not None:
        return "prompting-protocol variant"
    if c.fps is not None:
        return "frame-rate ladder (a rate, not a frame count)"
    return "other spatial budget"


def scope_views(matrix: Matrix, scope: Scope) -> tuple[Matrix, Matrix]:
    """(accuracy matrix, score matrix) of ``scope`` from its loaded matched matrix: the score cut-off applied
    (``backend.scope.binary``), then the trajectory tag (read on the binary view the cut-off makes); under
    ``--score-cutoff none`` the accuracy matrix leaves the scored items out."""
    scores = tag_subset(binary.score_matrix(matrix, scope.score_cutoff), scope.focus, scope.tag)
    return binary.accuracy_matrix(scores, scope.score_cutoff), scores


def tag_subset(matrix: Matrix, model: str, tag: str | None) -> Matrix:
    """Items carrying trajectory ``tag`` for ``model`` (the sidebar's tag filter); all when None."""
    if tag is None:
        return matrix
    y = matrix.correct[matrix.model_index(model)].astype(bool)
    return restrict(matrix, tag_masks(y, matrix.grid, matrix.lower)[tag])


def add_item_filters(p: argparse.ArgumentParser, *, ids: bool = True) -> None:
    """The sidebar's item filters (``ids``: with ``--item-ids``; the commands of one model and no grid take
    the others alone)."""
    p.add_argument("--task-type", default=None, help="only these task types (comma-separated)")
    p.add_argument("--duration", default=None, help="only these duration categories (comma-separated)")
    p.add_argument("--domain", default=None, help="only these domains (comma-separated)")
    p.add_argument("--search", default=None, help="case-insensitive substring of question, options or item id")
    p.add_argument("--annotation-tag", default=None, help="only items carrying one of these annotation tags")
    if ids:
        p.add_argument("--item-ids", default=None, help="only these item ids (comma-separated)")


def item_filter_from(args: argparse.Namespace) -> ItemFilter:
    """The item filter ``add_item_filters``' flags name (no ``--item-ids`` flag: no id constraint)."""
    return ItemFilter(
        task_types=tuple(split_list(args.task_type) or ()),
        durations=tuple(split_list(args.duration) or ()),
        domains=tuple(split_list(args.domain) or ()),
        search=args.search,
        tags=tuple(split_list(args.annotation_tag) or ()),
        item_ids=tuple(split_list(getattr(args, "item_ids", None)) or ()),
    )


def add_scope_args(p: argparse.ArgumentParser, *, models: bool = True, tag: bool = True, noise: bool = False) -> None:
    """The flags of a ``Scope``: the sidebar's choices."""
    if models:
        p.add_argument(
            "--models",
            default=None,
            help="models, comma-separated (items are matched over all of them; default: the models the dashboard "
            "opens with, said on standard error)",
        )
    p.add_argument(
        "--benchmark",
        default=None,
        help="one benchmark (default: the largest the models share, as the dashboard opens; said on standard error)",
    )
    p.add_argument(
        "--grid",
        default=None,
        help="configs in order, e.g. text,16f,32f,64f (default: docs/metrics.md's default grid, as on the pages)",
    )
    add_item_filters(p)
    if tag:
        p.add_argument("--tag", default=None, choices=TAGS, help="only items with this trajectory tag (of --tag-model)")
        p.add_argument(
            "--tag-model", default=None, help="the model whose trajectory --tag selects items (default: the first)"
        )
    if noise:
        p.add_argument(
            "--beyond-noise",
            action="store_true",
            help="leave out flips within the item's own repeat noise (the pages' 'hide within-noise flips')",
        )
    p.add_argument(
        "--include-reruns",
        action="store_true",
        help="let live re-runs fill cells and configurations (default: re-runs are an overlay, never counted)",
    )
    p.add_argument(
        "--run",
        default=None,
        help="where a cell holds several runs (ingest --run), use this one for every cell (default: main, else the "
        "run ingested first; the scope names such cells)",
    )
    p.add_argument(
        "--score-cutoff",
        default=None,
        metavar="stored|none|T",
        help="how scored (open-ended) responses enter accuracy: 'stored' (default) their stored correct, "
        "T in [0, 1] correct = score >= T, 'none' left out of accuracy (their scores stay)",
    )


def command_line(
    command: list[str],
    resolved: Resolved,
    store: Store | str | None = None,
    *extra: str,
    model_flag: str | None = "--models",
) -> str:
    """The exact ``trajaudit ...`` line of a view (its CLI twin), ready to copy: every page's twin is built
    here from its scope (``model_flag``: see ``Scope.to_argv``), never written out by hand."""
    argv = ["trajaudit", *command]
    argv += ["--store", str(store.root if isinstance(store, Store) else store)] if store else []
    return shlex.join([*argv, *resolved.to_argv(model_flag=model_flag), *extra])
