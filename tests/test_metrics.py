"""Every MCQA metric of METRICS.md pinned on small matrices computed by hand (see the comments)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from backend.analysis.mcnemar import mcnemar_exact
from backend.analysis.metrics import (
    _indicators,
    _summaries,
    best_fixed_index,
    flow_items,
    mcqa_metrics,
    task_type_breakdown,
    transition,
    transition_between,
)
from backend.analysis.stats import (
    bootstrap_means,
    bootstrap_weights,
    distinct_rows,
    percentile_interval,
)
from backend.contracts.base import to_json
from backend.scope.filters import ItemFilter
from backend.scope.loader import load_matrix
from backend.scope.matrix import available
from store.configs import lower_matrix
from store.errors import UserError
from tests.matrix_fixtures import (
    HEADLINES_WITH_CI,
    basic_store,
    build_store,
    response_rows,
    store_from_rows,
    store_from_writes,
)


@pytest.fixture
def basic(tmp_path):
    return basic_store(tmp_path / "s")


def test_basic_metrics_by_hand(basic):
    out = to_json(mcqa_metrics(load_matrix(basic, ["m"]), bootstrap=0))
    assert out["grid"] == ["text", "8f", "16f", "32f"] and out["n_items"] == 5 and out["n_excluded"] == 0
    m = out["models"]["m"]
    assert m["accuracy"] == {"text": 0.4, "8f": 0.4, "16f": 0.4, "32f": 0.6}
    assert m["best_fixed"] == {"config": "32f", "accuracy": 0.6}
    assert m["oracle_accuracy"] == pytest.approx(0.8)  # i0..i3 are right somewhere
    assert m["oracle_headroom"] == pytest.approx(0.2)
    assert m["visual_confusion_rate"] == pytest.approx(0.4)  # i1, i2
    assert m["text_overwrite_rate"] == pytest.approx(0.2)  # i2 of 5 items
    assert m["text_overwrite_of_text_correct"] == pytest.approx(0.5)  # i2 of {i0, i2}
    assert m["terminal_regressions"] == 1  # i2
    # text->8f: rescued i1, harmed i2; 8f->16f: rescued i3, harmed i1; 16f->32f: rescued i1.
    assert [(t["from"], t["to"], t["rescued"], t["harmed"]) for t in m["transitions"]] == [
        ("text", "8f", 1, 1),
        ("8f", "16f", 1, 1),
        ("16f", "32f", 1, 0),
    ]
    assert [t["net"] for t in m["transitions"]] == pytest.approx([0.0, 0.0, 0.2])
    assert [t["churn"] for t in m["transitions"]] == pytest.approx([0.4, 0.4, 0.2])
    assert [t["mcnemar_p"] for t in m["transitions"]] == pytest.approx([1.0, 1.0, 1.0])
    assert m["mean_churn"] == pytest.approx(1 / 3)
    assert m["ci"] == {}
    json.dumps(out)  # the contract is plain JSON


def test_pairs_and_any_transition(basic):
    mx = load_matrix(basic, ["m"])
    out = to_json(mcqa_metrics(mx, bootstrap=0, pairs=[("text", "32f")]))
    # text->32f: rescued i1, i3; harmed i2; mean churn still over the consecutive pairs.
    assert out["models"]["m"]["transitions"] == [to_json(transition(mx, "m", "text", "32f"))]
    assert to_json(transition(mx, "m", "text", "32f")) == {
        "from": "text",
        "to": "32f",
        "rescued": 2,
        "harmed": 1,
        "net": pytest.approx(0.2),
        "churn": pytest.approx(0.6),
        "mcnemar_p": pytest.approx(1.0),
    }
    assert out["models"]["m"]["mean_churn"] == pytest.approx(1 / 3)
    with pytest.raises(UserError, match="64f"):
        to_json(mcqa_metrics(mx, bootstrap=0, pairs=[("text", "64f")]))


def test_mcnemar_against_binomial_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(1, 9) == pytest.approx(2 * 11 / 1024)  # P[X<=1], X~Bin(10, 1/2) = 11/1024
    assert mcnemar_exact(10, 2) == pytest.approx(2 * 79 / 4096)  # (1 + 12 + 66) / 2^12
    assert mcnemar_exact(np.array([0, 1]), np.array([5, 9])) == pytest.approx([2 / 32, 22 / 1024])


def test_best_fixed_tie_goes_to_lowest_cost(tmp_path):
    # 8f and 16f tie at 2/3; 8f is cheaper even though the grid lists 16f first.
    store = build_store(tmp_path / "s", {"m": {"text": [0, 0, 0], "16f": [1, 1, 0], "8f": [1, 0, 1]}})
    out = to_json(mcqa_metrics(load_matrix(store, ["m"], grid=["text", "16f", "8f"]), bootstrap=0))
    assert out["models"]["m"]["best_fixed"] == {"config": "8f", "accuracy": pytest.approx(2 / 3)}


def test_best_fixed_tie_between_unordered_configs_takes_grid_order():
    # 16f@100k states pixels, 8f does not: not comparable, so the first in grid order wins;
    # with 4f also tied, 4f is cheaper than 8f but still not comparable with 16f@100k.
    grid = ["16f@100k", "8f", "4f"]
    lower = lower_matrix(grid)
    assert best_fixed_index(np.array([2, 2, 1]), lower) == 0
    assert best_fixed_index(np.array([1, 2, 2]), lower) == 2  # 4f < 8f
    assert best_fixed_index(np.array([2, 2, 2]), lower) == 0


# Spatial budgets, grid order != cost order: 8f@400k = 3.2M px, 16f@100k = 8f@200k = 1.6M px (equal:
# not ordered), 32f@25k = 0.8M px.
#        8f@400k 16f@100k 8f@200k 32f@25k
#   p       1       1        0       0     not confused by cost (a drop only in grid order)
#   q       0       0        1       1     confused (0.8M right, 1.6M wrong); terminal (top 8f@400k)
#   r       1       1        1       1
SPATIAL_GRID = ["8f@400k", "16f@100k", "8f@200k", "32f@25k"]
SPATIAL = {"m": {"8f@400k": [1, 0, 1], "16f@100k": [1, 0, 1], "8f@200k": [0, 1, 1], "32f@25k": [0, 1, 1]}}


def test_confusion_and_terminal_follow_cost_not_grid_position(tmp_path):
    store = build_store(tmp_path / "s", SPATIAL)
    mx = load_matrix(store, ["m"], grid=SPATIAL_GRID)
    m = to_json(mcqa_metrics(mx, bootstrap=0))["models"]["m"]
    assert m["visual_confusion_rate"] == pytest.approx(1 / 3)  # q only
    assert m["terminal_regressions"] == 1  # q: the top is 8f@400k, the unique costliest
    # All four tie at 2/3; 32f@25k is cheaper than every other one, though last in the grid.
    assert m["best_fixed"] == {"config": "32f@25k", "accuracy": pytest.approx(2 / 3)}
    assert m["text_overwrite_rate"] is None and m["text_overwrite_of_text_correct"] is None
    from backend.scope.tags import item_tags

    tags = item_tags(mx).set_index("item_id")
    assert tags["confused"].to_dict() == {"i0": False, "i1": True, "i2": False}


def test_overwrite_not_available_without_text_in_ci_too(tmp_path):
    store = build_store(tmp_path / "s", {"m": {"8f": [1, 0, 1, 0], "16f": [0, 0, 1, 1]}})
    m = to_json(mcqa_metrics(load_matrix(store, ["m"]), bootstrap=50))["models"]["m"]
    assert m["text_overwrite_rate"] is None and m["text_overwrite_of_text_correct"] is None
    assert m["ci"]["text_overwrite_rate"] is None and m["ci"]["text_overwrite_of_text_correct"] is None
    assert m["ci"]["visual_confusion_rate"] is not None


def test_matched_grid_excludes_and_counts(tmp_path):
    data = {
        "a": {"text": [1, 1, 1], "8f": [1, 0, 1], "16f": [0, 1, 1]},
        "b": {"8f": [1, 1, 0], "16f": [1, None, 0], "32f": [0, 0, 0]},
    }
    store = build_store(tmp_path / "s", data)
    mx = load_matrix(store, ["a", "b"])
    assert mx.grid == ["8f", "16f"]  # the configs both have
    assert mx.items["item_id"].tolist() == ["i0", "i2"]  # i1 lacks (b, 16f)
    assert mx.n_excluded == 1 and mx.excluded_reasons == {"b lacks 16f": 1}
    out = to_json(mcqa_metrics(mx, bootstrap=0))
    assert out["n_items"] == 2 and out["n_excluded"] == 1
    assert out["models"]["a"]["accuracy"] == {"8f": 1.0, "16f": 0.5}
    with pytest.raises(UserError, match=r"'a'.*'32f'"):
        load_matrix(store, ["a", "b"], grid=["8f", "32f"])
    with pytest.raises(UserError, match="8frames"):
        load_matrix(store, ["a"], grid=["8frames"])
    with pytest.raises(UserError, match="'zz'"):
        load_matrix(store, ["zz"])


def test_repeats_resolved_by_the_rule(tmp_path):
    t0, t1 = pd.Timestamp("2024-01-01", tz="UTC"), pd.Timestamp("2024-02-01", tz="UTC")
    base = {"m": {"8f": [0, 0, 0, 0]}}
    other = {"m": {"8f": [1, 1, 1, 1]}}
    store = store_from_rows(
        tmp_path / "s",
        [
            response_rows(base, run="main", origin="ingest", written_at=t1),
            response_rows({"m": {"8f": [1, 1, None, None]}}, run="r2", origin="ingest", written_at=t0),
            response_rows({"m": {"8f": [None, None, 1, 1]}}, run="main", origin="rerun", written_at=t0),
        ],
        4,
    )
    # A re-run never beats an ingested row, nor another run id the main one, whatever the dates.
    assert load_matrix(store, ["m"]).correct[0, :, 0].tolist() == [0, 0, 0, 0]
    # Without a main row: not a re-run first, then the earliest written: the earlier write, whatever the
    # writers' clocks say (the later write's rows carry the earlier time here).
    only = store_from_writes(
        tmp_path / "t",
        [
            response_rows(base, run="r2", origin="ingest", written_at=t1),
            response_rows(other, run="r1", origin="ingest", written_at=t0),
            response_rows({"m": {"8f": [1, None, None, None]}}, run="main", origin="rerun", written_at=t0),
        ],
        4,
    )
    assert load_matrix(only, ["m"]).correct[0, :, 0].tolist() == [0, 0, 0, 0]
    # A store that breaks RESPONSE_KEY (two main rows for one cell): the earliest still wins.
    dup = store_from_writes(
        tmp_path / "u",
        [
            response_rows(base, run="main", origin="ingest", written_at=t1),
            response_rows(other, run="main", origin="ingest", written_at=t0),
        ],
        4,
    )
    assert load_matrix(dup, ["m"]).correct[0, :, 0].tolist() == [0, 0, 0, 0]
    # Rows written before the store kept a write sequence (no ``seq``) come first, in the order of their times.
    legacy = store_from_rows(
        tmp_path / "v",
        [
            response_rows(other, run="main", origin="ingest", written_at=t1),
            response_rows(base, run="main", origin="ingest", written_at=t0),
        ],
        4,
    )
    for rel in legacy.manifest().files["responses"]:
        table = pq.read_table(legacy.root / rel)
        pq.write_table(table.drop_columns(["seq"]), legacy.root / rel)
    assert load_matrix(legacy, ["m"]).correct[0, :, 0].tolist() == [0, 0, 0, 0]


def _random_store(tmp_path, n_items=200, seed=1):
    rng = np.random.default_rng(seed)
    grid = ["text", "8f", "16f", "32f"]
    rates = dict(zip(grid, [0.3, 0.5, 0.55, 0.6], strict=True))
    data = {m: {c: (rng.random(n_items) < p).astype(int).tolist() for c, p in rates.items()} for m in ("a", "b")}
    return build_store(tmp_path / "s", data)


def test_bootstrap_is_seeded_and_contains_the_point(tmp_path):
    mx = load_matrix(_random_store(tmp_path), ["a", "b"])
    one = to_json(mcqa_metrics(mx, bootstrap=300, seed=7))
    assert one == to_json(mcqa_metrics(mx, bootstrap=300, seed=7))
    assert one["models"]["a"]["ci"] != to_json(mcqa_metrics(mx, bootstrap=300, seed=8))["models"]["a"]["ci"]
    for model in ("a", "b"):
        m = one["models"][model]
        assert set(m["ci"]) == {"accuracy"} | HEADLINES_WITH_CI
        assert list(m["ci"]["accuracy"]) == one["grid"]  # keyed by config, in grid order
        point = {"best_fixed": m["best_fixed"]["accuracy"]} | {k: m[k] for k in HEADLINES_WITH_CI - {"best_fixed"}}
        checked = [(name, m["ci"][name], point[name]) for name in HEADLINES_WITH_CI]
        checked += [(f"accuracy {c}", m["ci"]["accuracy"][c], v) for c, v in m["accuracy"].items()]
        for name, (lo, hi), value in checked:
            assert lo <= value + 1e-9 and value <= hi + 1e-9, name


def test_pattern_bootstrap_matches_the_item_bootstrap_on_20_seeds(tmp_path):
    """Resampling pattern counts (what mcqa_metrics does) and resampling items (W @ X) give the same
    intervals within Monte-Carlo error: per statistic and endpoint, the means over 20 seeds differ
    by less than 4 standard errors (plus one item's share, the percentiles' step)."""
    n_items, n_boot, seeds = 400, 400, range(20)
    mx = load_matrix(_random_store(tmp_path, n_items=n_items, seed=5), ["a", "b"])
    ind, where = _indicators(mx.correct.astype(bool), mx)
    pattern, item = [], []
    for seed in seeds:
        ci = to_json(mcqa_metrics(mx, bootstrap=n_boot, seed=seed))["models"]
        names = sorted(set(ci["a"]["ci"]) - {"accuracy"}) + [f"accuracy[{c}]" for c in mx.grid]
        flat = {m: ci[m]["ci"] | {f"accuracy[{c}]": v for c, v in ci[m]["ci"]["accuracy"].items()} for m in mx.models}
        pattern.append([flat[m][k] for m in mx.models for k in names])
        per_model = []
        for m in range(len(mx.models)):
            boot = bootstrap_means(ind[m], n_boot, seed).astype(np.float64)
            stats = _summaries(boot, where) | {
                f"accuracy[{c}]": boot[:, where["accuracy"]][:, k] for k, c in enumerate(mx.grid)
            }
            per_model.append([percentile_interval(stats[k][:, None])[:, 0] for k in names])
        item.append(per_model)
    pattern_ci = np.array(pattern, dtype=float).reshape(len(seeds), -1)  # [seed, model x stat x (lo, hi)]
    item_ci = np.array(item, dtype=float).reshape(len(seeds), -1)
    se = np.sqrt((pattern_ci.var(axis=0, ddof=1) + item_ci.var(axis=0, ddof=1)) / len(seeds))
    gap = np.abs(pattern_ci.mean(axis=0) - item_ci.mean(axis=0))
    assert (gap <= 4 * se + 1 / n_items).all(), gap - 4 * se
    assert not np.allclose(pattern_ci[0], pattern_ci[1])  # the seeds really draw different resamples


def test_distinct_rows_count_every_item_once():
    x = np.array([[1, 0], [0, 1], [1, 0], [1, 1], [1, 0]], dtype=bool)
    first, counts, inverse = distinct_rows(x)
    assert sorted(zip(map(tuple, x[first].astype(int)), counts)) == [((0, 1), 1), ((1, 0), 3), ((1, 1), 1)]
    assert np.array_equal(x[first][inverse], x)
    wide = np.zeros((3, 70), dtype=bool)
    wide[1, 66] = True  # more than 63 columns: the packed-bytes path
    assert sorted(distinct_rows(wide)[1]) == [1, 2]


def test_bootstrap_weights_are_paired_multinomial_counts(monkeypatch):
    w = np.concatenate(list(bootstrap_weights(50, 120, seed=3)))
    assert w.shape == (120, 50) and (w.sum(axis=1) == 50).all()
    assert np.array_equal(w, np.concatenate(list(bootstrap_weights(50, 120, seed=3))))
    monkeypatch.setattr("backend.analysis.stats.CACHE_CELLS", 0)  # large matrices are streamed: same numbers
    assert np.array_equal(w, np.concatenate(list(bootstrap_weights(50, 120, seed=3))))
    x = np.arange(50, dtype=float)[:, None]
    means = bootstrap_means(x, 120, seed=3)
    assert means[:, 0] == pytest.approx(w @ x[:, 0] / 50, rel=1e-6)
    lo, hi = percentile_interval(means)[:, 0]
    assert lo < x.mean() < hi


def test_flow_items_and_cross_model_transition(tmp_path):
    data = {"a": {"8f": [1, 0, 1, 0], "16f": [0, 1, 1, 0]}, "b": {"8f": [1, 1, 0, 0], "16f": [1, 1, 1, 1]}}
    conf = {"a": {"8f": [0.9, 0.2, 0.8, 0.1], "16f": [0.3, 0.7, 0.9, 0.4]}, "b": {"8f": [0.5] * 4, "16f": [0.5] * 4}}
    mx = load_matrix(build_store(tmp_path / "s", data, confidence=conf), ["a", "b"])
    assert flow_items(mx, "a", "8f", "16f", "harmed")["item_id"].tolist() == ["i0"]
    rescued = flow_items(mx, "a", "8f", "16f", "rescued")
    assert rescued["item_id"].tolist() == ["i1"]
    assert rescued[["confidence_from", "confidence_to"]].to_numpy()[0] == pytest.approx([0.2, 0.7])
    assert flow_items(mx, "a", "8f", "16f", "stable-correct")["item_id"].tolist() == ["i2"]
    assert flow_items(mx, "a", "8f", "16f", "stable-wrong")["item_id"].tolist() == ["i3"]
    with pytest.raises(UserError, match="flow"):
        flow_items(mx, "a", "8f", "16f", "lost")
    # a@16f [0,1,1,0] -> b@8f [1,1,0,0]: rescued i0, harmed i2.
    t = to_json(transition_between(mx, ("a", "16f"), ("b", "8f")))
    assert (t["from_model"], t["from"], t["to_model"], t["to"]) == ("a", "16f", "b", "8f")
    assert (t["rescued"], t["harmed"]) == (1, 1)


def test_task_type_breakdown(basic):
    table = task_type_breakdown(load_matrix(basic, ["m"]), "m")
    # B = {i2, i3, i4}: text 1/3, 8f 0, 16f 1/3, 32f 1/3; oracle 2/3; confused i2; overwrite i2.
    b = table[0]
    assert [row["task_type"] for row in table] == ["B", "A"]  # larger group first
    assert b["n"] == 3
    assert [b[f"accuracy[{c}]"] for c in ("text", "8f", "16f", "32f")] == pytest.approx([1 / 3, 0, 1 / 3, 1 / 3])
    assert (b["best_fixed"], b["oracle_accuracy"], b["oracle_headroom"]) == pytest.approx((1 / 3, 2 / 3, 1 / 3))
    assert (b["visual_confusion_rate"], b["text_overwrite_rate"]) == pytest.approx((1 / 3, 1 / 3))


def test_item_filter_is_hashable_and_knows_when_empty():
    f = ItemFilter(task_types=["A"], search="  ")  # lists are stored as tuples, blank search as None
    assert f == ItemFilter(task_types=("A",)) and hash(f) == hash(ItemFilter(task_types=("A",)))
    assert ItemFilter().is_empty() and ItemFilter(search=" ").is_empty() and not f.is_empty()


def test_item_filter_narrows_the_scope(basic):
    mx = load_matrix(basic, ["m"], item_filter=ItemFilter(task_types=("A",)))
    assert mx.items["item_id"].tolist() == ["i0", "i1"] and mx.n_excluded == 0
    assert load_matrix(basic, ["m"], item_filter=ItemFilter(search="CATS")).items["item_id"].tolist() == ["i2"]
    empty = load_matrix(basic, ["m"], item_filter=ItemFilter(task_types=("Z",)))
    with pytest.raises(UserError, match="no item"):
        to_json(mcqa_metrics(empty, bootstrap=0))


def test_available_lists_what_the_store_holds(basic):
    info = available(basic)
    assert info.models == ["m"] and info.benchmarks == ["bench"]
    assert info.configs == {"m": {"bench": ["text", "8f", "16f", "32f"]}}
    assert info.task_types == ["A", "B"] and info.n_responses == 20 and info.n_items == 5


@pytest.mark.parametrize("width", [1, 3, 6, 16, 17, 40])
@pytest.mark.parametrize("n_items", [0, 1, 9, 5000])
def test_distinct_rows_counts_exactly_what_unique_sorts(width, n_items):
    """Small grids count trajectory codes instead of sorting them: the same firsts, counts and inverse."""
    x = np.random.default_rng(width * 1000 + n_items).random((n_items, width)) < 0.6
    codes = x.astype(np.int64) @ (np.int64(1) << np.arange(width, dtype=np.int64))
    _, first, inverse, counts = np.unique(codes, return_index=True, return_inverse=True, return_counts=True)
    got = distinct_rows(x)
    for a, b in zip(got, (first, counts, inverse.ravel()), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
