"""The store's cache folder (backend.scope.cache_folder): cached answers equal freshly computed ones, and a
write changes the key so a stale entry is never read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from backend.scope import cache_folder
from backend.scope import matrix as matrix_module
from backend.scope.filters import ItemFilter
from backend.scope.loader import load_matrix
from backend.scope.matrix import available, narrow
from tests.matrix_fixtures import item_rows, response_rows

DATA = {
    "a": {"8f": [1, 0, 1, 0, 1, 1], "16f": [1, 1, 0, 0, 1, 0]},
    "b": {"8f": [0, 0, 1, 1, 1, 0], "16f": [1, 0, 1, 1, 0, 1]},
}


def _direct_counts(store) -> dict:
    """The per-(model, benchmark, config, re-run) counts by one scan, as ``available`` did before."""
    rows = store.query(
        "SELECT model, benchmark, config, coalesce(origin, '') = 'rerun' AS rerun, count(*) n, "
        "count(DISTINCT item_id) items FROM responses GROUP BY ALL"
    )
    return {(r.model, r.benchmark, r.config, bool(r.rerun)): (r.n, r.items) for r in rows.itertuples()}


def _available_counts(info: dict) -> dict:
    out = {}
    for rerun, block in ((False, info.coverage), (True, info.reruns)):
        for model, per in block.items():
            for bench, labels in per.items():
                out |= {(model, bench, label, rerun): n for label, n in labels.items()}
    return out


def test_available_counts_items_once_across_files(tmp_path):
    from store.store import Store

    store = Store(tmp_path / "s")
    items = item_rows(6, task_type=["x", "y"] * 3)
    store.append({"responses": response_rows(DATA, run="main"), "items": items})
    store.append({"responses": response_rows(DATA, run="r2")})  # a repeat: the same cells in a second file
    rerun = response_rows({"a": {"8f": [1, None, 0, None, None, None]}}, origin="rerun")
    store.append({"responses": rerun})
    store.append({"responses": rerun.assign(run="again")})  # the same re-run cells once more
    info = available(store)
    direct = _direct_counts(store)
    assert _available_counts(info) == {k: items for k, (_, items) in direct.items()}
    assert info.n_responses == sum(n for k, (n, _) in direct.items() if not k[3])
    assert info.n_rerun_responses == 4
    assert info.model_items == {"a": {"bench": 6}, "b": {"bench": 6}}
    assert available(store) == info  # now from the cache folder
    assert list((store.root / ".cache").glob("available-*.json"))


def test_cached_matrix_equals_the_loaded_one_and_a_write_changes_the_key(tmp_path, monkeypatch):
    from store.store import Store

    monkeypatch.setattr(matrix_module, "CACHE_MIN_CELLS", 0)
    store = Store(tmp_path / "s")
    store.append({"responses": response_rows(DATA), "items": item_rows(6, task_type=["x", "y"] * 3)})
    first = load_matrix(store, ["a", "b"])
    cache_folder.settle()  # the entry is written off the reader's path
    assert len(list((store.root / ".cache").glob("matrix-*"))) == 1
    again = load_matrix(store, ["a", "b"])  # read back from the entry
    for name in ("correct", "confidence", "score"):
        assert np.array_equal(getattr(first, name), getattr(again, name), equal_nan=True)
    pd.testing.assert_frame_equal(first.items, again.items)
    assert (again.n_excluded, again.excluded_reasons, again.grid) == (
        first.n_excluded,
        first.excluded_reasons,
        first.grid,
    )
    more = {m: {"32f": [1, 1, 0, 0, 1, 1]} for m in DATA}
    store.append({"responses": response_rows(more)})  # a write: new files, so a new key
    after = load_matrix(store, ["a", "b"])
    assert after.grid == ["8f", "16f", "32f"] and np.array_equal(after.correct[:, :, :2], first.correct)
    cache_folder.settle()
    assert len(list((store.root / ".cache").glob("matrix-*"))) == 2


@pytest.mark.parametrize(
    "item_filter",
    [
        ItemFilter(task_types=("x",)),
        ItemFilter(search="i1"),
        ItemFilter(item_ids=("i0", "i5")),
        ItemFilter(task_types=("z",)),
    ],
)
def test_a_filter_cut_in_memory_equals_a_filtered_load(tmp_path, item_filter):
    from store.store import Store

    store = Store(tmp_path / "s")
    store.append({"responses": response_rows(DATA), "items": item_rows(6, task_type=["x", "y"] * 3)})
    full = load_matrix(store, ["a", "b"])
    cut = narrow(store, full, item_filter)
    loaded = matrix_module.matched(matrix_module.scan(store, ["a", "b"], None, full.grid, item_filter, False, False))
    assert np.array_equal(cut.correct, loaded.correct)
    pd.testing.assert_frame_equal(cut.items, loaded.items)
    assert (cut.n_excluded, cut.excluded_reasons) == (loaded.n_excluded, loaded.excluded_reasons)


def test_no_cut_when_the_full_matrix_excludes_items(tmp_path):
    from store.store import Store

    store = Store(tmp_path / "s")
    gappy = {"a": {"8f": [1, 0, 1], "16f": [1, None, 0]}}
    store.append({"responses": response_rows(gappy), "items": item_rows(3, task_type=["x", "y", "x"])})
    full = load_matrix(store, ["a"])
    assert full.n_excluded == 1 and narrow(store, full, ItemFilter(task_types=("y",))) is None
    assert load_matrix(store, ["a"], item_filter=ItemFilter(task_types=("y",))).n_excluded == 1


@pytest.mark.parametrize(
    "item_filter",
    [
        ItemFilter(task_types=("x",)),
        ItemFilter(task_types=("x", "y"), durations=("short",)),
        ItemFilter(domains=("d",)),
        ItemFilter(item_ids=("i0", "i3", "missing")),
        ItemFilter(task_types=("nowhere",)),
    ],
)
def test_in_memory_filter_selects_what_the_sql_selects(item_filter):
    """The dashboard's in-memory cut and the SQL fragment agree, missing values included (in no list)."""
    import duckdb

    from backend.scope.filters import filter_sql, in_memory_mask

    items = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(6)],
            "task_type": ["x", None, "y", "x", None, "z"],
            "duration": ["short", "long", None, "short", "short", "long"],
            "domain": [None, "d", "d", None, "e", "d"],
        }
    ).astype("str")
    items = items.where(items != "None", None)
    sql, params = filter_sql(item_filter, alias="it")
    with duckdb.connect() as con:
        con.register("scope_items", items.assign(i=np.arange(len(items))))
        keep = con.execute(f"SELECT i FROM scope_items it WHERE {sql}", params).fetchnumpy()["i"]
    assert np.flatnonzero(in_memory_mask(items, item_filter)).tolist() == sorted(keep.tolist())


def test_free_text_and_annotation_tags_go_through_sql():
    from backend.scope.filters import in_memory_mask

    items = pd.DataFrame({"item_id": ["a"], "task_type": ["x"]})
    assert in_memory_mask(items, ItemFilter(search="a")) is None
    assert in_memory_mask(items, ItemFilter(tags=("hard",))) is None


def test_available_counts_repeats_within_one_file_once(tmp_path):
    """Rows and distinct items per cell when one file holds the same cells twice (a repeat run beside the main one)."""
    from store.store import Store

    store = Store(tmp_path / "s")
    both = pd.concat([response_rows(DATA, run="main"), response_rows(DATA, run="r2")], ignore_index=True)
    store.append({"responses": both, "items": item_rows(6, task_type=["x", "y"] * 3)})
    info = available(store)
    direct = _direct_counts(store)
    assert _available_counts(info) == {k: items for k, (_, items) in direct.items()}
    assert info.n_responses == len(both) == 2 * sum(items for _, items in direct.values())
