"""Page-level backend views (flows, compare, views, inspector) on hand-checked matrices, and their CLI twins."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from backend.analysis.compare import confusion_overlap, disagreement
from backend.analysis.flows import CLASSES, heatmap, sankey, trajectory_classes
from backend.analysis.metrics import mcqa_metrics
from backend.cli import main
from backend.contracts.base import to_json
from backend.contracts.store import StoreContents
from backend.present.tables import flow_table, headline_frame, sankey_steps, step_table, transitions_table
from backend.scope.inspector import frame_plan, item_detail
from backend.scope.items import item_order, item_page
from backend.scope.loader import load_matrix
from backend.scope.matrix import available
from backend.scope.paging import default_models
from backend.scope.resolve import default_grid, tag_subset
from backend.videos.decode import VideoInfo
from store.errors import UserError
from tests.matrix_fixtures import build_store, store_contents

# Items i0..i3. A: i0 regressing (1,1,0), i1 gain (0,1,1), i2 oscillating (1,0,1), i3 stable-wrong.
DATA = {
    "A": {"text": [1, 0, 1, 0], "8f": [1, 1, 0, 0], "16f": [0, 1, 1, 0]},
    "B": {"text": [1, 1, 1, 0], "8f": [1, 1, 1, 0], "16f": [1, 0, 1, 1]},
}
CONF = {
    "A": {"text": [0.9, 0.4, 0.8, 0.3], "8f": [0.7, 0.6, 0.5, 0.4], "16f": [0.5, 0.9, 0.6, 0.2]},
    "B": {"text": [0.6] * 4, "8f": [0.6] * 4, "16f": [0.6] * 4},
}


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    """Built once per module: every test here only reads the store and its matrix."""
    store = build_store(tmp_path_factory.mktemp("hand") / "s", DATA, confidence=CONF)
    return store, load_matrix(store, ["A", "B"], grid=["text", "8f", "16f"])


def _link(view, frm, kind):
    return next(link for link in view["links"] if link["from"] == frm and link["kind"] == kind)


def test_sankey_nodes_and_links_by_hand(hand):
    _, matrix = hand
    view = to_json(sankey(matrix, "A"))
    assert [(n["config"], n["state"], n["count"]) for n in view["nodes"]] == [
        ("text", "correct", 2),
        ("text", "wrong", 2),
        ("8f", "correct", 2),
        ("8f", "wrong", 2),
        ("16f", "correct", 2),
        ("16f", "wrong", 2),
    ]
    # text -> 8f: i0 stays correct, i1 rescued, i2 harmed, i3 stays wrong.
    for kind in ("rescued", "harmed", "stable-correct", "stable-wrong"):
        assert _link(view, "text", kind)["count"] == 1
    rescued = _link(view, "text", "rescued")
    assert (rescued["source"], rescued["target"]) == (1, 2)  # wrong at text -> correct at 8f
    harmed = _link(view, "8f", "harmed")
    assert (harmed["source"], harmed["target"]) == (2, 5)
    assert harmed["mcnemar_p"] == pytest.approx(1.0) and harmed["net"] == 0.0 and harmed["churn"] == 0.5
    assert len(view["links"]) == 8


def test_sankey_between_two_chosen_configs_and_errors(hand):
    _, matrix = hand
    model = sankey(matrix, "A", ["text", "16f"])
    view = to_json(model)
    assert view["configs"] == ["text", "16f"]
    # text -> 16f: i0 harmed, i1 rescued, i2 stays correct, i3 stays wrong.
    assert {r["kind"]: r["count"] for r in view["links"]} == {
        "rescued": 1,
        "harmed": 1,
        "stable-correct": 1,
        "stable-wrong": 1,
    }
    assert len(flow_table(model)) == 4
    with pytest.raises(UserError, match="at least two"):
        to_json(sankey(matrix, "A", ["8f"]))
    with pytest.raises(UserError, match="not in the grid"):
        to_json(sankey(matrix, "A", ["text", "64f"]))


def test_flow_table_filters_a_kind_and_steps_hold_net_churn_and_p_once(hand):
    """``--kind`` shows that flow alone, an empty one too (B is rescued nowhere from text to 8f); a step's net, churn and
    McNemar p are one row of ``step_table``, not repeated on each of its flows."""
    _, matrix = hand
    view = sankey(matrix, "A")
    harmed = flow_table(view, "harmed")
    assert harmed[["from", "to", "kind", "count"]].values.tolist() == [
        ["text", "8f", "harmed", 1],
        ["8f", "16f", "harmed", 1],
    ]
    assert flow_table(sankey(matrix, "B"), "rescued")["count"].tolist() == [0, 1]
    assert list(flow_table(view).columns) == ["from", "to", "kind", "count", "share"]
    steps = step_table(view)
    assert steps[["from", "to", "churn"]].values.tolist() == [["text", "8f", 0.5], ["8f", "16f", 0.5]]
    assert steps["net"].tolist() == [0.0, 0.0] and list(steps.columns) == ["from", "to", "net", "churn", "mcnemar_p"]
    # the page's table of the steps: one row each, worded as the Overview's transitions (points, with a sign)
    text = transitions_table({"A": sankey_steps(view)})
    assert [row[1:] for row in text.rows] == [
        ["text → 8f", "1", "1", "+0.0", "50.0", "1"],
        ["8f → 16f", "1", "1", "+0.0", "50.0", "1"],
    ]
    assert text.columns[-3:] == ["Net (pp)", "Churn (pp)", "McNemar p"]


def test_cli_flows_kind_prints_that_flow_and_the_step_once(hand, capsys):
    store, _ = hand
    capsys.readouterr()
    argv = ["flows", "--store", str(store.root), "--model", "A", "--from", "text", "--to", "16f", "--kind", "harmed"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "text -> 16f: net +0.0 pt, churn 50.0%, McNemar p 1"
    assert lines[2].split() == ["from", "to", "kind", "count", "share"]
    assert lines[3].split() == ["text", "16f", "harmed", "1", "25.0%"] and lines[4].startswith("trajectory classes")


def test_trajectory_classes_and_heatmap_order(hand):
    _, matrix = hand
    y = matrix.correct[0].astype(bool)
    assert [CLASSES[c] for c in trajectory_classes(y)] == ["regressing", "monotone-gain", "oscillating", "stable-wrong"]
    full = heatmap(matrix, "A")
    assert full.rows["item_id"].tolist() == ["i1", "i0", "i2", "i3"]
    assert full.z.tolist() == [[0, 1, 1], [1, 1, 0], [1, 0, 1], [0, 0, 0]]
    assert full.class_counts == {
        "stable-correct": 0,
        "monotone-gain": 1,
        "regressing": 1,
        "oscillating": 1,
        "stable-wrong": 1,
    }
    thin = heatmap(matrix, "A", max_rows=2)
    assert thin.stride == 2 and thin.rows["item_id"].tolist() == ["i1", "i2"]
    assert thin.class_counts == full.class_counts  # counts always cover every item


def test_confusion_overlap_by_hand(hand):
    _, matrix = hand
    ov = to_json(confusion_overlap(matrix))
    # A confused on i0 (8f -> 16f) and i2 (text -> 8f); B on i1 (8f -> 16f).
    assert ov["confused"] == {"A": 2, "B": 1}
    assert ov["confused_by_all"] == 0 and ov["confused_by_any"] == 3
    assert ov["jaccard"] == [[1.0, 0.0], [0.0, 1.0]]
    assert ov["intersections"] == [{"models": ["A"], "n": 2}, {"models": ["B"], "n": 1}]


def test_disagreement_ranking_by_hand(hand):
    _, matrix = hand
    table = disagreement(matrix, top=None)
    assert table["item_id"].to_pylist() == ["i1", "i0", "i2", "i3"]
    assert table["disagreement"].to_pylist() == pytest.approx([2 / 3, 1 / 3, 1 / 3, 1 / 3])
    assert table["split_configs"].to_pylist() == [2, 1, 1, 1]
    assert table.to_pylist()[0]["accuracy:A"] == pytest.approx(2 / 3)
    assert len(disagreement(matrix, top=2)) == 2
    with pytest.raises(UserError, match="two models"):
        disagreement(dataclasses.replace(matrix, models=["A"], correct=matrix.correct[:1]))


def test_headline_table_keeps_na_for_overwrite_without_text(hand):
    store, _ = hand
    no_text = load_matrix(store, ["A"], grid=["8f", "16f"])
    table = headline_frame(mcqa_metrics(no_text, bootstrap=50).models)
    assert table.loc[0, "best_fixed"] == 0.5 and table.loc[0, "best_fixed_config"] == "8f"
    assert np.isnan(table.loc[0, "text_overwrite_rate"]) and np.isnan(table.loc[0, "text_overwrite_rate_lo"])
    assert table.loc[0, "oracle_headroom_lo"] <= table.loc[0, "oracle_headroom"] <= table.loc[0, "oracle_headroom_hi"]


def _available(configs: dict[str, dict[str, dict[str, int]]], n_items: int = 10) -> StoreContents:
    """What ``available()`` says of items per configuration (main runs only)."""
    return store_contents(
        configs={m: {b: list(c) for b, c in per.items()} for m, per in configs.items()},
        coverage=configs,
        model_items={m: {b: n_items for b in per} for m, per in configs.items()},
    )


def test_default_grid_is_the_budget_ladder():
    full = dict.fromkeys(["text", "8f", "16f", "32f@50k", "64f/random-s1"], 10)
    avail = _available({"A": {"b": full}, "B": {"b": dict.fromkeys(["text", "8f", "16f", "32f@50k"], 10)}})
    assert default_grid(avail, ["A", "B"], "b") == ["text", "8f", "16f"]
    only_variants = _available({"A": {"b": dict.fromkeys(["32f@50k", "32f@200k", "8f@50k", "64f/random-s1"], 10)}})
    assert default_grid(only_variants, ["A"], "b") == [
        "8f@50k",
        "32f@50k",
    ]  # the spatial budget with most frame budgets


def test_default_grid_leaves_out_configurations_under_90_percent_coverage():
    avail = _available(
        {
            "A": {"b": {"text": 10, "8f": 10, "16f": 9, "32f": 8}},
            "B": {"b": {"text": 10, "8f": 10, "16f": 10, "32f": 10}},
        }
    )
    assert default_grid(avail, ["A", "B"], "b") == ["text", "8f", "16f"]
    assert default_grid(avail, ["B"], "b") == ["text", "8f", "16f", "32f"]


def test_default_models_keep_a_shared_grid():
    avail = store_contents(
        configs={
            "big": {"b": ["text", "8f", "16f", "32f"]},
            "lmms": {"b": ["16f@151k"]},  # shares nothing with the others
            "small": {"b": ["8f", "16f"]},
            "elsewhere": {"other": ["8f", "16f"]},
        }
    )
    assert default_models(avail, "b") == ["big", "small"]
    assert default_models(avail, "b", limit=1) == ["big"]
    assert default_models(store_contents(configs={"only": {"b": ["16f"]}}), "b") == ["only"]


def test_tag_subset_and_item_page(hand):
    _, matrix = hand
    confused_a = tag_subset(matrix, "A", "confused")
    assert confused_a.items["item_id"].tolist() == ["i0", "i2"]
    assert confused_a.correct.shape == (2, 2, 3)
    assert tag_subset(matrix, "A", None) is matrix
    # changes of A: i0 1, i1 1, i2 2, i3 0 -> descending: i2, i0, i1, i3.
    page, n_pages = item_page(matrix, "A", sort="changes", descending=True, page=2, page_size=2)
    assert n_pages == 2 and page["item_id"].to_pylist() == ["i1", "i3"]
    assert page["position"].to_pylist() == [1, 3]
    first = page.to_pylist()[0]
    assert first["tags"] == ["monotone-gain"]
    assert first["confidence"] == pytest.approx([0.4, 0.6, 0.9])
    assert first["mean_confidence"] == pytest.approx((0.4 + 0.6 + 0.9) / 3)
    last, _ = item_page(matrix, "A", sort="item", page=99, page_size=3)  # clamped to the last page
    assert last["item_id"].to_pylist() == ["i3"]
    # The sort once for every page (the pages keep it): its pages, end to end, are the order.
    order = item_order(matrix, "A", "changes", True)
    assert order.tolist() == [2, 0, 1, 3]
    again, _ = item_page(matrix, "A", sort="changes", descending=True, page=2, page_size=2, order=order)
    assert repr(again.to_pylist()) == repr(page.to_pylist())  # repr: the drop is NaN (no scores), never equal
    with pytest.raises(UserError, match="unknown sort 'size'"):
        item_order(matrix, "A", "size")


def test_frame_plan_logged_reconstructed_and_unknown():
    """METRICS.md "Frames seen": stored indices are logged; a named harness sampler reconstructs
    from the video's length; anything else is unknown, never our own uniform policy."""
    columns = {
        "model": ["A", "A", "B", "A", "B"],
        "config": ["text", "8f", "8f", "16f", "16f"],
        "frame_indices": [None, [0, 10, 20, 30, 40, 50, 60, 70], [0, 10, 20, 30, 40, 50, 60, 70], None, None],
        "frames_source": [None, "logged", "logged", "reconstructed", None],
        "sampler": [None, None, None, "vlmevalkit", None],
        "seed": [None] * 5,
    }
    responses = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    info = VideoInfo(n_frames=80, fps=10.0, duration_s=8.0, width=64, height=48)
    plan = frame_plan(responses, ["text", "8f", "16f"], info)
    assert [row["config"] for row in plan] == ["8f", "16f", "16f"]  # text has no frames
    assert plan[0]["source"] == "logged" and plan[0]["models"] == ["A", "B"]
    assert plan[0]["timestamps"][:2] == [0.0, 1.0]
    assert plan[1]["source"] == "reconstructed" and plan[1]["sampler"] == "vlmevalkit"
    assert plan[1]["indices"] == [int(i * 80 / 17) for i in range(1, 17)]  # VLMEvalKit: int(i * T / (N + 1))
    assert plan[1]["added"] == sorted(set(plan[1]["indices"]) - set(range(0, 80, 10)))
    assert plan[2]["source"] == "unknown" and plan[2]["indices"] is None and plan[2]["models"] == ["B"]
    catalog = frame_plan(responses, ["16f"], None, (300, 30.0))  # the catalog's length, no file found
    assert catalog[0]["indices"] == [int(i * 300 / 17) for i in range(1, 17)]
    blind = frame_plan(responses, ["8f", "16f"], None)
    assert blind[0]["indices"] == [0, 10, 20, 30, 40, 50, 60, 70] and blind[0]["timestamps"] is None
    assert blind[1]["source"] == "reconstructed" and blind[1]["indices"] is None
    assert "videos link" in blind[1]["note"]
    assert blind[2]["source"] == "unknown" and blind[2]["indices"] is None


def test_item_detail_orders_responses_and_refuses_unknown(hand):
    store, _ = hand
    detail = item_detail(store, "bench", "i1")
    assert [r["config"] for r in detail.responses] == ["text", "8f", "16f"] * 2
    assert [r["model"] for r in detail.responses] == ["A"] * 3 + ["B"] * 3
    with pytest.raises(UserError, match="not found"):
        item_detail(store, "bench", "nope")


def test_cli_twins_match_the_backend(hand, capsys):
    store, matrix = hand
    assert (
        main(
            [
                "flows",
                "--store",
                str(store.root),
                "--model",
                "A",
                "--models",
                "B",
                "--grid",
                "text,8f,16f",
                "--from",
                "text",
                "--to",
                "16f",
                "--kind",
                "harmed",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["links"] == json.loads(json.dumps(to_json(sankey(matrix, "A", ["text", "16f"]))["links"]))
    assert [r["item_id"] for r in out["items"]] == ["i0"] and out["n_flow_items"] == 1
    assert out["trajectory_classes"]["oscillating"] == 1
    assert (
        main(
            [
                "compare",
                "--store",
                str(store.root),
                "--models",
                "A,B",
                "--grid",
                "text,8f,16f",
                "--bootstrap",
                "0",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["overlap"]["confused"] == {"A": 2, "B": 1}
    assert out["disagreement"][0]["item_id"] == "i1"
    assert out["metrics"]["A"]["visual_confusion_rate"] == 0.5
    assert main(["inspect", "--store", str(store.root), "--benchmark", "bench", "--item", "i1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["responses"]) == 6 and out["video"]["problem"] == (
        "no video linked for bench item i1 (this item names no video): run `trajaudit videos link --benchmark bench "
        "--dataset DIR` (DIR: the downloaded benchmark under the video root)"
    )
    assert main(["inspect", "--store", str(store.root), "--benchmark", "bench", "--item", "zzz"]) == 2
    assert "not found" in capsys.readouterr().err
    # No --benchmark: the one benchmark holding the item (the same record); an id in none is one line, exit 2.
    assert main(["inspect", "--store", str(store.root), "--item", "i1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == out
    assert main(["inspect", "--store", str(store.root), "--item", "zzz"]) == 2
    assert capsys.readouterr().err == "trajaudit inspect: error: item 'zzz' not found in any benchmark\n"


def test_inspect_without_benchmark_names_the_benchmarks_sharing_an_id(demo_store, capsys):
    """The demo's two benchmarks both number their items 001-1, ...: the user picks, the line says among what."""
    assert main(["inspect", "--store", str(demo_store), "--item", "001-1"]) == 2
    assert capsys.readouterr().err == (
        "trajaudit inspect: error: item '001-1' is in 2 benchmarks (synthetic-mlvu, synthetic-videomme): "
        "name one with --benchmark\n"
    )


def test_default_cli_grid_matches_available(hand):
    store, _ = hand
    assert default_grid(available(store), ["A", "B"], "bench") == ["text", "8f", "16f"]


@pytest.mark.parametrize("sort", ["item", "task_type", "mean_confidence", "changes"])
@pytest.mark.parametrize("descending", [False, True])
def test_item_order_is_a_stable_sort_with_missing_values_last(sort, descending):
    """Arrow's order equals pandas' stable sort by (key, item id), NaN and missing task types included."""
    from backend.scope.items import sorted_positions

    rng = np.random.default_rng(7)
    n = 300
    items = pd.DataFrame(
        {
            "item_id": [f"q{k:03d}" for k in rng.permutation(n) % 120],  # repeated ids: two benchmarks
            "task_type": pd.Series(rng.choice(["b", "a", None], n), dtype="str"),
        }
    )
    conf = np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 4, n) / 4)
    keys = {"mean_confidence": conf, "changes": rng.integers(0, 3, n)}
    frame = pd.DataFrame(keys).assign(item=items["item_id"], task_type=items["task_type"].fillna(""))
    expected = frame.sort_values(
        [sort, "item"], ascending=[not descending, True], na_position="last", kind="stable"
    ).index.to_numpy()
    got = sorted_positions(pa.Table.from_pandas(items), keys, sort, descending)
    assert got.tolist() == expected.tolist()
