"""Properties that hold for every response matrix (hypothesis), checked against brute-force definitions."""

from __future__ import annotations

import tempfile
from itertools import combinations, permutations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from backend.analysis.metrics import mcqa_metrics
from backend.analysis.stats import row_codes
from backend.contracts.base import to_json
from backend.scope.filters import ItemFilter
from backend.scope.loader import load_matrix
from backend.scope.matrix import Matrix
from backend.scope.tags import item_tags
from store.configs import lower_matrix
from tests.matrix_fixtures import build_store

LABELS = ["text", "4f", "8f", "16f", "32f", "8f@100k", "16f@50k", "4f@200k", "32f@100k"]


@st.composite
def matrices(draw, max_models=2, max_items=12):
    grid = draw(st.lists(st.sampled_from(LABELS), min_size=1, max_size=5, unique=True))
    n_models = draw(st.integers(1, max_models))
    n_items = draw(st.integers(1, max_items))
    size = n_models * n_items * len(grid)
    cells = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    y = np.array(cells, dtype=np.int8).reshape(n_models, n_items, len(grid))
    items = pd.DataFrame({"benchmark": "b", "item_id": [f"i{k}" for k in range(n_items)], "task_type": "t"})
    nan = np.full(y.shape, np.nan, dtype=np.float32)
    return Matrix([f"m{k}" for k in range(n_models)], grid, pa.Table.from_pandas(items), y, nan, nan.copy())


@settings(max_examples=150, deadline=None)
@given(matrices())
def test_metric_inequalities(mx):
    out = to_json(mcqa_metrics(mx, bootstrap=0))
    for m in out["models"].values():
        assert m["oracle_accuracy"] >= m["best_fixed"]["accuracy"] - 1e-12
        assert m["best_fixed"]["accuracy"] == max(m["accuracy"].values())
        assert 0 <= m["visual_confusion_rate"] <= 1
        for t in m["transitions"]:
            assert t["churn"] >= abs(t["net"]) - 1e-12
            assert 0 <= t["mcnemar_p"] <= 1
        if "text" in mx.grid:
            assert m["text_overwrite_rate"] <= m["visual_confusion_rate"] + 1e-12  # overwrite is a confusion
        else:
            assert m["text_overwrite_rate"] is None


def _brute_tags(traj: np.ndarray, grid: list[str]) -> dict[str, bool]:
    """The definitions of METRICS.md written as plainly as possible (loops over config pairs)."""
    lower = lower_matrix(grid)
    n = len(grid)
    pairs = [(a, b) for a, b in permutations(range(n), 2) if lower[a, b]]
    maximal = [c for c in range(n) if not lower[c].any()]
    top = maximal[0] if len(maximal) == 1 else n - 1
    text = grid.index("text") if "text" in grid else None
    return {
        "stable-correct": bool(traj.all()),
        "stable-wrong": not traj.any(),
        "monotone-gain": any(not traj[a] and traj[b] for a, b in combinations(range(n), 2))
        and not any(traj[a] and not traj[b] for a, b in combinations(range(n), 2)),
        "confused": any(traj[a] and not traj[b] for a, b in pairs),
        "text-overwrite": text is not None and bool(traj[text]) and any(not traj[c] for c in range(n) if c != text),
        "terminal-regression": (not traj[top]) and any(traj[c] for c in range(n) if lower[c, top]),
        "oscillating": sum(traj[k] != traj[k + 1] for k in range(n - 1)) >= 2,
    }


@settings(max_examples=150, deadline=None)
@given(matrices())
def test_tags_match_the_definitions(mx):
    tags = item_tags(mx)
    flat = mx.correct.reshape(-1, len(mx.grid)).astype(bool)
    rows = tags.drop(columns=["model", "benchmark", "item_id", "tags"]).to_dict("records")
    for row, traj in zip(rows, flat, strict=True):
        expected = _brute_tags(traj, mx.grid)
        assert {tag: bool(v) for tag, v in row.items()} == expected
        assert expected["stable-correct"] != (not traj.all())  # stable-correct xor has a wrong


@settings(max_examples=150, deadline=None)
@given(matrices())
def test_rates_are_shares_of_tagged_items(mx):
    out = to_json(mcqa_metrics(mx, bootstrap=0))
    tags = item_tags(mx)
    for model, m in out["models"].items():
        mine = tags[tags["model"] == model]
        assert m["visual_confusion_rate"] == mine["confused"].mean()
        assert m["terminal_regressions"] == mine["terminal-regression"].sum()
        if "text" in mx.grid:
            assert m["text_overwrite_rate"] == mine["text-overwrite"].mean()


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.lists(st.one_of(st.none(), st.integers(0, 1)), min_size=6, max_size=6), min_size=2, max_size=2),
    st.lists(st.sampled_from(["a", "b"]), min_size=6, max_size=6),
)
@pytest.mark.slow
def test_matched_grid_drops_incomplete_items_and_counts_them(cells, task_types):
    """Two models x one shared grid x 6 items with holes; a task-type filter narrows the scope."""
    assume(all(any(c is not None for c in row) for row in cells))  # else 8f leaves the matched grid
    data = {"a": {"8f": cells[0], "16f": [1] * 6}, "b": {"8f": cells[1], "16f": [0] * 6}}
    items = pd.DataFrame({"benchmark": "bench", "item_id": [f"i{k}" for k in range(6)], "task_type": task_types})
    complete = [k for k in range(6) if cells[0][k] is not None and cells[1][k] is not None]
    with tempfile.TemporaryDirectory() as tmp:
        store = build_store(tmp, data, items=items)
        for only in (None, "a"):
            scope = [k for k in range(6) if only is None or task_types[k] == only]
            mx = load_matrix(store, ["a", "b"], item_filter=ItemFilter(task_types=(only,) if only else ()))
            kept = [k for k in scope if k in complete]
            assert mx.items["item_id"].tolist() == [f"i{k}" for k in kept]
            assert mx.n_items + mx.n_excluded == len(scope)
            assert mx.correct[0, :, 0].tolist() == [cells[0][k] for k in kept]
            missing_a = sum(cells[0][k] is None for k in scope)
            assert mx.excluded_reasons.get("a lacks 8f", 0) == missing_a


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 63), n=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_row_codes_put_column_c_at_bit_c(k, n, seed):
    """The trajectory code of a row: bit c set where column c is (any width a grid can have, past one byte)."""
    x = np.random.default_rng(seed).integers(0, 2, (n, k)).astype(np.int8)
    expected = [sum(1 << c for c in range(k) if row[c]) for row in x.tolist()]
    assert row_codes(x).tolist() == expected
    assert row_codes(x.astype(bool)).tolist() == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "action", "counting", "ocr"]),
            st.sampled_from([None, "short", "medium", "long"]),
            st.one_of(st.none(), st.floats(0, 5000, allow_nan=False), st.just(float("nan"))),
        ),
        max_size=40,
    )
)
def test_offered_filter_values_are_the_pandas_group_by(rows):
    """The sidebar's filter values (``filters.offered``, Arrow and NumPy) are what the pandas definition gives:
    the task types present, sorted; the durations by the median length of their items, those without one last."""
    from backend.scope.filters import offered

    items = pa.table(
        {
            "task_type": pa.array([r[0] for r in rows], pa.large_string()),
            "duration": pa.array([r[1] for r in rows], pa.large_string()),
            "duration_s": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
    frame = items.to_pandas()
    medians = frame.dropna(subset=["duration"]).groupby("duration")["duration_s"].median()
    assert offered(items) == (
        sorted(frame["task_type"].dropna().unique()),
        medians.sort_values(na_position="last", kind="stable").index.tolist(),
    )
