"""The Vega-Lite charts (backend/present/charts*.py), which the pages and the report draw, show the report
dicts' own numbers; data text stays data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from backend import views
from backend.contracts.base import to_json
from backend.contracts.views import Overlap
from backend.present import charts, charts_items, series
from backend.present.palette import NEUTRAL, WRONG, model_colours
from backend.present.series import Curve
from backend.scope.filters import ItemFilter
from backend.scope.inspector import item_detail
from backend.scope.resolve import Scope
from backend.scope.texts import trajectory_rows
from backend.scope.view import open_view
from store.store import Store

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def overview(demo_store):
    store = Store(demo_store)
    resolved = Scope(
        benchmark="synthetic-videomme", models=("synthetic-A-7B", "synthetic-B-13B"), grid=(), item_filter=ItemFilter()
    ).resolve(store)
    return views.overview(open_view(store, resolved), bootstrap=200)


def _rows(spec: dict, **match) -> list[dict]:
    return [r for r in spec["data"]["values"] if all(r[k] == v for k, v in match.items())]


def test_curve_and_flows_draws_the_overviews_numbers(overview):
    colours = model_colours(list(overview.models))
    top, bottom = charts.curve_and_flows(Curve.of(overview), colours)
    json.dumps([top, bottom], allow_nan=False)  # plain JSON: no NaN, nothing a browser could not parse
    grid = overview.grid
    for model, rec in to_json(overview.models).items():
        rows = _rows(top, model=model)
        assert [r["config"] for r in rows] == grid and [r["x"] for r in rows] == list(range(len(grid)))
        np.testing.assert_allclose([r["accuracy"] for r in rows], [100 * rec["accuracy"][c] for c in grid])
        for r in rows:
            lo, hi = rec["ci"]["accuracy"][r["config"]]
            assert (r["lo"], r["hi"]) == pytest.approx((100 * lo, 100 * hi))
        for kind, sign in (("rescued", 1), ("harmed", -1)):
            bars = _rows(bottom, model=model, kind=kind)
            assert [b["items"] for b in bars] == [sign * t[kind] for t in rec["transitions"]]
            assert [b["step"] for b in bars] == [f"{t['from']} → {t['to']}" for t in rec["transitions"]]
    assert top["title"] == series.CURVE_TITLE


def test_configuration_labels_are_a_json_literal_in_the_tick_expression():
    hostile = ['8f"] + alert(1) + ["', "x\\", "<b>16f</b>", "32f\u2028"]
    expr = charts._labels(hostile)
    literal, rest = expr.split("[datum.value]")
    assert json.loads(literal) == hostile and rest == " || ''"


def _drawn(at, title: str) -> pd.DataFrame:
    """The data of the page's Vega-Lite chart whose title starts with ``title`` (sent as an Arrow table)."""
    (chart,) = [c for c in at.get("vega_lite_chart") if json.loads(c.proto.spec).get("title", "").startswith(title)]
    return pa.ipc.open_stream(chart.proto.data.data).read_pandas()


@pytest.mark.usefixtures("app_env")
def test_inspector_charts_draw_the_items_logged_responses(demo_store, monkeypatch):
    monkeypatch.setenv("TRAJAUDIT_STORE", str(demo_store))
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.query_params.update({"bench": "synthetic-videomme", "models": "synthetic-A-7B,synthetic-B-13B", "item": "001-1"})
    at.run()
    at.switch_page("pages/inspector.py").run()
    assert not at.exception and not at.error
    responses = item_detail(Store(demo_store), "synthetic-videomme", "001-1").responses
    logged, _ = trajectory_rows(responses)
    logged = [r for r in logged if r["correct"] is not None]  # every model that answered the item
    grid = _drawn(at, "Answer per model and configuration")
    drawn = {(m, c): s for m, c, s in zip(grid["model"], grid["config"], grid["state"], strict=True)}
    assert drawn == {(r["model"], r["config"]): "correct" if r["correct"] == 1 else "wrong" for r in logged}
    points = _drawn(at, "Confidence per configuration")
    by_cell = {
        (s.split(" · ")[0], c): v for s, c, v in zip(points["series"], points["config"], points["value"], strict=True)
    }
    assert by_cell == {(r["model"], r["config"]): r["confidence"] for r in logged if r["confidence"] is not None}


def test_compare_charts_draw_the_overlaps_numbers(demo_store):
    store = Store(demo_store)
    models = ("synthetic-A-7B", "synthetic-B-13B", "synthetic-C-72B")
    resolved = Scope(benchmark="synthetic-videomme", models=models, grid=(), item_filter=ItemFilter()).resolve(store)
    overlap = views.compare_view(open_view(store, resolved), top=10, bootstrap=0).overlap
    assert isinstance(overlap, Overlap)  # three models
    spec = charts.jaccard(overlap)
    drawn = {(c["a"], c["b"]): c["jaccard"] for c in spec["data"]["values"]}
    assert drawn == {
        (a, b): None if v is None or v != v else v
        for a, row in zip(overlap.models, overlap.jaccard, strict=True)
        for b, v in zip(overlap.models, row, strict=True)
    }
    bars = charts.intersections(overlap)
    assert [(r["set"], r["items"]) for r in bars["data"]["values"]] == [
        (" + ".join(r.models), r.n) for r in overlap.intersections[:15]
    ]
    json.dumps([spec, bars], allow_nan=False)


def test_items_heatmap_folds_one_row_per_item_into_every_cell(demo_store):
    """The heatmap's data: one row per item drawn, a 0/1 column per configuration equal to ``views.heatmap``'s
    cell; each class named once with its full count."""
    store = Store(demo_store)
    resolved = Scope(
        benchmark="synthetic-videomme", models=("synthetic-A-7B",), grid=(), item_filter=ItemFilter()
    ).resolve(store)
    heat = views.heatmap(open_view(store, resolved), "synthetic-A-7B", 1500)
    spec = charts_items.heatmap(heat)
    rows = spec["data"]["values"]
    assert [r["item"] for r in rows] == heat.rows["item_id"].astype(str).tolist()
    assert np.array_equal([[r[f"c{k}"] for k in range(len(heat.grid))] for r in rows], heat.z)
    labels = spec["layer"][2]["data"]["values"]
    assert [b["label"] for b in labels] == [
        f"{c} ({heat.class_counts[c]:,})" for c in dict.fromkeys(heat.rows["trajectory_class"])
    ]
    json.dumps(spec, allow_nan=False)


def test_rerun_charts_label_each_bar_and_colour_the_answer():
    probs = charts_items.option_probs({"A": 0.1, "B": 0.7, "C": 0.2}, answer="B", target="C")
    assert [(v["option"], v["p"]) for v in probs["data"]["values"]] == [("A", 0.1), ("B", 0.7), ("C ✓", 0.2)]
    assert [v["colour"] for v in probs["data"]["values"]] == [NEUTRAL, WRONG, NEUTRAL]  # a wrong answer: red
    times = charts_items.phase_timings({"generate": 0.002, "decode": 0.001, "extra": 0.003}, ("decode", "generate"))
    assert [(v["phase"], v["ms"]) for v in times["data"]["values"]] == [
        ("decode", 1.0),
        ("generate", 2.0),
        ("extra", 3.0),
    ]
    assert times["title"] == "Phase timings (6 ms in all)"


def test_confidence_markers_have_a_size_with_one_kind_or_several():
    """With only budget steps on a chart, the markers keep their size (a one-value nominal size scale drew
    them at size 0 in Vega-Lite: lines without points on an open-ended item)."""
    ladder = [
        {
            "series": "m",
            "config": c,
            "value": 0.5,
            "state": "correct",
            "answer": "A",
            "kind": "ladder",
            "line": "m\x1f0",
        }
        for c in ("8f", "16f")
    ]

    def markers(points: list[dict], order: list[str]) -> dict:
        trajectory = {"points": points, "order": order, "series": ["m"], "value": "score", "axis": "score"}
        spec = charts.confidence_chart(trajectory, {"m": "#123456"})
        (layer,) = [la for la in spec["layer"] if "shape" in la["encoding"]]
        return layer["encoding"]

    assert markers(ladder, ["8f", "16f"])["size"] == {"value": 110}
    other = {**ladder[0], "config": "8f@50k", "kind": "other", "line": None}
    two = markers([*ladder, other], ["8f", "16f", "8f@50k"])
    assert two["size"]["scale"] == {"domain": ["ladder", "other"], "range": [110, 130]}


def test_compare_bars_carry_their_values_as_labels():
    rows = [
        {"model": "a", "metric": "Oracle headroom", "value": 12.5, "lo": 10.0, "hi": 15.0},
        {"model": "b", "metric": "Oracle headroom", "value": 8.0, "lo": None, "hi": None},
        {"model": "a", "metric": "Text overwrite", "value": None, "lo": None, "hi": None},
    ]
    spec = charts.headline_bars(rows, ["a", "b"], {"a": "#111111", "b": "#222222"}, "metric")
    labels = [layer for layer in spec["layer"] if isinstance(layer["mark"], dict) and layer["mark"]["type"] == "text"]
    assert len(labels) == 1 and labels[0]["encoding"]["text"] == {
        "field": "value",
        "type": "quantitative",
        "format": ".1f",
    }
    # placed above the interval where there is one, above the bar otherwise; no label for a missing value
    assert {"filter": "isValid(datum.value)"} in labels[0]["transform"]
    assert labels[0]["encoding"]["y"]["field"] == "top"
