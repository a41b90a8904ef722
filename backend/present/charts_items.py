"""Vega-Lite specs of the item-level charts: the Items heatmap, the Inspector's re-run panel (option
probabilities, phase timings) and "Why these items?" (pages and report alike, ``backend.report.figures``).

Like ``backend.present.charts``: plain JSON in the dashboard's look, data text as data values (never markup),
every number the report dict's own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from backend.contracts.explain import ExplainReport, ExplainTarget
from backend.present.charts import _chart, _ordered, _tip
from backend.present.palette import ACCENT, CORRECT, INK, NEUTRAL, WRONG
from backend.present.text import count

if TYPE_CHECKING:
    from backend.analysis.flows import Heatmap

CONFIG_AXIS = "configuration (frames, @pixels per frame, /sampling policy)"
HEATMAP_HEIGHT = 560  # px of the heatmap's cells: the most item rows it can show, one pixel each


def heatmap(heat: Heatmap) -> dict:
    """Correct (green) / wrong (red) per item (rows, ordered by trajectory class) and configuration; each class
    named with its item count at the right, classes split by a white line. ``heat``: ``backend.views.heatmap``.

    One data row per item with a column per configuration (``c0``, ``c1``...), folded by Vega: the payload grows
    with the items, not items x configurations, and the item id and class travel once per item."""
    rows, z, grid = heat.rows, heat.z, list(heat.grid)
    keys = [f"c{k}" for k in range(len(grid))]
    classes = rows["trajectory_class"].tolist()
    values = [
        {"i": i, "item": str(item), "class": cls, **{k: int(v) for k, v in zip(keys, cells, strict=True)}}
        for i, (item, cls, cells) in enumerate(zip(rows["item_id"].tolist(), classes, z.tolist(), strict=True))
    ]
    spans: list[dict] = []
    for i, cls in enumerate(classes):
        if spans and spans[-1]["class"] == cls:
            spans[-1]["end"] = i + 1
        else:
            spans.append({"class": cls, "start": i, "end": i + 1})
    bands = [
        {**s, "mid": (s["start"] + s["end"]) / 2, "label": f"{s['class']} ({heat.class_counts[s['class']]:,})"}
        for s in spans
    ]
    y = {"scale": {"domain": [0, max(len(values), 1)], "reverse": True, "nice": False, "zero": True}}
    sampled = "" if heat.stride == 1 else f" (every {heat.stride}th of {count(heat.n_items, 'item')})"
    names = json.dumps(dict(zip(keys, grid, strict=True)))
    return _chart(
        f"{heat.model}: correct (green) / wrong (red) per item and configuration{sampled}",
        HEATMAP_HEIGHT,
        values,
        layer=[
            {
                "transform": [
                    {"fold": keys, "as": ["key", "ok"]},
                    {"calculate": f"{names}[datum.key]", "as": "config"},
                    {"calculate": "datum.i + 1", "as": "i1"},
                    {"calculate": "datum.ok ? 'correct' : 'wrong'", "as": "state"},
                ],
                "mark": {"type": "rect"},
                "encoding": {
                    "x": _ordered("config", grid, CONFIG_AXIS, {"paddingInner": 0.02}, axis={"labelAngle": 0}),
                    "y": {"field": "i", "type": "quantitative", "title": "items, ordered by trajectory class",
                          "axis": {"labels": False, "ticks": False, "grid": False}, **y},
                    "y2": {"field": "i1"},
                    "fill": {"field": "state", "type": "nominal", "legend": None,
                             "scale": {"domain": ["correct", "wrong"], "range": [CORRECT, WRONG]}},
                    "tooltip": _tip(("item", "item"), ("class", "trajectory class"), ("config", "configuration"),
                                    ("state", "answer")),
                },
            },
            {
                "data": {"values": bands[1:]},
                "mark": {"type": "rule", "color": "white", "strokeWidth": 3},
                "encoding": {"y": {"field": "start", "type": "quantitative", **y}},
            },
            {
                "data": {"values": bands},
                "mark": {"type": "text", "align": "left", "dx": 6, "fontSize": 12, "color": INK},
                "encoding": {
                    "x": {"value": {"expr": "width"}},
                    "y": {"field": "mid", "type": "quantitative", **y},
                    "text": {"field": "label"},
                },
            },
        ],
        padding={"right": 190},  # room for the class names right of the cells
    )  # fmt: skip


def option_probs(probs: dict[str, float], answer: str | None, target: str | None) -> dict:
    """A re-run's probability per option: the answer coloured (green when it is the target, else red), the
    others grey; the target marked ✓, each bar labelled."""
    values: list[dict] = [
        {
            "option": f"{x} ✓" if x == target else x,
            "p": probs[x],
            "colour": (CORRECT if x == target else WRONG) if x == answer else NEUTRAL,
        }
        for x in sorted(probs)
    ]
    return _chart(
        "Option probabilities (the answer coloured)",
        200,
        values,
        encoding={
            "x": _ordered("option", [v["option"] for v in values], "option (✓ target)", axis={"labelAngle": 0}),
            "y": {"field": "p", "type": "quantitative", "title": "probability", "scale": {"domain": [0, 1.1]}},
            "tooltip": _tip(("option", "option"), ("p", "probability", ".3f")),
        },
        layer=[
            {"mark": "bar", "encoding": {"fill": {"field": "colour", "type": "nominal", "scale": None}}},
            {"mark": {"type": "text", "baseline": "bottom", "dy": -3, "color": INK},
             "encoding": {"text": {"field": "p", "format": ".2f"}}},
        ],
    )  # fmt: skip


def phase_timings(timings: dict[str, float], phases: tuple[str, ...]) -> dict:
    """A re-run's milliseconds per worker phase (``phases`` first, in their order, then any other), labelled."""
    order = [p for p in phases if p in timings] + sorted(set(timings) - set(phases))
    ms = [1000 * timings[p] for p in order]
    values = [{"phase": p, "ms": v} for p, v in zip(order, ms, strict=True)]
    top = max([*ms, 1.0])
    return _chart(
        f"Phase timings ({1000 * sum(timings.values()):.0f} ms in all)",
        30 * max(len(values), 1),
        values,
        encoding={
            "y": _ordered("phase", order, None),
            "x": {"field": "ms", "type": "quantitative", "title": "milliseconds", "scale": {"domain": [0, 1.25 * top]},
                  "axis": {"tickCount": 4, "labelOverlap": "greedy"}},  # half a column: few, unhidden labels
            "tooltip": _tip(("phase", "phase"), ("ms", "milliseconds", ".1f")),
        },
        layer=[
            {"mark": {"type": "bar", "color": ACCENT}},
            {"mark": {"type": "text", "align": "left", "dx": 4, "color": INK},
             "encoding": {"text": {"field": "ms", "format": ".0f"}}},
        ],
    )  # fmt: skip


def explain_colour(target: ExplainTarget) -> str:
    """The colour of an enriched slice: the selection's own (harmed / wrong red, rescued / correct green, else the
    neutral accent)."""
    state = target.args[-1] if target.kind in ("flow", "state") else None
    if state in ("harmed", "stable-wrong", "wrong"):
        return WRONG
    return CORRECT if state in ("rescued", "stable-correct", "correct") else ACCENT


def explain_lifts(report: ExplainReport, top: int = 12) -> dict:
    """The "Why these items?" chart: the top slices' lift with its 95% interval, lift 1 (the base rate) marked;
    only the slices that survive Benjamini-Hochberg (``survives``) in colour, the rest grey, small slices pale;
    the report's verdict ("No slice survives ...") under the title. Best first from the top (the report's own
    order); one and two-attribute slices together, each labelled."""
    rows = report.slices[:top] + report.pairs[: max(0, top // 3)]
    enriched = explain_colour(report.target)
    order = [r.label + (" (small)" if r.small else "") for r in rows]
    values = [
        {
            "slice": label,
            "lift": r.lift,
            "lo": r.lift_ci[0] if r.lift_ci else None,
            "hi": r.lift_ci[1] if r.lift_ci else None,
            "colour": enriched if r.survives else NEUTRAL,
            "opacity": 0.35 if r.small else 0.9,
            "selected": f"{r.n_selected:,} of {r.n_slice:,} ({100 * (r.rate or 0):.1f}%)",
            "q": r.q,
        }
        for r, label in zip(rows, order, strict=True)
    ]
    what = report.target.describe
    base = 100 * (report.base_rate or 0)
    return _chart(
        {
            "text": f"Why these items? {what}: {report.n_selected:,} of {count(report.n_scope, 'item')}, "
            "top slices by BH q",
            "subtitle": report.verdict.text,
            "subtitleColor": INK,
            "limit": {"expr": "width"},
        },
        26 * max(len(values), 1),
        values,
        encoding={
            "y": _ordered("slice", order, None, axis={"labelLimit": 360}),
            "tooltip": _tip(("slice", "slice"), ("selected", "selected"), ("lift", "lift", ".2f"), ("q", "BH q", ".3g")),
        },
        layer=[
            {"mark": "bar", "encoding": {
                "x": {"field": "lift", "type": "quantitative", "title": "lift: rate in the slice / base rate (95% interval)",
                      "scale": {"zero": True}},
                "fill": {"field": "colour", "type": "nominal", "scale": None},
                "opacity": {"field": "opacity", "type": "quantitative", "scale": None}}},
            {"mark": {"type": "rule", "color": INK}, "transform": [{"filter": "isValid(datum.lo)"}],
             "encoding": {"x": {"field": "lo", "type": "quantitative"}, "x2": {"field": "hi"}}},
            {"data": {"values": [{"x": 1, "text": f"base rate {base:.1f}% (lift 1)"}]}, "layer": [
                {"mark": {"type": "rule", "color": INK, "strokeDash": [5, 4], "opacity": 0.7},
                 "encoding": {"x": {"field": "x", "type": "quantitative"}}},
                {"mark": {"type": "text", "align": "left", "baseline": "bottom", "dx": 4, "y": -2, "color": INK},
                 "encoding": {"x": {"field": "x", "type": "quantitative"}, "text": {"field": "text"}}},
            ]},
        ],
    )  # fmt: skip
