"""The matched response matrix: models x items x configurations, loaded from the store in one pass.

Every metric is computed on the *matched grid* (docs/metrics.md): the configurations every chosen model
has and the items with a response for every (model, configuration). DuckDB selects and codes the
rows (model, item and config become integers); NumPy scatters them into dense arrays with fancy
indexing, so nothing loops over items and nothing pivots millions of rows in pandas.

When one (model, item, config) has several rows (repeats under different ``run`` ids, or live
re-runs with ``origin = 'rerun'``) the matrix uses one: not a re-run first, then run ``main``, then
the earliest written. One scan fetches every row with its preference; NumPy picks the winners.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import duckdb
import msgspec
import numpy as np
import pyarrow as pa

from backend.contracts.base import to_json, validated
from backend.contracts.store import StoreContents
from backend.scope import arrow_numpy, cache_folder, coverage
from backend.scope.filters import ItemFilter, filter_sql, in_memory_mask
from backend.scope.scratch import scratch
from store import configs
from store.errors import UserError
from store.schema import order_key_sql
from store.store import Manifest, Store

if TYPE_CHECKING:  # ``Matrix.items`` converts on first use: the metrics read the Arrow table (0.3-0.6 s of import)
    import pandas as pd

# Item columns carried into Matrix.item_table, in this order (beside the integer position).
ITEM_COLUMNS = (
    "benchmark", "item_id", "split", "task_type", "duration", "domain", "sub_category",
    "question", "options", "target", "answer_type", "video", "duration_s",
)  # fmt: skip


@dataclass
class Matrix:
    """Dense per-cell arrays over the matched grid; axis order is (model, item, config).

    ``correct`` is 0/1; a present response that gave no verdict (``correct`` empty: an open-ended row with a
    score alone, or a judge's empty verdict) holds 0 there and True in ``unjudged`` (None: every response gave
    one), which the scope's accuracy view leaves out (``backend.scope.binary``, docs/metrics.md "Empty
    verdicts"); ``confidence`` and ``score`` are NaN where the row has none. ``excluded_reasons`` counts, per
    (model, config) cell, the excluded items that lack it.

    ``item_table`` holds the items (Arrow); ``items`` is it as a DataFrame, converted on first use: the
    metrics and flows read codes and keys from the Arrow table, so a command that prints numbers never
    imports pandas (issue 37), while the pages and exports that want a frame get one.
    """

    models: list[str]
    grid: list[str]
    item_table: pa.Table
    correct: np.ndarray
    confidence: np.ndarray
    score: np.ndarray
    answer: np.ndarray | None = None
    n_excluded: int = 0
    excluded_reasons: dict[str, int] = field(default_factory=dict)
    unjudged: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        return int(self.correct.shape[1])

    def model_index(self, model: str) -> int:
        try:
            return self.models.index(model)
        except ValueError:
            raise UserError(f"model {model!r} is not in this matrix (models: {', '.join(self.models)})") from None

    def config_index(self, label: str) -> int:
        try:
            return self.grid.index(configs.canonical(label))
        except (ValueError, configs.ConfigLabelError):
            raise UserError(f"config {label!r} is not in the grid {','.join(self.grid)}") from None

    @cached_property
    def items(self) -> pd.DataFrame:
        """``item_table`` as a DataFrame (its string columns large strings: wrapped, not copied; ``large_strings``)."""
        return self.item_table.to_pandas()

    @cached_property
    def task_types(self) -> tuple[np.ndarray, list[str]]:
        """Each item's task type as a code into the names, in first-seen order ("(none)" for an item without
        one, a written "(none)" among them): computed once per matrix, not once per model's table; a matrix
        cut from a kept entry (``matched``) has them from the entry (``task_type_codes``)."""
        return task_type_codes(self.item_table)

    @cached_property
    def has_scores(self) -> bool:
        """Whether some cell carries a score (the score sections show only then): asked on every page run,
        so computed once per matrix (the pages share one cached matrix)."""
        return bool(np.isfinite(self.score).any())

    @cached_property
    def lower(self) -> np.ndarray:
        """``lower[a, b]``: config a is strictly cheaper than b (``store.configs.lower_matrix``)."""
        return configs.lower_matrix(self.grid)


def task_type_codes(items: pa.Table) -> tuple[np.ndarray, list[str]]:
    """``Matrix.task_types`` of a table of items. Coded in DuckDB: Arrow's ``dictionary_encode`` would import
    ``pyarrow.compute`` (30 ms) on a read after a write. 50-80 ms at 250k items (2026-12-03), so the cache
    keeps them with its entry (``Cells.task_types``) and a read after a write that added no item codes none."""
    rows = items.select(["task_type"]).append_column("r", arrow_numpy.array(np.arange(items.num_rows)))
    with scratch() as con:
        con.register("task_types", rows)
        con.execute(
            "CREATE TEMP TABLE coded AS SELECT coalesce(task_type, '(none)') AS name, r FROM task_types; "
            "CREATE TEMP TABLE names AS SELECT name, (row_number() OVER (ORDER BY min(r)) - 1)::BIGINT AS code "
            "FROM coded GROUP BY name"
        )
        codes = con.sql("SELECT n.code FROM coded c JOIN names n USING (name) ORDER BY c.r").fetchnumpy()["code"]
        names = [name for (name,) in con.sql("SELECT name FROM names ORDER BY code").fetchall()]
    return np.asarray(codes, dtype=np.int64), names


def _task_types_kept(codes: np.ndarray, names: list[str], keep: np.ndarray | None) -> tuple[np.ndarray, list[str]]:
    """``task_type_codes`` of the items ``keep`` selects (None: all), from the codes of all of them: the names
    no kept item has dropped, the others numbered again in first-seen order among the kept items."""
    codes = np.asarray(codes, dtype=np.int64)
    if keep is None:
        return codes, list(names)
    codes = codes[keep]
    first = np.full(len(names), len(codes), dtype=np.int64)
    np.minimum.at(first, codes, np.arange(len(codes)))
    present = np.flatnonzero(first < len(codes))
    order = present[np.argsort(first[present], kind="stable")]
    renumber = np.zeros(len(names), dtype=np.int64)
    renumber[order] = np.arange(len(order))
    return renumber[codes], [names[k] for k in order]


def restrict(matrix: Matrix, keep: np.ndarray) -> Matrix:
    """The same matrix on the items where ``keep`` is True (exclusion counts unchanged). Task types the matrix has
    coded are cut with it (``dataclasses.replace`` keeps no cached property): coding them again in DuckDB cost a
    page's filter 70 ms at 25k items."""
    keep = np.asarray(keep, dtype=bool)
    out = dataclasses.replace(
        matrix,
        item_table=matrix.item_table.filter(arrow_numpy.array(keep)),
        correct=matrix.correct[:, keep],
        confidence=matrix.confidence[:, keep],
        score=matrix.score[:, keep],
        answer=None if matrix.answer is None else matrix.answer[:, keep],
        unjudged=None if matrix.unjudged is None else matrix.unjudged[:, keep],
    )
    if "task_types" in matrix.__dict__:
        out.__dict__["task_types"] = _task_types_kept(*matrix.task_types, keep)
    return out


def canonical_grid(grid: list[str]) -> list[str]:
    out = []
    for label in grid:
        try:
            canon = configs.canonical(label)
        except configs.ConfigLabelError as exc:
            raise UserError(f"grid: {exc}") from None
        if canon in out:
            raise UserError(f"grid: config {canon!r} is listed twice")
        out.append(canon)
    if not out:
        raise UserError("grid is empty")
    return out


def main_only(alias: str = "") -> str:
    """The predicate of main-run rows. Re-runs are an overlay (docs/metrics.md): unless asked for, no
    query that builds a matrix or a default grid sees them."""
    return f"coalesce({alias}origin, '') <> 'rerun'"


def _matched_grid(
    info: StoreContents, models: list[str], benchmark: str | None, grid: list[str] | None, reruns: bool
) -> list[str]:
    """The grid ``G_M``: the configs every model has, or the given ones checked against each model.

    Read from ``available(store)`` (cached per set of files), not from a scan of the responses.
    """
    by_model: dict[str, set[str]] = {}
    for m in models:
        sources = [info.configs.get(m, {})] + ([info.reruns.get(m, {})] if reruns else [])
        have = {label for src in sources for b, labels in src.items() if benchmark in (None, b) for label in labels}
        if have:
            by_model[m] = have
    scope = f" on benchmark {benchmark!r}" if benchmark else ""
    for m in models:
        if m not in by_model:
            raise UserError(f"model {m!r} has no responses{scope}")
    if grid is None:
        common = set.intersection(*(by_model[m] for m in models))
        if not common:
            raise UserError(f"models {', '.join(models)} share no configuration{scope}")
        return configs.order(list(common))
    grid = canonical_grid(grid)
    for m in models:
        for label in grid:
            if label not in by_model[m]:
                raise UserError(f"model {m!r} has no responses at config {label!r}{scope}")
    return grid


# A response row as a cell: model m and config c coded against $models and $grid, its values, its preference.
CELL_VALUES = f"""(list_position($models, r.model) - 1)::TINYINT AS m,
               (list_position($grid, r.config) - 1)::SMALLINT AS c,
               coalesce(r.correct, -1)::TINYINT AS correct,  -- -1: no verdict (``Matrix.unjudged``)
               coalesce(r.confidence::FLOAT, 'nan'::FLOAT) AS confidence,
               coalesce(r.score::FLOAT, 'nan'::FLOAT) AS score,
               (2 * (coalesce(r.origin, '') = 'rerun')::TINYINT
                  + (coalesce(r.run, 'main') <> 'main')::TINYINT)::TINYINT AS tier,
               {order_key_sql("r.")} AS written"""


def _fetch_cells(
    con: duckdb.DuckDBPyConnection, models: list[str], grid: list[str], answers: bool, reruns: bool, run: str | None
) -> dict:
    """Every response of the scope, coded: model m, item i, config c, values, and its preference.

    ``tier`` is 0 for rows that win outright (not a re-run, run ``main``), else 2 x re-run + not-main;
    ``written`` (microseconds, nulls last) breaks ties within a tier.
    """
    answer = ", r.answer" if answers else ""
    sql = f"""
        SELECT s.i, {CELL_VALUES} {answer}
        FROM responses r JOIN scope s ON r.benchmark = s.benchmark AND r.item_id = s.item_id
        WHERE list_contains($models, r.model) AND list_contains($grid, r.config) {"" if reruns else "AND " + main_only("r.")}
        {"" if run is None else "AND coalesce(r.run, 'main') = $run"}
    """
    params = {"models": models, "grid": grid} | ({} if run is None else {"run": run})
    return con.execute(sql, params).fetchnumpy()


def _first_per_cell(flat: np.ndarray, tier: np.ndarray, written: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Of ``rows``, the preferred one per cell: lowest tier, then earliest written."""
    order = rows[np.lexsort((written[rows], tier[rows], flat[rows]))]
    first = np.ones(len(order), dtype=bool)
    first[1:] = flat[order][1:] != flat[order][:-1]
    return order[first]


def _winners(cells: dict, shape: tuple[int, int, int]) -> np.ndarray:
    """Row indices of the one response used per (model, item, config), in scatter order.

    Tier-0 rows are unique per cell when the store keeps ``RESPONSE_KEY``; then only the other
    rows (usually few) are sorted, and the tier-0 rows come last so they overwrite them. A store
    that breaks the key still resolves correctly, by sorting every row.
    """
    flat = np.ravel_multi_index((cells["m"], cells["i"], cells["c"]), shape)
    tier, written = np.asarray(cells["tier"]), np.asarray(cells["written"])
    preferred = tier == 0
    if np.bincount(flat[preferred], minlength=int(np.prod(shape))).max(initial=0) > 1:
        return _first_per_cell(flat, tier, written, np.arange(len(flat)))
    others = _first_per_cell(flat, tier, written, np.flatnonzero(~preferred))
    return np.concatenate([others, np.flatnonzero(preferred)])


ABSENT = np.int8(127)  # the tier of a cell without a response


@dataclass
class Cells:
    """Every item in scope, complete or not, and each cell's chosen response (``_winners``): what a matrix
    is cut from (``matched``) and what the cache keeps and patches (``backend.scope.matrix_cache``).

    ``tier`` is the chosen row's preference tier, ``ABSENT`` where the cell has no response; ``correct`` is -1
    where the chosen row gave no verdict (``matched`` makes it 0 and ``Matrix.unjudged``); ``later``
    holds (m, i, c, written) of the cells won by a row of tier above 0, the only ones a new row can
    beat on its written time.
    """

    models: list[str]
    grid: list[str]
    items: pa.Table
    tier: np.ndarray
    correct: np.ndarray
    confidence: np.ndarray
    score: np.ndarray
    later: dict[str, np.ndarray]
    answer: np.ndarray | None = None
    # ``task_type_codes(items)`` where known (a kept entry holds them), else None: coded when first asked
    task_types: tuple[np.ndarray, list[str]] | None = None


def _scatter(
    cells: dict, shape: tuple[int, int, int], answers: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, dict[str, np.ndarray]]:
    """Dense arrays from the coded cells, one response per cell (see ``_winners``)."""
    rows = _winners(cells, shape)
    idx = (cells["m"][rows], cells["i"][rows], cells["c"][rows])
    tier = np.full(shape, ABSENT, dtype=np.int8)
    tier[idx] = cells["tier"][rows]
    correct = np.zeros(shape, dtype=np.int8)
    correct[idx] = cells["correct"][rows]
    confidence = np.full(shape, np.nan, dtype=np.float32)
    confidence[idx] = cells["confidence"][rows]
    score = np.full(shape, np.nan, dtype=np.float32)
    score[idx] = cells["score"][rows]
    answer = None
    if answers:
        a = cells["answer"]
        answer = np.full(shape, None, dtype=object)
        answer[idx] = np.where(np.ma.getmaskarray(a), None, np.ma.getdata(a))[rows]  # type: ignore[call-overload]  # numpy stubs reject None as a fill value, which object arrays take
    up = rows[np.asarray(cells["tier"])[rows] > 0]
    up = up[tier[cells["m"][up], cells["i"][up], cells["c"][up]] > 0]  # not overwritten by a tier-0 row
    later = {
        "m": cells["m"][up].astype(np.int64),
        "i": cells["i"][up].astype(np.int64),
        "c": cells["c"][up].astype(np.int64),
        "written": np.asarray(cells["written"])[up].astype(np.int64),
    }
    return tier, correct, confidence, score, answer, later


ITEM_FIELDS = ", ".join(f"it.{c}" for c in ITEM_COLUMNS if c not in ("benchmark", "item_id"))


def scan(
    store: Store,
    models: list[str],
    benchmark: str | None,
    grid: list[str],
    item_filter: ItemFilter | None,
    include_answers: bool,
    include_reruns: bool,
    run: str | None = None,
) -> Cells:
    """Every item in scope and its chosen responses, in one pass over the store (``run``: that run's only)."""
    with store.connect() as con:
        bench_sql, bench_params = ("", []) if benchmark is None else ("AND benchmark = ?", [benchmark])
        if run is not None:
            bench_sql, bench_params = bench_sql + " AND coalesce(run, 'main') = ?", [*bench_params, run]
        fsql, fparams = filter_sql(item_filter, alias="it")
        con.execute(
            f"""CREATE TEMP TABLE scope AS
            SELECT r.benchmark, r.item_id, {ITEM_FIELDS},
                   (row_number() OVER (ORDER BY r.benchmark, r.item_id) - 1)::INTEGER AS i
            FROM (SELECT DISTINCT benchmark, item_id FROM responses
                  WHERE list_contains(?, model) AND list_contains(?, config) {bench_sql}
                  {"" if include_reruns else "AND " + main_only()}) r
            LEFT JOIN items it ON it.benchmark = r.benchmark AND it.item_id = r.item_id
            WHERE {fsql}""",
            [models, grid, *bench_params, *fparams],
        )
        items = large_strings(con.sql("SELECT * EXCLUDE (i) FROM scope ORDER BY i").to_arrow_table())
        cells = _fetch_cells(con, models, grid, include_answers, include_reruns, run)
    shape = (len(models), items.num_rows, len(grid))
    tier, correct, confidence, score, answer, later = _scatter(cells, shape, include_answers)
    return Cells(models, grid, items, tier, correct, confidence, score, later, answer)


def large_strings(table: pa.Table) -> pa.Table:
    """``table`` with its string columns as large strings, the layout of pandas' ``str`` dtype: ``to_pandas``
    then wraps each column instead of copying it (a matched matrix's 250k items: 1 ms against 40-170 ms,
    2026-12-02, paid by every new matrix: each page's first read after a write, each CLI command)."""
    return table.cast(pa.schema([f.with_type(pa.large_string()) if f.type == pa.string() else f for f in table.schema]))


def matched(cells: Cells) -> Matrix:
    """The matched matrix: the items with a response in every (model, configuration), the others counted."""
    present = cells.tier != ABSENT
    complete = present.all(axis=(0, 2))
    missing = (~present[:, ~complete, :]).sum(axis=1)
    models, grid = cells.models, cells.grid
    reasons = {f"{models[m]} lacks {grid[c]}": int(missing[m, c]) for m, c in zip(*np.nonzero(missing), strict=True)}
    every = bool(complete.all())  # nothing to cut: the arrays are used as they are (a cached entry's are mapped)
    cut = (lambda a: a) if every else (lambda a: a[:, complete, :])  # noqa: E731
    correct, unjudged = cut(cells.correct), None
    if correct.size and correct.min() < 0:  # responses without a verdict (open-ended): 0 there, and said apart
        unjudged = correct < 0
        correct = np.maximum(correct, 0)
    out = Matrix(
        models=list(models),
        grid=list(grid),
        item_table=cells.items if every else cells.items.filter(arrow_numpy.array(complete)),
        correct=correct,
        confidence=cut(cells.confidence),
        score=cut(cells.score),
        answer=None if cells.answer is None else cut(cells.answer),
        n_excluded=int((~complete).sum()),
        excluded_reasons=reasons,
        unjudged=unjudged,
    )
    if cells.task_types is not None:  # read by ``Matrix.task_types`` (a cached property) instead of coding them
        out.__dict__["task_types"] = _task_types_kept(*cells.task_types, None if every else complete)
    return out


# Smaller matrices load from Parquet in a fraction of a second: not cached. One model of the 1M-response bench store
# (150k cells) took 0.34-0.53 s to scan and 0.07-0.09 s to patch after a one-row write (2026-12-03, load 4-5).
CACHE_MIN_CELLS = 100_000


def narrow(store: Store, full: Matrix, item_filter: ItemFilter | None) -> Matrix | None:
    """The matrix of ``item_filter`` cut from the unfiltered ``full`` one, or None when that is not exact.

    When ``full`` excludes no item, every item in scope is complete, so the filtered scope is the
    subset of ``full``'s items passing the filter, in the same order, with nothing excluded: exactly
    what a filtered load returns, without rescanning the responses. Otherwise the exclusion counts
    depend on the filter, and the caller loads it.
    """
    if item_filter is None or item_filter.is_empty():
        return full
    if full.n_excluded:
        return None
    mask = in_memory_mask(full.items, item_filter)
    if mask is None:  # free text or annotation tags: the filter's SQL
        fsql, fparams = filter_sql(item_filter, alias="it")
        used = [c for c in full.items.columns if f"it.{c}" in fsql]  # DuckDB converts only the columns it reads
        # The store's views only for a tag filter (its annotations); a bare connection costs a tenth of one.
        with store.connect() if item_filter.tags else duckdb.connect(":memory:") as con:
            con.register("scope_items", full.items[used].assign(i=np.arange(full.n_items)))
            keep = con.execute(f"SELECT i FROM scope_items it WHERE {fsql}", fparams).fetchnumpy()["i"]
        mask = np.zeros(full.n_items, dtype=bool)
        mask[keep] = True
    return restrict(full, mask)


def _item_facets(store: Store, manifest: Manifest) -> list:
    """Items, and the task types, durations and domains they name: kept per set of item files (a
    write of responses alone, a re-run's answer, does not count the items again)."""
    cache = cache_folder.folder(store) / f"facets-{cache_folder.file_set_key(manifest, ('items',))}.json"
    cached = cache_folder.read_json(cache)
    if isinstance(cached, list):
        return cached
    with store.connect() as con:  # names a listed file that is missing
        row = con.execute(
            "SELECT count(*), list(DISTINCT task_type ORDER BY task_type) FILTER (task_type IS NOT NULL), "
            "list(DISTINCT duration ORDER BY duration) FILTER (duration IS NOT NULL), "
            "list(DISTINCT domain ORDER BY domain) FILTER (domain IS NOT NULL) FROM items"
        ).fetchone()
    assert row is not None  # an aggregate without GROUP BY returns one row
    out = list(row)
    if cache_folder.write_json(cache, out):
        cache_folder.prune(cache.parent, "facets-*.json")
    return out


def available(store: Store) -> StoreContents:
    """What the store holds (the ``info`` contract): models, benchmarks, configs per model and benchmark.

    ``configs``, ``coverage`` (items per configuration) and ``model_items`` count main runs only;
    live re-runs are listed apart under ``reruns`` (items per configuration), so one exploratory
    re-run never adds a configuration to what the views analyse.

    Counting distinct items over 10M responses takes seconds, so the counts are kept as one bit per
    (cell, item) and updated from each write's new rows (``backend.scope.coverage``), and the answer
    per set of files, in the store's cache folder (``backend.scope.cache_folder``).
    """
    manifest = store.manifest()
    cache = cache_folder.folder(store) / f"available-{cache_folder.file_set_key(manifest, ('responses', 'items'))}.json"
    cached = cache_folder.read_json(cache)
    if isinstance(cached, dict) and cache_folder.all_files_present(store, manifest):
        try:
            return msgspec.convert(cached, StoreContents)  # written below from a StoreContents
        except msgspec.ValidationError:
            pass  # an entry of another shape (an older version's): counted again below
    n_items, task_types, durations, domains = _item_facets(store, manifest)
    held = coverage.counts(store, manifest)
    coverage_: dict[str, dict[str, dict[str, int]]] = {}
    reruns: dict[str, dict[str, dict[str, int]]] = {}
    n_main = n_rerun = 0
    for k in sorted(range(len(held.keys)), key=lambda k: held.keys[k]):
        model, bench, label, rerun = held.keys[k]
        (reruns if rerun else coverage_).setdefault(model, {}).setdefault(bench, {})[label] = held.items(k)
        n_rerun, n_main = (n_rerun + int(held.rows[k]), n_main) if rerun else (n_rerun, n_main + int(held.rows[k]))
    cfgs = {m: {b: configs.order(list(labels)) for b, labels in per.items()} for m, per in coverage_.items()}
    main = np.array([not k[3] for k in held.keys], dtype=bool)
    per_model = {(k[0], k[1]) for k in held.keys if not k[3]}
    model_items: dict[str, dict[str, int]] = {}
    for model, bench in sorted(per_model):
        mine = main & np.array([k[:2] == (model, bench) for k in held.keys], dtype=bool)
        model_items.setdefault(model, {})[bench] = held.items(mine)
    out = validated(
        StoreContents(
            models=sorted(cfgs),
            benchmarks=sorted({b for per in cfgs.values() for b in per}),
            configs=cfgs,
            coverage=coverage_,
            model_items=model_items,
            reruns=reruns,
            task_types=task_types or [],
            durations=durations or [],
            domains=domains or [],
            n_responses=n_main,
            n_rerun_responses=n_rerun,
            n_items=int(n_items),
        )
    )
    if cache_folder.write_json(cache, to_json(out)):
        cache_folder.prune(cache.parent, "available-*.json")
    return out
