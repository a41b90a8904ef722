"""Vega-Lite charts of the Overview, Inspector and Compare, drawn by ``ui.vega`` on the pages and by the report
(``backend.report.figures``): one chart library on every surface (docs/architecture.md, "Charts"; the other
builders: ``charts_audits``, ``charts_items``).

Why Vega-Lite: a page with a Plotly chart makes the browser import Streamlit's 4.7 MB Plotly chunk before it
can draw, and Python validates every Plotly figure, while the Vega-Lite chunk is smaller and a spec is a
plain dict (the figures: ``benchmarks/README.md``, ``benchmarks/chart_libraries.py``).

Specs are plain JSON: data text (model and configuration names) travels as data values, never as
markup, and labels Vega computes from an expression get their text through ``json.dumps``.
"""

from __future__ import annotations

import json

from backend.contracts.views import ConfusionOverlap
from backend.present import series
from backend.present.palette import ACCENT, CORRECT, INK, WRONG
from backend.present.text import number

FONT = "Source Sans Pro, Arial, sans-serif"
CONFIG = {  # the dashboard's chart look (pages.common.ui.style's, for Plotly)
    "font": FONT,
    "view": {"stroke": None},
    "axis": {"labelColor": INK, "titleColor": INK, "labelFontSize": 12, "titleFontSize": 13, "titleFontWeight": "normal",
             "gridColor": "#e8e8ec", "domainColor": "#c8c8cc", "tickColor": "#c8c8cc"},
    "legend": {"orient": "top", "direction": "horizontal", "labelFontSize": 13, "titleFontSize": 13,
               "titleFontWeight": "normal", "labelColor": INK, "titleColor": INK},
    # a title longer than the chart is cut with "…" at the chart's width, not clipped mid-letter by the frame
    "title": {"anchor": "start", "fontSize": 16, "fontWeight": "normal", "color": INK, "offset": 12,
              "limit": {"expr": "width"}},
}  # fmt: skip
# Fit the page's width; ``height`` is the plotting area's (Streamlit's default, "fit", shrinks it to make room
# for titles and legends).
SCHEMA = {
    "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
    "autosize": {"type": "fit-x", "contains": "padding"},
}
ALIGNED = {"minExtent": 56, "maxExtent": 56}  # the same y-axis width on charts drawn one above the other
# What the curve and its bars are about: accuracy with rescued/harmed items, or (the score section,
# ``pages.common.scores``) the mean score with improved/regressed items: one chart, two vocabularies.
ACCURACY_TERMS = {"title": series.CURVE_TITLE, "value": "accuracy (%)", "up": "rescued", "down": "harmed", "p": "McNemar p",
                  "net": "net (pp)", "churn": "churn (pp)"}  # fmt: skip


def _labels(values: list[str]) -> str:
    """A Vega expression naming integer tick ``datum.value`` by ``values`` (a JSON array literal: data text stays text)."""
    return f"{json.dumps(values)}[datum.value] || ''"


def _chart(title: str | dict | None, height: int, values: list[dict], **body: object) -> dict:
    """A spec in the dashboard's look at the page's width: ``height`` of plotting area, ``values`` as its data
    (text travels as data), ``body`` the marks and encodings; no title where ``title`` is None."""
    return {
        **SCHEMA,
        "config": CONFIG,
        **({} if title is None else {"title": title}),
        "height": height,
        "data": {"values": values},
        **body,
    }


def _ordered(field: str, order: list[str], title: str | None, scale: dict | None = None, **extra: object) -> dict:
    """A nominal channel that keeps ``order`` (every value shown, in that order); ``scale``: more scale
    settings (band padding), ``extra``: more channel settings (axis)."""
    return {
        "field": field,
        "type": "nominal",
        "sort": order,
        "scale": {**(scale or {}), "domain": order},
        "title": title,
        **extra,
    }


def _colours(field: str, domain: list[str], colours: list[str], **extra: object) -> dict:
    """A nominal colour channel mapping ``domain`` onto ``colours`` in turn (untitled; ``extra``: the legend)."""
    return {"field": field, "type": "nominal", "title": None, "scale": {"domain": domain, "range": colours}, **extra}


def _tip(*fields: tuple[str, ...]) -> list[dict]:
    """Tooltip rows from ``(field, title[, d3 format])``."""
    return [{"field": f[0], "title": f[1], **({"format": f[2]} if len(f) > 2 else {})} for f in fields]


def _step_band(step: tuple[str, str] | None, grid: list[str]) -> list[dict]:
    """The layer shading one step's slot (``step``: its two configurations, consecutive on ``grid``); none
    where there is no such step."""
    if (
        step is None
        or step[0] not in grid
        or grid.index(step[0]) + 1 >= len(grid)
        or grid[grid.index(step[0]) + 1] != step[1]
    ):
        return []
    k = grid.index(step[0])
    return [
        {
            "data": {"values": [{"x0": k, "x1": k + 1}]},
            "mark": {"type": "rect", "color": ACCENT, "opacity": 0.08},
            "encoding": {"x": {"field": "x0", "type": "quantitative"}, "x2": {"field": "x1"}},
        }
    ]


def _flow_labels(labelled: str | None, terms: dict) -> list[dict]:
    """Text layers over the flow bars: each step's net above its tallest up bar and its churn under its deepest
    down bar, centred on the step (``labelled``'s numbers where given: several models' labels would overlap)."""
    keep = [] if labelled is None else [{"filter": {"field": "model", "equal": labelled}}]
    return [
        {
            "transform": [
                {
                    "joinaggregate": [
                        {"op": edge, "field": "items", "as": "edge"},
                        {"op": "min", "field": "x0", "as": "left"},
                        {"op": "max", "field": "x1", "as": "right"},
                    ],
                    "groupby": ["step"],
                },
                *keep,
                {"filter": {"field": "kind", "equal": terms[kind]}},
                {"calculate": "(datum.left + datum.right) / 2", "as": "xm"},
            ],
            "mark": {"type": "text", "baseline": baseline, "dy": dy, "fontSize": 11, "color": INK},
            "encoding": {
                "x": {"field": "xm", "type": "quantitative"},
                "y": {"field": "edge", "type": "quantitative"},
                "text": {"field": field, "type": "quantitative", "format": fmt},
            },
        }
        for kind, edge, field, fmt, baseline, dy in (
            ("up", "max", "net", "+.1f", "bottom", -3),
            ("down", "min", "churn", ".1f", "top", 3),
        )
    ]


def curve_and_flows(
    overview: series.Curve,
    colours: dict[str, str],
    height: int = 620,
    terms: dict = ACCURACY_TERMS,
    labelled: str | None = None,
    step: tuple[str, str] | None = None,
) -> list[dict]:
    """The curve and its flows (the Overview's and the report's), from ``backend.present.series``' points:
    accuracy per config with its 95% band on top; rescued up / harmed down per transition below, on the same
    configuration axis (two specs, drawn in turn). Each step's bars carry its net (above) and churn (below):
    every model's with one model, ``labelled``'s with several; ``step`` (from, to), the story's step, is shaded.

    ``terms`` names the value and the two kinds of change (``ACCURACY_TERMS``); the score section passes
    the score's (``pages.common.scores.curve_input``)."""
    grid = list(overview.grid)
    models = list(overview.models)
    curve = series.curve_points(overview, colours)
    flows = [{**bar, "kind": terms["up" if bar["kind"] == "rescued" else "down"]} for bar in series.flow_bars(overview)]
    labelled = None if len(models) == 1 else labelled if labelled in models else models[0]
    band = _step_band(step, grid)
    x_scale = {"domain": [-0.5, len(grid) - 0.5], "nice": False, "zero": False}
    x_axis = {"values": list(range(len(grid))), "labelExpr": _labels(grid), "grid": False, "labelAngle": 0}
    colour = _colours("model", models, [colours[m] for m in models])
    curve_tip = _tip(
        ("model", "model"),
        ("config", "configuration"),
        ("accuracy", terms["value"], ".1f"),
        ("lo", "95% CI low (%)", ".1f"),
        ("hi", "95% CI high (%)", ".1f"),
    )
    # Two charts, one above the other (a concatenated spec cannot take the page's width); the y axes
    # take the same room, so the configuration ticks line up.
    top = _chart(
        terms["title"],
        int(height * 0.45),
        curve,
        encoding={
            "x": {
                "field": "x",
                "type": "quantitative",
                "scale": x_scale,
                "axis": {**x_axis, "labels": False, "ticks": False},
                "title": None,
            }
        },
        layer=[
            *band,
            {
                "mark": {"type": "area", "opacity": 0.15},
                "transform": [{"filter": "isValid(datum.lo)"}],
                "encoding": {
                    "y": {
                        "field": "lo",
                        "type": "quantitative",
                        "title": terms["value"],
                        "scale": {"zero": False},
                        "axis": ALIGNED,
                    },
                    "y2": {"field": "hi"},
                    "detail": {"field": "model"},
                    "fill": {"field": "colour", "type": "nominal", "scale": None},
                },
            },  # the line's colour, no legend
            {
                "mark": {"type": "line", "point": {"size": 70, "filled": True}, "strokeWidth": 2.5},
                "encoding": {"y": {"field": "accuracy", "type": "quantitative"}, "color": colour, "tooltip": curve_tip},
            },
        ],
    )
    flow_tip = _tip(
        ("model", "model"),
        ("step", "transition"),
        ("rescued", terms["up"]),
        ("harmed", terms["down"]),
        ("net", terms["net"], "+.1f"),
        ("churn", terms["churn"], ".1f"),
        ("p", terms["p"], ".3g"),
    )
    whose = "" if labelled is None else f"{labelled}: "
    bottom = _chart(
        f"{whose}items flipping (bars); {terms['net']} above, {terms['churn']} below",
        int(height * 0.27),
        flows,
        layer=[
            *band,
            {
                "mark": {"type": "rect", "strokeWidth": 2},
                "encoding": {
                    "x": {
                        "field": "x0",
                        "type": "quantitative",
                        "scale": x_scale,
                        "axis": x_axis,
                        "title": "configuration (frames, @pixels per frame, /sampling policy)",
                    },
                    "x2": {"field": "x1"},
                    "y": {
                        "field": "items",
                        "type": "quantitative",
                        "title": f"items (↑ {terms['up']}, ↓ {terms['down']})",
                        "axis": ALIGNED,
                        "scale": {"padding": 16},  # room for the labels above and below the bars
                    },
                    "y2": {"datum": 0},
                    "fill": _colours("kind", [terms["up"], terms["down"]], [CORRECT, WRONG]),
                    "stroke": {**colour, "legend": None},
                    "tooltip": flow_tip,
                },
            },
            {"mark": {"type": "rule", "color": "#888"}, "encoding": {"y": {"datum": 0}}},
            *_flow_labels(labelled, terms),
        ],
    )
    return [top, bottom]


# -- Inspector: one item ------------------------------------------------------------------------------

# A five-pointed star (Vega shapes are SVG paths in a unit square around the point): live re-runs.
STAR = "M0,-1L0.24,-0.33L0.95,-0.31L0.38,0.12L0.59,0.81L0,0.4L-0.59,0.81L-0.38,0.12L-0.95,-0.31L-0.24,-0.33Z"
LABELS_X = {"labelAngle": -30, "labelOverlap": False, "labelLimit": 160}  # every configuration named, however many
STATES = _colours("state", ["correct", "wrong"], [CORRECT, WRONG])


def answer_grid(grid: dict) -> dict:
    """Answer per model (rows) and configuration (columns): a green (correct) or red (wrong) cell showing the
    answer (MCQA) or the score (open-ended); no cell, no answer. ``grid``: ``backend.scope.inspector.answer_cells``
    (``cells``: ``model, config, state, text, value``; ``rows``; ``order``: the configurations; ``value``: the
    column the tooltip names)."""
    band = {"paddingInner": 0.06}
    return _chart(
        "Answer per model and configuration (green correct, red wrong, – no answer; open-ended: score)",
        34 * max(len(grid["rows"]), 1),
        grid["cells"],
        encoding={
            "x": _ordered("config", grid["order"], "configuration", band, axis=LABELS_X),
            "y": _ordered("model", grid["rows"], "model", band, axis={"labelLimit": 360}),
            "tooltip": _tip(
                ("model", "model"), ("config", "configuration"), ("text", "answer"), ("value", grid["value"], ".2f")
            ),
        },
        layer=[
            {"mark": {"type": "rect", "cornerRadius": 2}, "encoding": {"fill": {**STATES, "legend": None}}},
            {"mark": {"type": "text", "color": "white", "fontSize": 14}, "encoding": {"text": {"field": "text"}}},
        ],
    )


def confidence_chart(trajectory: dict, colours: dict[str, str]) -> dict:
    """Each model's confidence (or score) per configuration: lines join a budget ladder's steps only; other
    protocols are diamonds; a live re-run is a star on its model's line, joined to it by a dashed segment (an
    overlay); a marker is filled green (correct) or red (wrong), outlined in its model's colour.
    ``trajectory``: ``backend.scope.inspector.trajectory_points``; ``colours``: model -> colour."""
    points, value = trajectory["points"], trajectory["value"]
    names = trajectory["series"]
    palette = [colours[n.split(" · ")[0]] for n in names]  # "<model> · other protocols" in its model's colour
    stroke = _colours(
        "series",
        names,
        palette,
        legend={"orient": "right", "direction": "vertical", "labelLimit": 320, "symbolFillColor": "white"},
    )
    kinds = {
        "ladder": ("budget step", "circle", 110),
        "other": ("other protocol", "diamond", 130),
        "rerun": ("live re-run", STAR, 320),
    }
    present = {p["kind"] for p in points}
    kinds = {k: v for k, v in kinds.items() if k in present}  # the legend names the marks drawn
    return _chart(
        f"{value.capitalize()} per configuration (lines join budget steps only; ◆ other protocols; "
        "★ live re-run, dashed to its model's line)",
        290,  # room for the y title, "confidence (probability of the answer)"
        points,
        encoding={
            "x": _ordered("config", trajectory["order"], "configuration", axis=LABELS_X),
            "y": {
                "field": "value",
                "type": "quantitative",
                "scale": {"domain": [0, 1.05]},
                "title": trajectory["axis"],
            },
        },
        layer=[
            {
                "mark": {"type": "line", "strokeWidth": 2},
                "transform": [{"filter": "isValid(datum.line)"}],
                "encoding": {"detail": {"field": "line"}, "stroke": stroke},
            },
            {
                "mark": {"type": "line", "strokeWidth": 2, "strokeDash": [5, 4]},
                "transform": [{"filter": "isValid(datum.dash)"}],
                "encoding": {"detail": {"field": "dash"}, "stroke": {**stroke, "legend": None}},
            },
            {
                "mark": {"type": "point", "filled": True, "strokeWidth": 2, "opacity": 1},
                "transform": [{"filter": "datum.kind !== 'joint'"}],
                "encoding": {
                    "stroke": stroke,
                    "fill": STATES,
                    "shape": {
                        "field": "kind",
                        "type": "nominal",
                        "title": None,
                        "scale": {"domain": list(kinds), "range": [s for _, s, _ in kinds.values()]},
                        "legend": {"labelExpr": f"{json.dumps({k: v[0] for k, v in kinds.items()})}[datum.value]"},
                    },
                    # one kind: a constant (Vega-Lite maps a nominal size scale with one value to size 0: no markers)
                    "size": {
                        "field": "kind",
                        "type": "nominal",
                        "scale": {"domain": list(kinds), "range": [z for _, _, z in kinds.values()]},
                    }
                    if len(kinds) > 1
                    else {"value": next((z for _, _, z in kinds.values()), 110)},
                    "tooltip": _tip(
                        ("series", "model"),
                        ("config", "configuration"),
                        ("run", "run"),
                        ("answer", "answer"),
                        ("value", value, ".2f"),
                    ),
                },
            },
        ],
    )


def frame_timeline(
    marks: list[dict], rows: list[str], x_title: str, x_max: float | None, colours: dict[str, str]
) -> dict:
    """Every strip's frames on one axis (seconds, or frame index without the video): a tick per frame kept from
    the row above or added, a cross per frame dropped. ``marks``: ``row, x, frame, status``; ``colours``: status ->
    colour, in legend order."""
    colour = _colours("status", list(colours), list(colours.values()))
    tip = _tip(("row", "configuration"), ("frame", "frame #"), ("x", x_title, ".2f"), ("status", "frame"))
    return _chart(
        "Frames sampled per configuration, on one timeline",
        24 * max(len(rows), 1),
        marks,
        encoding={
            "x": {
                "field": "x",
                "type": "quantitative",
                "title": x_title,
                "scale": {"domain": [0, x_max], "nice": False} if x_max else {"zero": True},
            },
            "y": _ordered("row", rows, "configuration"),
            "color": colour,
            "tooltip": tip,
        },
        layer=[
            {"mark": {"type": "tick", "thickness": 2.5}, "transform": [{"filter": "datum.status !== 'dropped'"}]},
            {
                "mark": {"type": "point", "shape": "cross", "angle": 45, "filled": True, "size": 70},
                "transform": [{"filter": "datum.status === 'dropped'"}],
            },
        ],
    )


# -- Compare: the selected models side by side --------------------------------------------------------


def headline_bars(rows: list[dict], models: list[str], colours: dict[str, str], x_title: str) -> dict:
    """Grouped bars per metric, one per model, with their 95% intervals, each labelled with its value. ``rows``:
    ``model, metric, value, lo, hi`` in percent (``None`` where not available)."""
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    return _chart(
        "Headroom, confusion and overwrite side by side (95% CI)",
        280,
        rows,
        encoding={
            "x": _ordered("metric", metrics, x_title, {"paddingInner": 0.25}, axis={"labelAngle": 0}),
            "xOffset": _ordered("model", models, None),
            "tooltip": _tip(
                ("model", "model"),
                ("metric", "metric"),
                ("value", "share of items (%)", ".1f"),
                ("lo", "95% CI low (%)", ".1f"),
                ("hi", "95% CI high (%)", ".1f"),
            ),
        },
        layer=[
            {
                "mark": "bar",
                "transform": [{"filter": "isValid(datum.value)"}],
                "encoding": {
                    "y": {"field": "value", "type": "quantitative", "title": "share of items (%)"},
                    "color": _colours("model", models, [colours[m] for m in models]),
                },
            },
            {
                "mark": {"type": "rule", "color": INK, "strokeWidth": 1.2},
                "transform": [{"filter": "isValid(datum.lo)"}],
                "encoding": {"y": {"field": "lo", "type": "quantitative"}, "y2": {"field": "hi"}},
            },
            {  # each bar's value, above its interval (or the bar, without one)
                "mark": {"type": "text", "baseline": "bottom", "dy": -3, "fontSize": 11, "color": INK},
                "transform": [
                    {"filter": "isValid(datum.value)"},
                    {"calculate": "isValid(datum.hi) ? datum.hi : datum.value", "as": "top"},
                ],
                "encoding": {
                    "y": {"field": "top", "type": "quantitative"},
                    "text": {"field": "value", "type": "quantitative", "format": ".1f"},
                },
            },
        ],
    )


def jaccard(overlap: ConfusionOverlap) -> dict:
    """Compare's and the report's heatmap: the Jaccard index of the models' confused-item sets."""
    models = list(overlap.models)
    cells = [
        {"a": a, "b": b, "jaccard": number(v)}
        for a, row in zip(models, overlap.jaccard, strict=True)
        for b, v in zip(models, row, strict=True)
    ]
    axis = {"labelLimit": 240, "labelAngle": 0}
    return _chart(
        "Overlap of confused items (Jaccard index)",
        50 * max(len(models), 1),
        cells,
        encoding={
            "x": _ordered("b", models, "model", axis=axis),
            "y": _ordered("a", models, "model", axis=axis),
            "tooltip": _tip(("a", "model"), ("b", "vs"), ("jaccard", "Jaccard", ".2f")),
        },
        layer=[
            {
                "mark": "rect",
                "encoding": {
                    "fill": {
                        "field": "jaccard",
                        "type": "quantitative",
                        "title": "Jaccard",
                        "scale": {"domain": [0, 1], "scheme": "blues"},
                    }
                },
            },
            {
                "mark": {"type": "text", "fontSize": 13},
                "transform": [{"filter": "isValid(datum.jaccard)"}],
                "encoding": {
                    "text": {"field": "jaccard", "format": ".2f"},
                    "color": {"condition": {"test": "datum.jaccard > 0.5", "value": "white"}, "value": INK},
                },
            },
        ],
    )


def intersections(overlap: ConfusionOverlap) -> dict:
    """Compare's and the report's bars: confused items by the exact set of models confused
    (largest 15 sets)."""
    order = [" + ".join(r.models) for r in overlap.intersections[:15]]
    rows = [{"set": name, "items": r.n} for name, r in zip(order, overlap.intersections, strict=False)]
    return _chart(
        "Confused items by the exact set of models confused",
        24 * max(len(rows), 1),
        rows,
        mark={"type": "bar", "color": ACCENT},
        encoding={
            "y": _ordered("set", order, "confused by exactly these models", axis={"labelLimit": 480, "maxExtent": 500}),
            "x": {
                "field": "items",
                "type": "quantitative",
                "title": "items",
                "axis": {"tickMinStep": 1, "format": "d"},
            },
            "tooltip": _tip(("set", "confused by exactly"), ("items", "items")),
        },
    )
