"""The dashboard's Vega-Lite charts (pages/common/charts.py) draw the same numbers as their Plotly twins
in backend/report/figures.py, from the same report dict; data text stays data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from backend import views
from backend.contracts.views import Overlap
from backend.present import series
from backend.present.series import Curve
from backend.report import figures
from backend.report.palette import model_colours
from backend.scope.filters import ItemFilter
from backend.scope.inspector import item_detail
from backend.scope.resolve import Scope
from backend.scope.texts import trajectory_rows
from backend.scope.view import open_view
from pages.common import charts
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


def test_curve_and_flows_draws_the_plotly_figures_numbers(overview):
    colours = model_colours(list(overview.models))
    top, bottom = charts.curve_and_flows(Curve.of(overview), colours)
    fig = figures.curve_and_flows(overview, colours)
    json.dumps([top, bottom], allow_nan=False)  # plain JSON: no NaN, nothing a browser could not parse
    lines = {t.name: t for t in fig.data if t.type == "scatter" and t.mode == "lines+markers"}
    bands = [t for t in fig.data if t.type == "scatter" and t.fill == "toself"]
    assert set(lines) == set(overview.models) and len(bands) == len(overview.models)
    grid = overview.grid
    for model, band in zip(overview.models, bands, strict=True):
        rows = _rows(top, model=model)
        assert [r["config"] for r in rows] == grid and [r["x"] for r in rows] == list(range(len(grid)))
        np.testing.assert_allclose([r["accuracy"] for r in rows], lines[model].y)
        hi_lo = np.concatenate([[r["hi"] for r in rows], [r["lo"] for r in rows][::-1]])
        np.testing.assert_allclose(hi_lo, band.y)  # the band: highs left to right, lows back
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 2 * len(overview.models)
    for model, (up, down) in zip(overview.models, zip(bars[::2], bars[1::2], strict=True), strict=True):
        for bar, kind in ((up, "rescued"), (down, "harmed")):
            rows = _rows(bottom, model=model, kind=kind)
            np.testing.assert_allclose([r["items"] for r in rows], bar.y)
            np.testing.assert_allclose([(r["x0"] + r["x1"]) / 2 for r in rows], bar.x)
            np.testing.assert_allclose([r["x1"] - r["x0"] for r in rows], bar.width)
    assert top["title"] == series.CURVE_TITLE == fig.layout.title.text


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
    responses = item_detail(Store(demo_store), "synthetic-videomme", "001-1")["responses"]
    logged, _ = trajectory_rows(responses)
    logged = logged[logged["correct"].notna()]  # every model that answered the item: the selected ones first
    grid = _drawn(at, "Answer per model and configuration")
    drawn = {(m, c): s for m, c, s in zip(grid["model"], grid["config"], grid["state"], strict=True)}
    assert drawn == {
        (m, c): "correct" if ok == 1 else "wrong"
        for m, c, ok in zip(logged["model"], logged["config"], logged["correct"], strict=True)
    }
    points = _drawn(at, "Confidence per configuration")
    by_cell = {
        (s.split(" · ")[0], c): v for s, c, v in zip(points["series"], points["config"], points["value"], strict=True)
    }
    with_value = logged[logged["confidence"].notna()]
    assert by_cell == dict(zip(zip(with_value["model"], with_value["config"]), with_value["confidence"], strict=True))


def test_compare_charts_draw_the_plotly_figures_numbers(demo_store):
    store = Store(demo_store)
    models = ("synthetic-A-7B", "synthetic-B-13B", "synthetic-C-72B")
    resolved = Scope(benchmark="synthetic-videomme", models=models, grid=(), item_filter=ItemFilter()).resolve(store)
    overlap = views.compare_view(open_view(store, resolved), top=10, bootstrap=0).overlap
    assert isinstance(overlap, Overlap)  # three models
    spec, fig = charts.jaccard(overlap), figures.jaccard(overlap)
    drawn = {(c["a"], c["b"]): c["jaccard"] for c in spec["data"]["values"]}
    assert drawn == {
        (a, b): None if v != v else v
        for a, row in zip(fig.data[0].y, fig.data[0].z, strict=True)
        for b, v in zip(fig.data[0].x, row, strict=True)
    }
    spec, fig = charts.intersections(overlap), figures.intersections(overlap)
    assert [(r["set"], r["items"]) for r in spec["data"]["values"]] == list(
        zip(fig.data[0].y, fig.data[0].x, strict=True)
    )
    json.dumps([charts.jaccard(overlap), spec], allow_nan=False)


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
