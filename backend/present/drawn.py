"""Vega-Lite specs drawn on the server (vl-convert: Vega run in an embedded engine, offline) for a page's first screen.

Why: a new browser session that draws a chart with ``st.vega_lite_chart`` first fetches and parses Streamlit's
Vega chunk (0.8 MB) and compiles the spec; the same chart as an SVG in the page's HTML costs the browser almost
nothing (``benchmarks/README.md``, issue 33). What the embed gave a user is kept: each mark's tooltip becomes its
SVG ``<title>`` (the browser shows it on hover), and the chart saves as SVG or PNG (``png``).

The specs are ``backend.present.charts``' own, so the Overview's figure and the report's stay one chart.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence

import vl_convert

from backend.contracts.views import OverviewReport
from backend.present import charts
from backend.present.series import Curve

# Marks the tooltip text given to a mark as its ARIA description (the one thing vl-convert writes per mark), so
# the hover titles are the tooltips' and not Vega-Lite's default descriptions of the axes and the other marks.
_TIP = "\u2063"  # INVISIBLE SEPARATOR: never in a Vega-Lite default description
_DESCRIBED = re.compile(r'<(path|text)\b([^>]*?\baria-label="' + _TIP + r'([^"]*)"[^>]*?)/>')
_FORMAT = re.compile(r"^[+]?[.0-9]*[a-z%]?$")  # a d3 number format as the chart builders write them
# Labels and titles drawn whole. Vega measures a text to cut it at a limit (axis labels at 180 px, legend labels at
# 160 px, a title at the chart's width), and those measurements were about a quarter of vl-convert's time on the
# Overview's chart, the SVG byte-identical: nothing there needed cutting (``benchmarks/chart_svg.py`` measures it with
# the compiled templates). The first screen's labels are configurations, model names and our own titles.
WHOLE = {"axis": {"labelLimit": 0}, "legend": {"labelLimit": 0}, "title": {"limit": 0}}
_SLOT = "__trajaudit_slot"  # marks an inline dataset's place in a compiled template (``vega``): never a data field


CURVE_HEIGHT = 520  # the curve and its bars fit the first screen (1440 x 900) beside the cards
# The chart's width in pixels as drawn on the server: its column's at 1440 x 900 (the SVG scales with its column).
CURVE_WIDTH = 600


def first_screen(metrics: OverviewReport, colours: dict[str, str], focus: str) -> dict:
    """The Overview's first chart (the curve over ``focus``' flows, its story step shaded) as one spec at the
    first screen's size (``stacked``)."""
    step = metrics.story[focus]
    pair = None if step is None else (step.from_, step.to)
    curves = charts.curve_and_flows(Curve.of(metrics), colours, height=CURVE_HEIGHT, labelled=focus, step=pair)
    return stacked(curves, CURVE_WIDTH)


def stacked(specs: Sequence[dict], width: int) -> dict:
    """One spec of charts drawn one above the other at ``width`` pixels (``charts.curve_and_flows``' pair): a
    concatenation takes a fixed width, which a page's stretching embed could not; each chart keeps its scales and
    legends, and the tooltips become hover titles (``hover_titles``)."""
    first = specs[0]
    parts = [{k: v for k, v in hover_titles(s).items() if k not in ("$schema", "config", "autosize")} for s in specs]
    independent = dict.fromkeys(("color", "fill", "stroke"), "independent")
    config = {**first["config"], **{k: {**first["config"].get(k, {}), **v} for k, v in WHOLE.items()}}
    return {
        "$schema": first["$schema"],
        "config": config,
        "vconcat": [{**p, "width": width} for p in parts],
        "spacing": 8,
        "resolve": {"scale": independent, "legend": independent},
    }


def hover_titles(spec: dict) -> dict:
    """``spec`` with each tooltip (a list of ``{field, title, format}``, ``charts._tip``) also written into the mark's
    description, which vl-convert's SVG carries (``svg`` turns it into a ``<title>``), at the top level and in
    every layer."""
    out = dict(spec)
    encoding = spec.get("encoding") or {}
    tip = encoding.get("tooltip")
    if isinstance(tip, list) and tip:
        out["transform"] = [*spec.get("transform", []), {"calculate": _tip_expression(tip), "as": "__tip"}]
        out["encoding"] = {**encoding, "description": {"field": "__tip", "type": "nominal"}}
    if "layer" in spec:
        out["layer"] = [hover_titles(layer) for layer in spec["layer"]]
    return out


def _tip_expression(tip: list[dict]) -> str:
    """A Vega expression writing a tooltip's rows as text ("model: A\\nconfiguration: 8f\\n..."); field names and
    titles enter as JSON string literals, formats are checked (they are the chart builders' own)."""
    rows = []
    for row in tip:
        value = f"datum[{json.dumps(row['field'])}]"
        fmt = row.get("format")
        if fmt is not None:
            if not _FORMAT.fullmatch(fmt):
                raise ValueError(f"not a number format: {fmt!r}")
            value = f"(isValid({value}) ? format({value}, {json.dumps(fmt)}) : '–')"
        rows.append(f"{json.dumps(row['title'] + ': ')} + {value}")
    return json.dumps(_TIP) + " + " + " + '\\n' + ".join(rows)


def svg(spec: dict) -> str:
    """The chart as SVG text, with each described mark's tooltip as its ``<title>`` (escaped as Vega wrote it: data
    text stays text)."""
    return titled(vl_convert.vega_to_svg(vega(spec)))


def titled(text: str) -> str:
    """vl-convert's SVG ``text`` with each described mark's tooltip as its ``<title>``."""
    return _DESCRIBED.sub(lambda m: f"<{m[1]}{m[2].replace(_TIP, '')}><title>{m[3]}</title></{m[1]}>", text)


def vega(spec: dict) -> dict:
    """``spec`` compiled to Vega, as ``vl_convert.vegalite_to_vega`` compiles it.

    Why: the compile is a fifth of the conversion, and it depends on the spec's encodings, not on its data, while
    a filter changes the data alone. So the spec is compiled with each inline dataset replaced by a marker, once per
    such template (cached), and each spec's own values take the markers' places."""
    values: dict[str, tuple[int, list]] = {}
    template = json.dumps(_marked(spec, values))
    compiled = _compiled(template, len(values))
    if compiled is None:  # a marker did not come through once each: compile the spec itself
        return vl_convert.vegalite_to_vega(spec)
    rows = [dataset for _, dataset in values.values()]
    filled = [{**d, "values": rows[k]} if (k := _slot(d)) is not None else d for d in compiled["data"]]
    return {**compiled, "data": filled}


def _marked(spec: object, values: dict[str, tuple[int, list]]) -> object:
    """``spec`` with each ``data: {values: [...]}`` replaced by a marker (``[{_SLOT: k}]``); ``values`` maps each
    dataset's JSON text to its marker ``k`` and its rows (equal datasets share a marker, as Vega-Lite merges datasets
    whose JSON is equal into one)."""
    if isinstance(spec, list):
        return [_marked(v, values) for v in spec]
    if not isinstance(spec, dict):
        return spec
    out: dict[str, object] = {}
    for key, value in spec.items():
        if key == "data" and isinstance(value, dict) and isinstance(value.get("values"), list):
            k, _ = values.setdefault(json.dumps(value["values"]), (len(values), value["values"]))
            out[key] = {**value, "values": [{_SLOT: k}]}
        else:
            out[key] = _marked(value, values)
    return out


@functools.lru_cache(maxsize=32)
def _compiled(template: str, n: int) -> dict | None:
    """A marked spec (``n`` datasets) compiled, or None where its markers are not each a Vega dataset of its own (then ``vega``
    compiles the whole spec). Read-only: ``vega`` copies what it changes."""
    compiled = vl_convert.vegalite_to_vega(json.loads(template))
    slots = sorted(k for d in compiled.get("data", []) if (k := _slot(d)) is not None)
    return compiled if slots == list(range(n)) else None


def _slot(dataset: dict) -> int | None:
    """The marker a compiled dataset holds in place of its values, if any."""
    rows = dataset.get("values")
    if isinstance(rows, list) and len(rows) == 1 and isinstance(rows[0], dict) and set(rows[0]) == {_SLOT}:
        return int(rows[0][_SLOT])
    return None


def png(spec: dict) -> bytes:
    """The chart as a PNG at twice its size (the save button's second format)."""
    return bytes(vl_convert.vegalite_to_png(spec, scale=2))
