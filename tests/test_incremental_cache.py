"""The matrix cache patched from the new rows after each write equals a cold rebuild, bit for bit
(``backend.scope.matrix_cache``; explain's answer cells, ``backend.scope.answer_cells``, too), and
``info``'s counts kept beside it (``backend.scope.coverage``, ``backend.scope.frames_known``) equal a
direct count, over random sequences of appends (main rows, repeats, re-run overlay rows), new
configurations, new items and changed item fields, a ``--replace`` and compactions, explicit and
automatic."""

from __future__ import annotations

import json
import random
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import store.store as store_module
from backend.scope import answer_cells, cache_folder, coverage, matrix_cache, sorted_keys
from backend.scope import delta as delta_module
from backend.scope import matrix as matrix_module
from backend.scope.answer_cells import load_answer_cells
from backend.scope.frames_known import frames_known
from backend.scope.loader import load_matrix
from backend.scope.matrix import available, scan
from store.errors import UserError
from store.store import Store

MODELS = ["a", "b"]
CONFIGS = ["8f", "16f", "32f", "64f"]
ITEMS = ["i0", "i1", "i10", "i2", "I3", "Z", "a b", "é", "ß9", "i0x"]  # orders that differ by case, length, code point
T0 = pd.Timestamp("2026-01-01", tz="UTC")
STEPS = ("append", "append", "append", "config", "items", "fields", "replace", "compact")


def _rows(rng: random.Random, items: list[str], configs: list[str], step: int, every: bool = False) -> pd.DataFrame:
    """Rows for a random subset of cells (``every``: a main row in each): main rows, repeats under another
    run, re-run overlay rows; one row per (model, item, config, run, origin), written at this step's time."""
    out = []
    for model in MODELS:
        for item in items:
            for config in configs:
                if every or rng.random() < 0.6:
                    run, origin = (
                        ("main", "ingest")
                        if every
                        else rng.choice(
                            [
                                ("main", "ingest"),
                                ("main", "ingest"),
                                ("r2", "ingest"),
                                ("main", "rerun"),
                                ("j1", "rerun"),
                            ]
                        )
                    )
                    out.append(
                        {
                            "model": model,
                            "benchmark": "bench",
                            "item_id": item,
                            "config": config,
                            "run": run,
                            "origin": origin,
                            "correct": rng.randint(0, 1),
                            "confidence": rng.choice([None, round(rng.random(), 3)]),
                            "answer": rng.choice("ABCD"),
                            "frame_indices": rng.choice([None, [0, 4]]),
                            "raw_output": rng.choice([None, "A", " B ", "CC", "unclear"]),
                        }
                    )
    frame = pd.DataFrame(
        out,
        columns=[
            "model",
            "benchmark",
            "item_id",
            "config",
            "run",
            "origin",
            "correct",
            "confidence",
            "answer",
            "frame_indices",
            "raw_output",
        ],
    )
    return frame.astype({"correct": "int8"}).assign(written_at=T0 + pd.Timedelta(seconds=step))


def _item_rows(rng: random.Random, items: list[str], step: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "benchmark": "bench",
            "item_id": items,
            "task_type": [rng.choice(["x", "y", None]) for _ in items],
            "duration_s": [rng.choice([None, 1.5, 30.0]) for _ in items],
            "written_at": T0 + pd.Timedelta(seconds=step),
        }
    )


def _replace(store: Store, rng: random.Random) -> None:
    """What ``ingest --replace`` does to a stored file: rewritten without some rows, the old one retired."""
    files = store.manifest().files["responses"]
    victim = rng.choice(files)
    data = store.query(f"SELECT * FROM read_parquet('{store.root / victim}')")
    with store.writer() as w:
        w.retire("responses", [victim])
        w.add("responses", data.iloc[: len(data) // 2], supersedes=[victim])


def _step(store: Store, rng: random.Random, kind: str, k: int, known: dict) -> None:
    if kind == "append" or (kind == "replace" and not store.manifest().files["responses"]):
        store.append({"responses": _rows(rng, known["items"], known["configs"], k)})
    elif kind == "config" and len(known["configs"]) < len(CONFIGS):
        known["configs"].append(CONFIGS[len(known["configs"])])
        store.append({"responses": _rows(rng, known["items"], known["configs"][-1:], k)})
    elif kind == "items" and len(known["items"]) < len(ITEMS):
        new = ITEMS[len(known["items"]) : len(known["items"]) + 2]
        known["items"] += new
        store.append({"responses": _rows(rng, new, known["configs"], k), "items": _item_rows(rng, new, k)})
    elif kind == "fields":
        store.append({"items": _item_rows(rng, rng.sample(known["items"], 2), k)})
    elif kind == "replace":
        _replace(store, rng)
    elif kind == "compact":
        store.compact()


def _assert_same_cells(patched, cold) -> None:
    assert (patched.models, patched.grid) == (cold.models, cold.grid)
    assert patched.items.equals(cold.items), (patched.items.to_pandas(), cold.items.to_pandas())
    for name in ("tier", "correct", "confidence", "score"):
        a, b = getattr(patched, name), getattr(cold, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=True), name
    as_set = lambda later: sorted(zip(*(later[k].tolist() for k in ("m", "i", "c", "written")), strict=True))  # noqa: E731
    assert as_set(patched.later) == as_set(cold.later)
    for cells in (patched, cold):  # task type codes kept with an entry are those of its items
        if cells.task_types is not None:
            _assert_same_task_types(cells.task_types, matrix_module.task_type_codes(cells.items))


def _assert_same_task_types(kept: tuple, coded: tuple) -> None:
    assert kept[1] == coded[1]
    assert np.array_equal(np.asarray(kept[0], dtype=np.int64), coded[0])


def _assert_coverage_counted_directly(store: Store) -> None:
    """``info``'s counts, kept as bits and updated per write, equal one scan's counts."""
    info = available(store)
    rows = store.query(
        "SELECT model, benchmark, config, coalesce(origin, '') = 'rerun' AS rerun, count(*) n, "
        "count(DISTINCT item_id) items FROM responses GROUP BY ALL"
    )
    direct = {(r.model, r.benchmark, r.config, bool(r.rerun)): int(r.items) for r in rows.itertuples()}
    held = {
        (m, b, c, rerun): n
        for rerun, block in ((False, info.coverage), (True, info.reruns))
        for m, per in block.items()
        for b, labels in per.items()
        for c, n in labels.items()
    }
    assert held == direct
    assert info.n_responses + info.n_rerun_responses == int(rows["n"].sum())
    per_model = store.query(
        "SELECT model, benchmark, count(DISTINCT item_id) n FROM responses WHERE coalesce(origin, '') <> 'rerun' "
        "GROUP BY ALL"
    )
    assert info.model_items == {
        m: dict(g[["benchmark", "n"]].itertuples(index=False)) for m, g in per_model.groupby("model")
    }


def _assert_frames_counted_directly(store: Store) -> None:
    """``info``'s frames per source, kept as counts and added to per write, equal one scan's counts."""
    rows = store.query(
        "SELECT model, benchmark, config, CASE WHEN frame_indices IS NULL THEN 'unknown' ELSE 'logged' END AS source, "
        "count(*) n FROM responses WHERE coalesce(origin, '') <> 'rerun' GROUP BY ALL"
    )
    direct: dict = {}
    for r in rows.itertuples():
        direct.setdefault(r.model, {}).setdefault(r.benchmark, {}).setdefault(r.config, {})[r.source] = int(r.n)
    assert frames_known(store) == direct


def _assert_held_as_written(store: Store) -> None:
    """What this process keeps of the entries it published (``cache_folder._HELD``) is what reading them back gives."""
    cache_folder.settle()
    mine = {p: h for p, h in cache_folder._HELD.items() if h[0].parent == cache_folder.folder(store)}
    assert cache_folder.HELD_PREFIXES == 0 or any(p.startswith("matrix-") for p in mine)  # the read just made
    for prefix, (path, (meta, state)) in mine.items():
        read_meta, read_state = (coverage if prefix == coverage.ENTRY else matrix_cache)._read(path)
        assert json.loads(json.dumps(meta)) == read_meta, prefix
        if prefix == coverage.ENTRY:
            assert _coverage_fields(state) == _coverage_fields(read_state)
        else:
            _assert_same_cells(state, read_state)


def _check(store: Store, reruns: bool) -> None:
    if not reruns:
        _assert_coverage_counted_directly(store)
        held = coverage.counts(store, store.manifest())  # its item index searched in key order
        assert held.order.tolist() == sorted_keys.key_order(held.index).tolist()
        _assert_frames_counted_directly(store)
    try:
        grid = matrix_module._matched_grid(available(store), MODELS, None, None, reruns)
    except UserError:  # a replace can leave a model without rows: no matrix to compare
        return
    patched = matrix_cache.cells(store, MODELS, None, grid, reruns)
    _assert_same_cells(patched, scan(store, MODELS, None, grid, None, False, reruns))
    _assert_held_as_written(store)
    full = load_matrix(store, MODELS, include_reruns=reruns)
    cold = matrix_module.matched(matrix_module.scan(store, MODELS, None, grid, None, False, reruns))
    for name in ("correct", "confidence", "score"):
        assert np.array_equal(getattr(full, name), getattr(cold, name), equal_nan=True)
    pd.testing.assert_frame_equal(full.items, cold.items, check_exact=True)
    assert (full.n_excluded, full.excluded_reasons) == (cold.n_excluded, cold.excluded_reasons)
    _assert_same_task_types(full.task_types, cold.task_types)  # ``full``'s from the entry where it keeps them
    for model in MODELS:  # explain's answer cells, patched from the new rows like the matrix (one key across steps)
        patched_answers = load_answer_cells(store, full, model, reruns, scope="one scope")
        cold_answers = answer_cells._query(store, full, model, reruns)
        assert np.array_equal(patched_answers.letter, cold_answers.letter), model
        assert np.array_equal(patched_answers.kind, cold_answers.kind), model


@pytest.mark.slow
@settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(st.sampled_from(STEPS), min_size=3, max_size=6),
    few=st.sampled_from([0, sorted_keys.FEW]),  # 0: every item lookup joins instead of searching
    held=st.sampled_from([0, cache_folder.HELD_PREFIXES]),  # 0: each read reads the entry back from disk
)
def test_patched_cache_equals_a_cold_rebuild(tmp_path_factory, monkeypatch, seed, steps, few, held):
    monkeypatch.setattr(sorted_keys, "FEW", few)
    monkeypatch.setattr(cache_folder, "HELD_PREFIXES", held)
    monkeypatch.setattr(cache_folder, "_HELD", {})
    monkeypatch.setattr(matrix_module, "CACHE_MIN_CELLS", 0)
    monkeypatch.setattr(answer_cells, "CACHE_MIN_CELLS", 0)
    monkeypatch.setattr(store_module, "FANOUT", 3)  # automatic compaction within a few writes
    rng = random.Random(seed)
    store = Store(tmp_path_factory.mktemp("s"))
    known = {"items": ITEMS[:4], "configs": CONFIGS[:2]}
    store.append(
        {
            "responses": _rows(rng, known["items"], known["configs"], 0, every=True),
            "items": _item_rows(rng, ITEMS[:4], 0),
        }
    )
    for k, kind in enumerate(steps, start=1):
        for reruns in (False, True):
            _check(store, reruns)
        _step(store, rng, kind, k, known)
    for reruns in (False, True):
        _check(store, reruns)


def test_a_one_row_write_patches_the_entry_and_an_overlay_row_leaves_the_default_arrays(tmp_path, monkeypatch):
    """After a one-row append the next read patches (reads no old file: the cold scan is not called),
    and a re-run overlay row moves the default scope's entry on with its arrays linked, not rewritten."""
    monkeypatch.setattr(matrix_module, "CACHE_MIN_CELLS", 0)
    rng = random.Random(7)
    store = Store(tmp_path / "s")
    store.append({"responses": _rows(rng, ITEMS[:6], CONFIGS[:2], 0, every=True)})
    grid = ["8f", "16f"]
    matrix_cache.cells(store, MODELS, None, grid, False)  # cold: writes the first entry
    cold_scans = []
    monkeypatch.setattr(matrix_cache, "scan", lambda *a: cold_scans.append(a) or scan(*a))
    one = pd.DataFrame(
        [
            {
                "model": "a",
                "benchmark": "bench",
                "item_id": "q-new",
                "config": "8f",
                "run": "main",
                "correct": 1,
                "written_at": T0 + pd.Timedelta(seconds=5),
            }
        ]
    ).astype({"correct": "int8"})
    store.append({"responses": one})
    patched = matrix_cache.cells(store, MODELS, None, grid, False)
    assert cold_scans == []
    assert "q-new" in patched.items["item_id"].to_pylist()
    _assert_same_cells(patched, scan(store, MODELS, None, grid, None, False, False))
    cache_folder.settle()  # entries are written off the reader's path
    before = sorted(store.root.joinpath(".cache").glob(f"matrix-{matrix_cache.ENTRY_FORMAT}-*"))[-1]
    store.append({"responses": one.assign(origin="rerun", run="job-1", correct=np.int8(0), item_id="i0")})
    after = matrix_cache.cells(store, MODELS, None, grid, False)
    assert cold_scans == []
    cache_folder.settle()
    newest = sorted(store.root.joinpath(".cache").glob(f"matrix-{matrix_cache.ENTRY_FORMAT}-*"))[-1]
    assert newest != before
    for name in ("tier", "correct", "confidence"):
        if (before / f"{name}.npy").exists():
            assert (newest / f"{name}.npy").stat().st_ino == (before / f"{name}.npy").stat().st_ino, name
    assert np.array_equal(after.correct, patched.correct)


def _typed_store(
    tmp_path, types: dict[str, str | None], lacking: tuple[str, str, str] | None = None
) -> tuple[Store, list[dict]]:
    """A store of ``types``' items (item -> task type) answered by every model at two configurations, but the
    (model, item, config) cell ``lacking``; and its response rows."""
    store = Store(tmp_path / "s")
    rows = [
        {"model": m, "benchmark": "bench", "item_id": i, "config": c, "run": "main", "correct": 1}
        for m in MODELS
        for i in types
        for c in CONFIGS[:2]
        if (m, i, c) != lacking
    ]
    store.append(
        {
            "responses": pd.DataFrame(rows).astype({"correct": "int8"}).assign(written_at=T0),
            "items": pd.DataFrame({"benchmark": "bench", "item_id": list(types), "task_type": list(types.values())}),
        }
    )
    return store, rows


def test_task_types_kept_with_the_entry_equal_the_matched_items_coded(tmp_path, monkeypatch):
    """The entry keeps its items' task type codes (``Cells.task_types``): a read after a write that adds no
    item takes them from there, and the matched matrix (incomplete items cut, a task type only they had
    dropped, the rest numbered again in first-seen order) holds what coding its own items gives."""
    monkeypatch.setattr(matrix_module, "CACHE_MIN_CELLS", 0)
    types = {"i0": "only-i0", "i1": None, "i2": "y", "i3": "(none)", "i4": "x"}
    store, rows = _typed_store(tmp_path, types, lacking=("b", "i0", "16f"))  # i0 is cut from the matched matrix
    grid = ["8f", "16f"]
    matrix_cache.cells(store, MODELS, None, grid, False)  # cold: the entry's codes are coded off the reader's path
    cache_folder.settle()
    monkeypatch.setattr(cache_folder, "_HELD", {})  # read the entry back from disk
    repeat = pd.DataFrame([{**rows[0], "run": "again", "written_at": T0 + pd.Timedelta(seconds=1)}])
    store.append({"responses": repeat.astype({"correct": "int8"})})
    patched = matrix_cache.cells(store, MODELS, None, grid, False)
    assert patched.task_types is not None and patched.task_types[1] == ["only-i0", "(none)", "y", "x"]
    full = load_matrix(store, MODELS)
    assert full.n_excluded == 1 and "task_types" in vars(full)  # from the entry, not coded again
    assert full.task_types[1] == ["(none)", "y", "x"]
    _assert_same_task_types(full.task_types, matrix_module.task_type_codes(full.item_table))
    cache_folder.settle()
    newest = sorted(store.root.joinpath(".cache").glob(f"matrix-{matrix_cache.ENTRY_FORMAT}-*"))[-1]
    before = sorted(store.root.joinpath(".cache").glob(f"matrix-{matrix_cache.ENTRY_FORMAT}-*"))[-2]
    assert (newest / "task_types.npy").stat().st_ino == (before / "task_types.npy").stat().st_ino  # linked


def test_a_filtered_cut_keeps_the_task_types_coded_instead_of_coding_them_again(tmp_path, monkeypatch):
    """A page's item filter cuts the cached unfiltered matrix (``narrow``): the task types it had coded are cut
    with it (renumbered in first-seen order), equal to coding the kept items, and DuckDB is not asked again."""
    from backend.scope.filters import ItemFilter

    store, _ = _typed_store(tmp_path, {"i0": "x", "i1": "y", "i2": None, "i3": "y", "i4": "x"})
    full = load_matrix(store, MODELS)
    assert full.task_types[1] == ["x", "y", "(none)"]  # coded once, as the unfiltered Overview does
    coded: list[int] = []
    monkeypatch.setattr(matrix_module, "task_type_codes", lambda items: coded.append(1))
    cut = matrix_module.narrow(store, full, ItemFilter(task_types=("y",)))
    assert cut is not None and cut.n_items == 2 and "task_types" in vars(cut)
    assert cut.task_types[1] == ["y"] and cut.task_types[0].tolist() == [0, 0]
    assert coded == []
    monkeypatch.undo()
    _assert_same_task_types(cut.task_types, matrix_module.task_type_codes(cut.item_table))


def test_automatic_compaction_keeps_few_files_and_names_the_parts_of_each(tmp_path, monkeypatch):
    """Single-row writes merge level by level (``store.store.FANOUT``): every row stays, each level holds
    under FANOUT files, and a merged file names the first-written files its rows came from, in row order."""
    import json

    import pyarrow.parquet as pq

    monkeypatch.setattr(store_module, "FANOUT", 3)
    store = Store(tmp_path / "s")
    for k in range(20):
        store.append({"responses": _rows(random.Random(k), ["i0"], ["8f"], k, every=True).head(1)})
    files = store.manifest().files["responses"]
    assert store.query("SELECT count(*) n FROM responses").n[0] == 20
    assert len(files) <= 2 * 3  # under FANOUT files on each of the levels 20 rows reach (1, 3, 9 rows)
    parts = []
    for rel in files:
        meta = pq.read_schema(store.root / rel).metadata or {}
        parts += json.loads(meta[store_module.PARTS]) if store_module.PARTS in meta else [[rel, 1]]
    assert sum(n for _, n in parts) == 20 and len({p for p, _ in parts}) == 20  # each first-written file once
    assert store.query("SELECT written_at FROM responses").written_at.is_unique  # no row merged twice


def test_explain_answer_cells_after_a_write_are_patched_not_rescanned(tmp_path, monkeypatch):
    """After a re-run row and a repeat, the answer cells are the cold ones, computed from the new rows only
    (no scan of every file), in a new version of the one entry."""
    monkeypatch.setattr(matrix_module, "CACHE_MIN_CELLS", 0)
    monkeypatch.setattr(answer_cells, "CACHE_MIN_CELLS", 0)
    rng = random.Random(3)
    store = Store(tmp_path / "s")
    store.append({"responses": _rows(rng, ITEMS[:6], CONFIGS[:2], 0, every=True)})
    matrix = load_matrix(store, MODELS)
    load_answer_cells(store, matrix, "a", scope="s")  # cold: writes the entry
    cold_scans = []
    real = answer_cells._query
    monkeypatch.setattr(answer_cells, "_query", lambda *a: cold_scans.append(a) or real(*a))
    row = _rows(rng, ["i0"], ["8f"], 1, every=True).head(1)
    for extra in (row.assign(origin="rerun", run="job-1", answer="D"), row.assign(run="r2", answer="C")):
        store.append({"responses": extra})
        assert load_matrix(store, MODELS).items.equals(matrix.items)  # the same items: the entry applies
        patched = load_answer_cells(store, matrix, "a", scope="s")
        assert cold_scans == []
        cold = real(store, matrix, "a", False)
        assert np.array_equal(patched.letter, cold.letter) and np.array_equal(patched.kind, cold.kind)
    assert len({p.name.split("-")[2] for p in (store.root / ".cache").glob("answers-v2-*")}) == 1  # one key


def _coverage_fields(held: coverage.Coverage) -> dict:
    """Each key's rows and items: what a coverage says, whichever order its keys and items came in."""
    assert held.order.tolist() == sorted_keys.key_order(held.index).tolist()
    items = list(zip(held.index["benchmark"].to_pylist(), held.index["item_id"].to_pylist(), strict=True))
    assert len(set(items)) == len(items)
    bits = np.unpackbits(np.asarray(held.bits), axis=1, count=len(items)).astype(bool)
    return {
        key: (int(held.rows[k]), sorted((items[j] for j in np.flatnonzero(bits[k])), key=repr))
        for k, key in enumerate(held.keys)
    }


def test_new_rows_are_counted_the_same_from_arrow_and_from_duckdb(tmp_path, monkeypatch):
    """A write's few rows are counted from Arrow, many in DuckDB (``coverage._few_cells``, ``_many_cells``):
    both give the counts of a cold count and of a direct query, with null models, benchmarks and item ids
    (nulls group together, a null item id sets no bit) and re-run rows, over writes of old and new items."""
    rng = random.Random(7)
    store = Store(tmp_path / "s")
    names = [*ITEMS, None]
    for step in range(12):
        n = rng.randint(1, 30)
        store.append(
            {
                "responses": pd.DataFrame(
                    {
                        "model": [rng.choice(["a", "b", None]) for _ in range(n)],
                        "benchmark": [rng.choice(["bench", "other", None]) for _ in range(n)],
                        "item_id": [rng.choice(names[: 3 + step]) for _ in range(n)],
                        "config": [rng.choice(CONFIGS) for _ in range(n)],
                        "origin": [rng.choice(["ingest", "rerun", None]) for _ in range(n)],
                        "correct": np.int8(1),
                        "written_at": T0 + pd.Timedelta(seconds=step),
                    }
                )
            }
        )
        manifest = store.manifest()
        held = coverage.counts(store, manifest)  # patched from the entry of the write before
        cold = delta_module.delta(store, manifest, "responses", {})
        assert cold is not None
        fields = _coverage_fields(held)
        assert _coverage_fields(coverage._add(store, coverage._empty(), cold)) == fields
        monkeypatch.setattr(sorted_keys, "FEW_ROWS", -1)  # every write grouped by DuckDB
        assert _coverage_fields(coverage._add(store, coverage._empty(), cold)) == fields
        monkeypatch.undo()
    direct = store.query(
        "SELECT model, benchmark, config, coalesce(origin, '') = 'rerun' AS rerun, count(*) n, "
        "count(DISTINCT item_id) items FROM responses GROUP BY ALL"
    )
    key = lambda *k: tuple(None if pd.isna(v) else v for v in k)  # noqa: E731
    want = {key(r.model, r.benchmark, r.config, bool(r.rerun)): (int(r.n), int(r.items)) for r in direct.itertuples()}
    assert {k: (int(held.rows[j]), held.items(j)) for j, k in enumerate(held.keys)} == want


def test_a_long_item_id_patched_in_costs_its_own_length_not_width_times_items(tmp_path, monkeypatch):
    """Issue 34 item 5: patching a new item into a cached matrix once built a fixed-width ('<U') key per
    cached item, as wide as the longest id: a 100,000-character id among 262k items asked 9.76 GiB. The keys
    are variable-width now: numpy's allocations during the patch (traced) stay far below width x items."""
    monkeypatch.setattr(matrix_module, "CACHE_MIN_CELLS", 0)
    n_items, width = 20_000, 1_024
    many = pd.DataFrame(
        {
            "model": "a",
            "benchmark": "bench",
            "item_id": [f"q{k:05d}" for k in range(n_items)],
            "config": "8f",
            "run": "main",
            "correct": np.int8(1),
            "written_at": T0,
        }
    )
    store = Store(tmp_path / "s")
    store.append({"responses": many})
    matrix_cache.cells(store, ["a"], None, ["8f"], False)  # cold: the entry a patch starts from
    cache_folder.settle()
    long_id = "q" + "x" * (width - 1)
    store.append({"responses": many.head(1).assign(item_id=long_id, written_at=T0 + pd.Timedelta(seconds=1))})
    cold_scans = []
    monkeypatch.setattr(matrix_cache, "scan", lambda *a: cold_scans.append(a) or scan(*a))
    tracemalloc.start()
    try:
        patched = matrix_cache.cells(store, ["a"], None, ["8f"], False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cold_scans == [], "the entry was rebuilt, not patched: the test would not exercise the patch"
    assert patched.items["item_id"].to_pylist()[-1] == long_id  # 'q' + 'x'... sorts after every 'q0...'
    fixed_width = n_items * width * 4  # what one '<U1024' key array of the cached items takes (82 MB)
    assert peak < fixed_width / 8, f"peak {peak:,} bytes traced while patching"
    _assert_same_cells(patched, scan(store, ["a"], None, ["8f"], None, False, False))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("reruns", [False, True])
def test_a_few_new_rows_are_coded_as_duckdb_codes_them(tmp_path, seed, reruns):
    """A write's few rows (``Delta.few``) are read as Arrow and coded in Python, with no DuckDB opened: the matrix's
    new cells and the runs per cell equal what the DuckDB statements make of the same rows (main rows, repeats
    under another run, re-runs, missing verdicts and confidences)."""
    from backend.scope import runs

    rng = random.Random(seed)
    store = Store(tmp_path / "s")
    store.append({"responses": _rows(rng, ITEMS[:4], CONFIGS[:2], 0, every=True)})
    known = store.manifest()
    parts = delta_module.file_parts(store, known, "responses", {})
    store.append(
        {
            "responses": _rows(rng, ITEMS[:6], CONFIGS[:3], 1).assign(
                correct=lambda f: f["correct"].mask(f.index % 3 == 0)
            )
        }
    )
    change = delta_module.delta(store, store.manifest(), "responses", parts)
    assert change is not None and change.few() and change.n_rows() > 0
    models, grid, configs = MODELS[:1] + ["z"] + MODELS[1:], CONFIGS[:3], CONFIGS[1:3]
    few = matrix_cache._few_rows(store, change, models, grid, configs, "bench", reruns)
    with matrix_module.scratch() as con:
        change.view(store, con, "responses", "new_responses")
        sql = matrix_cache._rows(con, "new_responses", models, grid, configs, "bench", reruns)
    assert few.keys() == sql.keys()
    for name in sql:
        assert few[name].dtype == sql[name].dtype, name
        assert np.array_equal(few[name], sql[name], equal_nan=name in ("confidence", "score")), name
    grouped = runs._grouped(store, change)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(delta_module.Delta, "few", lambda self: False)  # the DuckDB statement
    try:
        assert sorted(map(tuple, grouped)) == sorted(map(tuple, runs._grouped(store, change)))
    finally:
        monkey.undo()
