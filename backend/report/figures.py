"""The report's Plotly figures: pure functions of ``backend.report.data``'s dict, in the dashboard's colours and labels.

They draw what the Overview (curve and flows), Flows (Sankey), Compare (confused-item overlap) and
Policies (frontier) pages draw, from the same report dicts. Plotly renders its text as a small
HTML dialect (``<b>``, ``<br>``, links), so every string that comes from data (model, config and
task names) goes through ``html.escape`` first: Plotly shows the entities as the literal
characters and never parses a tag out of a model name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape as html_escape
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from backend.contracts.base import unset
from backend.contracts.report import ReportData
from backend.contracts.views import ConfusionOverlap, McqaMetrics, Sankey
from backend.present import series
from backend.present.text import count
from backend.report.palette import ACCENT, CORRECT, INK, NEUTRAL, SANKEY_COLOURS, SEQUENTIAL, WRONG, rgba

# System fonts only: the file opens offline, and nothing is fetched to draw text.
FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
FONT = {"family": FONT_FAMILY, "size": 12, "color": INK}


def escape(text: str) -> str:
    """Data text for Plotly: ``<``, ``>`` and ``&`` as entities, which Plotly shows as the characters (it decodes
    no ``&quot;``; quotes are harmless where no tag can open)."""
    return html_escape(str(text), quote=False)


def style(fig: go.Figure, title: str, height: int | None, font: dict = FONT, title_size: int = 15) -> go.Figure:
    """One chart look for the report and the dashboard (title top left, white template, legend on top); the
    dashboard passes its own font (``pages.common.ui.style``)."""
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "y": 0.99, "yanchor": "top", "font": {"size": title_size}},
        font=font,
        template="plotly_white",
        margin={"l": 60, "r": 30, "t": 90, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0},
        **({"height": height} if height else {}),
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def curve_and_flows(overview: McqaMetrics, colours: dict[str, str]) -> go.Figure:
    """Accuracy per config with its 95% band on top; rescued up / harmed down per transition below, same x
    (``backend.present.series``' points, which the Overview's Vega-Lite twin draws)."""
    grid = overview.grid
    x = np.arange(len(grid))
    ticks = [escape(c) for c in grid]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.05)
    curve = series.Curve.of(overview)
    points, bars = series.curve_points(curve, colours), series.flow_bars(curve)
    width = series.bar_width(len(overview.models))
    for k, model in enumerate(overview.models):
        name, colour = escape(model), colours[model]
        own = [p for p in points if p["model"] == model]
        if all(p["lo"] is not None for p in own):
            lo, hi = (np.array([p[end] for p in own]) for end in ("lo", "hi"))
            fig.add_trace(
                go.Scatter(
                    x=np.concatenate([x, x[::-1]]),
                    y=np.concatenate([hi, lo[::-1]]),
                    fill="toself",
                    mode="lines",
                    fillcolor=rgba(colour, 0.15),
                    line={"width": 0},
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=name,
                ),
                row=1,
                col=1,
            )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[p["accuracy"] for p in own],
                mode="lines+markers",
                name=name,
                legendgroup=name,
                line={"color": colour, "width": 2.5},
                marker={"size": 8},
                customdata=[[escape(p["config"]), p["lo"], p["hi"]] for p in own],
                hovertemplate=f"<b>{name}</b><br>%{{customdata[0]}}: %{{y:.1f}}%  (95% CI %{{customdata[1]:.1f}}–%{{customdata[2]:.1f}})<extra></extra>",
            ),
            row=1,
            col=1,
        )
        hover = (
            f"<b>{name}</b> %{{customdata[0]}} → %{{customdata[1]}}<br>rescued %{{customdata[2]}} · harmed %{{customdata[3]}}"
            "<br>net %{customdata[4]:+.1f} pp · churn %{customdata[5]:.1f} pp<br>McNemar p = %{customdata[6]:.3g}<extra></extra>"
        )
        for kind, fill in (("rescued", CORRECT), ("harmed", WRONG)):
            own_bars = [b for b in bars if b["model"] == model and b["kind"] == kind]
            fig.add_trace(
                go.Bar(
                    x=[(b["x0"] + b["x1"]) / 2 for b in own_bars],
                    y=[b["items"] for b in own_bars],
                    width=width,
                    name=kind,
                    legendgroup=kind,
                    showlegend=k == 0,
                    marker={"color": fill, "line": {"color": colour, "width": 2}},
                    customdata=[
                        [escape(b["from"]), escape(b["to"]), b["rescued"], b["harmed"], b["net"], b["churn"], b["p"]]
                        for b in own_bars
                    ],
                    hovertemplate=hover,
                ),
                row=2,
                col=1,
            )
    fig.update_layout(barmode="overlay", hovermode="closest")
    fig.update_xaxes(
        tickvals=x,
        ticktext=ticks,
        range=[-0.5, len(grid) - 0.5],
        row=2,
        col=1,
        title_text="configuration (frames, @pixels per frame, /sampling policy)",
    )
    fig.update_xaxes(tickvals=x, ticktext=ticks, showticklabels=False, row=1, col=1)
    fig.update_yaxes(title_text="accuracy (%)", row=1, col=1)
    fig.update_yaxes(title_text="items (↑ rescued, ↓ harmed)", zeroline=True, zerolinecolor="#888", row=2, col=1)
    return style(fig, series.CURVE_TITLE, height=560)


def sankey(flows: Sankey) -> go.Figure:
    """Correct / wrong state nodes per config, non-empty links coloured by kind (``backend.present.series``' trace,
    which the Flows page's component draws); the configurations head the columns."""
    n_cfg = len(flows.configs)
    fig = go.Figure(data=[series.sankey_trace(flows, SANKEY_COLOURS, text=escape)])
    for k, config in enumerate(flows.configs):  # long labels ("16f@151k ✓ 343") would collide between columns
        fig.add_annotation(
            x=series.column_x(k, n_cfg),
            y=1.0,
            xref="paper",
            yref="paper",
            yanchor="bottom",
            xanchor="left" if k == 0 else "right" if k == n_cfg - 1 else "center",
            showarrow=False,
            text=f"<b>{escape(config)}</b>",
        )
    return style(fig, series.sankey_title(flows, escape), height=440)


def jaccard(overlap: ConfusionOverlap) -> go.Figure:
    """Jaccard index of the models' confused-item sets (the Compare page's heatmap)."""
    models = [escape(m) for m in overlap.models]
    z = np.array([[np.nan if v is None else v for v in row] for row in overlap.jaccard], dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=models,
            y=models,
            zmin=0,
            zmax=1,
            colorscale=SEQUENTIAL,
            texttemplate="%{z:.2f}",
            colorbar={"title": {"text": "Jaccard"}},
            hovertemplate="%{y} vs %{x}: Jaccard %{z:.2f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", title_text="model")
    fig.update_xaxes(title_text="model")
    return style(fig, "Overlap of confused items (Jaccard index)", height=160 + 50 * len(models))


def intersections(overlap: ConfusionOverlap) -> go.Figure:
    """Confused items by the exact set of models confused (largest 15 sets)."""
    rows = overlap.intersections[:15]
    labels = [escape(" + ".join(r.models)) for r in rows]
    fig = go.Figure(
        go.Bar(
            x=[r.n for r in rows],
            y=labels,
            orientation="h",
            marker_color=ACCENT,
            hovertemplate="confused by exactly %{y}: %{x} items<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", title_text="confused by exactly these models")
    fig.update_xaxes(title_text="items")
    return style(fig, "Confused items by the exact set of models confused", height=150 + 26 * max(len(rows), 1))


def frontier(refs: Sequence[Mapping[str, Any]], sweep: Mapping[str, Any] | None, colour: str, model: str) -> go.Figure:
    """Accuracy (%) vs mean frames per item: fixed budgets, the oracle, the cascade frontier and its matching point
    (no cascade when ``sweep`` is None). The Policies page adds its chosen point and the predictor to it."""
    fig = go.Figure()
    fixed = [r for r in refs if r["policy"] == "fixed"]
    fig.add_trace(
        go.Scatter(
            x=[r["mean_frames"] for r in fixed],
            y=[100 * r["accuracy"] for r in fixed],
            mode="markers+text",
            name="fixed budgets",
            text=[escape(r["label"]) for r in fixed],
            textposition="bottom right",
            marker={"color": NEUTRAL, "size": 11, "line": {"color": INK, "width": 1}},
            hovertemplate="fixed %{text}: %{y:.1f}% at %{x:.0f} frames<extra></extra>",
        )
    )
    oracle = next(r for r in refs if r["policy"] == "oracle")
    fig.add_trace(
        go.Scatter(
            x=[oracle["mean_frames"]],
            y=[100 * oracle["accuracy"]],
            mode="markers",
            name="oracle (cheapest correct)",
            marker={"color": CORRECT, "size": 16, "symbol": "star", "line": {"color": INK, "width": 1}},
            hovertemplate="oracle: %{y:.1f}% at %{x:.1f} frames per item<extra></extra>",
        )
    )
    match = None if sweep is None else sweep["matching"]
    if sweep is not None:
        front = pd.DataFrame(sweep["frontier"]).sort_values(["mean_frames_shared", "threshold"])
        fig.add_trace(
            go.Scatter(
                x=front["mean_frames_shared"],
                y=100 * front["accuracy"],
                mode="lines+markers",
                name="cascade (frames shared)",
                line={"color": colour, "width": 2.5},
                marker={"size": 5},
                customdata=front[["threshold", "cost_vs_top_shared"]],
                hovertemplate="cascade t=%{customdata[0]:.3f}: %{y:.1f}% at %{x:.1f} frames (%{customdata[1]:.0%} of top)<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=front["mean_frames_unshared"],
                y=100 * front["accuracy"],
                mode="lines",
                name="cascade (no sharing)",
                line={"color": colour, "width": 1.5, "dash": "dot"},
                visible="legendonly",
                customdata=front[["threshold"]],
                hovertemplate="cascade t=%{customdata[0]:.3f}, no sharing: %{y:.1f}% at %{x:.1f} frames<extra></extra>",
            )
        )
    if match is not None and sweep is not None:
        ci = match.get("accuracy_ci") or [match["accuracy"]] * 2
        fig.add_trace(
            go.Scatter(
                x=[match["mean_frames_shared"]],
                y=[100 * match["accuracy"]],
                mode="markers",
                name=f"matches {escape(sweep['ladder'][-1])}",
                marker={"color": colour, "size": 15, "symbol": "diamond", "line": {"color": INK, "width": 1.5}},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [100 * (ci[1] - match["accuracy"])],
                    "arrayminus": [100 * (match["accuracy"] - ci[0])],
                    "color": INK,
                    "thickness": 1.5,
                },
                hovertemplate=f"t={match['threshold']:g}: %{{y:.1f}}% (95% CI {100 * ci[0]:.1f}–{100 * ci[1]:.1f}) at %{{x:.1f}} frames<extra></extra>",
            )
        )
        fig.add_annotation(
            x=match["mean_frames_shared"],
            y=100 * match["accuracy"],
            ax=90,
            ay=-95,
            showarrow=True,
            arrowcolor=INK,
            text=f"t={match['threshold']:.3g}: saves {100 * match['saving']:.0f}% of frames",
            bgcolor="rgba(255,255,255,0.85)",
            bordercolor=INK,
            borderpad=3,
        )
    fig.update_xaxes(
        title_text="mean frames per item (frames shared across budgets)", range=[0, fixed[-1]["mean_frames"] * 1.08]
    )
    fig.update_yaxes(title_text="accuracy (%)")
    return style(fig, f"{escape(model)}: accuracy vs frame cost of adaptive budgets", height=480)


def figures(data: ReportData) -> dict[str, go.Figure]:
    """Every figure of the report, by the id of the ``<div>`` it is drawn into (sections without data have none)."""
    colours = data.colours
    out = {"fig-curve": curve_and_flows(data.overview, colours)}
    if data.flows is not None:
        out["fig-sankey"] = sankey(data.flows)
    if data.overlap is not None:
        out |= {"fig-jaccard": jaccard(data.overlap), "fig-intersections": intersections(data.overlap)}
    policy = data.policy
    if policy.available and isinstance(policy.model, str):
        refs, sweep = unset(policy.reference) or [], unset(policy.sweep)
        out["fig-frontier"] = frontier(refs, sweep, colours[policy.model], policy.model)
    if data.explain is not None:
        out["fig-explain"] = explain_lifts(data.explain)
    return out


def explain_colour(target: Mapping[str, Any]) -> str:
    """The colour of an enriched slice: the selection's own (harmed / wrong red, rescued / correct green, else the
    neutral accent); depleted slices are grey."""
    state = target["args"][-1] if target["kind"] in ("flow", "state") else None
    if state in ("harmed", "stable-wrong", "wrong"):
        return WRONG
    return CORRECT if state in ("rescued", "stable-correct", "correct") else ACCENT


def explain_lifts(report: Mapping[str, Any], top: int = 12) -> go.Figure:
    """The "Why these items?" chart: the top slices' lift with its 95% interval, lift 1 (the base rate) marked;
    only the slices that survive Benjamini-Hochberg (``survives``) in colour, the rest grey, small slices pale; the
    report's verdict ("No slice survives ...") under the title.

    Best first from the top (the report's own order); one and two-attribute slices together, each labelled."""
    rows = (report["slices"][:top] + report["pairs"][: max(0, top // 3)])[::-1]
    labels = [escape(r["label"]) + (" (small)" if r["small"] else "") for r in rows]
    lift = [r["lift"] for r in rows]
    lo = [(r["lift"] - r["lift_ci"][0]) if r["lift_ci"] else 0 for r in rows]
    hi = [(r["lift_ci"][1] - r["lift"]) if r["lift_ci"] else 0 for r in rows]
    enriched = explain_colour(report["target"])
    colours = [rgba(enriched if r["survives"] else NEUTRAL, 0.35 if r["small"] else 0.9) for r in rows]
    custom = [[r["n_selected"], r["n_slice"], 100 * (r["rate"] or 0), r["q"]] for r in rows]
    fig = go.Figure(
        go.Bar(
            x=lift,
            y=labels,
            orientation="h",
            marker_color=colours,
            customdata=custom,
            error_x={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "color": INK, "thickness": 1},
            hovertemplate="%{y}<br>%{customdata[0]} of %{customdata[1]} selected (%{customdata[2]:.1f}%)<br>"
            "lift %{x:.2f}, BH q %{customdata[3]:.3g}<extra></extra>",
        )
    )
    base = 100 * (report["base_rate"] or 0)
    fig.add_vline(x=1, line={"color": NEUTRAL, "dash": "dash"})
    fig.add_annotation(
        x=1,
        y=1,
        xref="x",
        yref="paper",
        yanchor="bottom",
        xanchor="left",
        showarrow=False,
        text=f"base rate {base:.1f}% (lift 1)",
        font={"color": INK},
    )
    fig.update_xaxes(title="lift: rate in the slice / base rate (95% interval)", rangemode="tozero")
    fig.update_yaxes(title=None)
    what = escape(report["target"]["describe"])
    title = (
        f"Why these items? {what}: {report['n_selected']:,} of {count(report['n_scope'], 'item')}, top slices by BH q"
    )
    fig = style(fig, title, 140 + 26 * len(rows))
    fig.update_layout(title_subtitle_text=escape(report["verdict"]["text"]))  # a subtitle: a "<br>" line is clipped
    return fig
