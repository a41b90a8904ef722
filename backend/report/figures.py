"""The report's figures: the pages' own Vega-Lite specs (``backend.present.charts*``) from ``backend.report.data``'s
``ReportData``, and the Flows Sankey as the figure dict the pages' Sankey script draws (``backend.present.series``).

One chart library on both surfaces (docs/architecture.md, "Charts"): the report differs only in its look
(system fonts, the file opens offline) and in drawing each spec at its container's width. Specs carry data
text as data values, never as markup; the Sankey script sets text as text.
"""

from __future__ import annotations

from backend.contracts.base import unset
from backend.contracts.report import ReportData
from backend.present import charts, charts_audits, charts_items, series
from backend.present.palette import INK, SANKEY_COLOURS

# System fonts only: the file opens offline, and nothing is fetched to draw text.
FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
FONT = {"family": FONT_FAMILY, "size": 12, "color": INK}


def _report_look(spec: dict) -> dict:
    """A page's spec as the report draws it: its container's width (the page's column), system fonts."""
    return {**spec, "width": "container", "config": {**spec["config"], "font": FONT_FAMILY}}


def figures(data: ReportData) -> dict[str, dict]:
    """Every figure of the report, by the id of the ``<div>`` it is drawn into (sections without data have none):
    Vega-Lite specs, and ``fig-sankey``'s figure dict for the Sankey script."""
    colours = data.colours
    curve, flows = charts.curve_and_flows(series.Curve.of(data.overview), colours, height=560)
    out = {"fig-curve": curve, "fig-flows": flows}
    if data.overlap is not None:
        out |= {"fig-jaccard": charts.jaccard(data.overlap), "fig-intersections": charts.intersections(data.overlap)}
    policy = data.policy
    sweep = unset(policy.sweep)
    if policy.available and isinstance(policy.model, str) and sweep is not None:
        out["fig-frontier"] = charts_audits.frontier(
            unset(policy.reference) or [], sweep, None, None, colours[policy.model], policy.model, sweep.denominator
        )
    if data.explain is not None:
        out["fig-explain"] = charts_items.explain_lifts(data.explain)
    out = {name: _report_look(spec) for name, spec in out.items()}
    if data.flows is not None:
        out["fig-sankey"] = series.sankey_figure(data.flows, SANKEY_COLOURS, FONT)
    return out
