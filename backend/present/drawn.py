"""Vega-Lite specs drawn on the server (vl-convert: Vega run in an embedded engine, offline) for a page's first screen.

Why: a new browser session that draws a chart with ``st.vega_lite_chart`` first fetches and parses Streamlit's
Vega chunk (0.8 MB) and compiles the spec; the same chart as an SVG in the page's HTML costs the browser almost
nothing (``benchmarks/README.md``, issue 33). What the embed gave a user is kept: each mark's tooltip becomes its
SVG ``<title>`` (the browser shows it on hover), and the chart saves as SVG or PNG (``png``).

The specs are ``backend.present.charts``' own, so the Overview's figure and the report's stay one chart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import vl_convert

# Marks the tooltip text given to a mark as its ARIA description (the one thing vl-convert writes per mark), so
# the hover titles are the tooltips' and not Vega-Lite's default descriptions of the axes and the other marks.
_TIP = "\u2063"  # INVISIBLE SEPARATOR: never in a Vega-Lite default description
_DESCRIBED = re.compile(r'<(path|text)\b([^>]*?\baria-label="' + _TIP + r'([^"]*)"[^>]*?)/>')
_FORMAT = re.compile(r"^[+]?[.0-9]*[a-z%]?$")  # a d3 number format as the chart builders write them


def stacked(specs: Sequence[dict], width: int) -> dict:
    """One spec of charts drawn one above the other at ``width`` pixels (``charts.curve_and_flows``' pair): a
    concatenation takes a fixed width, which a page's stretching embed could not; each chart keeps its scales and
    legends, and the tooltips become hover titles (``hover_titles``)."""
    first = specs[0]
    parts = [{k: v for k, v in hover_titles(s).items() if k not in ("$schema", "config", "autosize")} for s in specs]
    independent = dict.fromkeys(("color", "fill", "stroke"), "independent")
    return {
        "$schema": first["$schema"],
        "config": first["config"],
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
    text = vl_convert.vegalite_to_svg(spec)
    return _DESCRIBED.sub(lambda m: f"<{m[1]}{m[2].replace(_TIP, '')}><title>{m[3]}</title></{m[1]}>", text)


def png(spec: dict) -> bytes:
    """The chart as a PNG at twice its size (the save button's second format)."""
    return bytes(vl_convert.vegalite_to_png(spec, scale=2))
