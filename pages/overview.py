"""Overview: the scaling curve with its bootstrap band over the flows it hides, headline numbers, task types."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from backend.compare import headline_table
from backend.metrics import WILSON_COLUMNS
from backend.palette import CORRECT, WRONG, model_colours, rgba
from pages.common import data, sidebar, state, ui
from pages.common.boot import ensure_entrypoint

HEADLINES = (
    ("best_fixed", "Best fixed"),
    ("oracle_accuracy", "Oracle"),
    ("oracle_headroom", "Oracle headroom"),
    ("visual_confusion_rate", "Visual confusion"),
    ("text_overwrite_rate", "Text overwrite"),
    ("mean_churn", "Mean churn / step"),
)
HELP = {
    "best_fixed": "Highest accuracy of one configuration for every item (ties: the cheapest).",
    "oracle_accuracy": "Share of items correct at some configuration (per-item best budget).",
    "oracle_headroom": "Oracle minus best fixed: what per-item budget choice could gain.",
    "visual_confusion_rate": "Share of items correct at a cheaper configuration and wrong at a costlier one.",
    "text_overwrite_rate": "Share of items correct text-only and wrong with some video input (needs `text` in the grid).",
    "mean_churn": "Mean over consecutive steps of (rescued + harmed) / items.",
}
MIN_GROUP = 30  # task types with fewer items are marked small
SORTS = {
    "visual_confusion_rate": "visual confusion",
    "text_overwrite_rate": "text overwrite",
    "oracle_headroom": "oracle headroom",
    "n": "items",
}


def headlines(metrics: dict, colours: dict[str, str], focus: str) -> None:
    """The focus model's numbers as cards; every selected model's in a compact table below."""
    table = headline_table(metrics)
    row = table.set_index("model").loc[focus]
    with st.container(border=True):
        st.html(f"<b>{ui.swatch(colours[focus], focus)}</b>")
        widths = [1.6] + [1] * (len(HEADLINES) - 1)  # room for the best config's label
        for col, (name, label) in zip(st.columns(widths), HEADLINES, strict=True):
            ci = None if np.isnan(row[f"{name}_lo"]) else [row[f"{name}_lo"], row[f"{name}_hi"]]
            if name == "best_fixed":
                label = f"{label} ({row['best_fixed_config']})"
            col.metric(label, ui.pct(row[name]), delta=ui.ci_text(ci), delta_color="off", delta_arrow="off", help=HELP[name])
    if len(table) > 1:
        # One column per model (rows: metrics), so the widest table fits the page instead of hiding its right columns.
        st.dataframe(ui.headline_text(table).astype(str).T.rename_axis("95% CI"), column_config={"_index": st.column_config.TextColumn(pinned=True)})
    ui.downloads(table, "headlines")


def curve_and_flows(metrics: dict, colours: dict[str, str]) -> go.Figure:
    """Accuracy per config (95% band) on top; rescued up / harmed down per transition below, same x."""
    grid = metrics["grid"]
    x = np.arange(len(grid))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.05)
    models = list(metrics["models"])
    width = 0.8 / max(len(models), 1) * 0.9
    for k, (model, rec) in enumerate(metrics["models"].items()):
        colour = colours[model]
        acc = np.array([rec["accuracy"][c] for c in grid]) * 100
        ci = [rec["ci"].get(f"accuracy[{c}]") for c in grid]
        if all(ci):
            lo, hi = (np.array([v[j] for v in ci]) * 100 for j in (0, 1))
            fig.add_trace(
                go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([hi, lo[::-1]]), fill="toself", mode="lines",
                           fillcolor=rgba(colour, 0.15), line={"width": 0}, hoverinfo="skip", showlegend=False,
                           legendgroup=model),
                row=1, col=1,
            )
        fig.add_trace(
            go.Scatter(
                x=x, y=acc, mode="lines+markers", name=model, legendgroup=model,
                line={"color": colour, "width": 2.5}, marker={"size": 8},
                customdata=np.array([[c, *(v or [np.nan, np.nan])] for c, v in zip(grid, ci, strict=True)], dtype=object),
                hovertemplate=f"<b>{model}</b><br>%{{customdata[0]}}: %{{y:.1f}}%  (95% CI %{{customdata[1]:.1%}}–%{{customdata[2]:.1%}})<extra></extra>",
            ),
            row=1, col=1,
        )  # fmt: skip
    for k, (model, rec) in enumerate(metrics["models"].items()):
        colour = colours[model]
        trans = rec["transitions"]
        tx = np.arange(len(trans)) + 0.5 + (k - (len(models) - 1) / 2) * width
        custom = [[t["from"], t["to"], t["rescued"], t["harmed"], 100 * t["net"], 100 * t["churn"], t["mcnemar_p"]] for t in trans]
        hover = (
            f"<b>{model}</b> %{{customdata[0]}} → %{{customdata[1]}}<br>rescued %{{customdata[2]}} · harmed %{{customdata[3]}}"
            "<br>net %{customdata[4]:+.1f} pp · churn %{customdata[5]:.1f} pp<br>McNemar p = %{customdata[6]:.3g}<extra></extra>"
        )
        for sign, kind, fill in ((1, "rescued", CORRECT), (-1, "harmed", WRONG)):
            fig.add_trace(
                go.Bar(
                    x=tx, y=[sign * t[kind] for t in trans], width=width, name=f"{kind}", legendgroup=kind,
                    showlegend=k == 0, marker={"color": fill, "line": {"color": colour, "width": 2}},
                    customdata=custom, hovertemplate=hover,
                ),
                row=2, col=1,
            )  # fmt: skip
    fig.update_layout(barmode="overlay", hovermode="closest")
    fig.update_xaxes(tickvals=x, ticktext=grid, range=[-0.5, len(grid) - 0.5], row=2, col=1,
                     title_text="configuration (frames, @pixels per frame, /sampling policy)")  # fmt: skip
    fig.update_xaxes(tickvals=x, ticktext=grid, showticklabels=False, row=1, col=1)
    fig.update_yaxes(title_text="accuracy (%)", row=1, col=1)
    fig.update_yaxes(title_text="items (↑ rescued, ↓ harmed)", zeroline=True, zerolinecolor="#888", row=2, col=1)
    return ui.style(fig, "Stable curve, unstable items: accuracy (95% CI) and the flows between budgets", height=620)


def transitions_table(metrics: dict) -> pd.DataFrame:
    rows = [dict(model=m, **t) for m, rec in metrics["models"].items() for t in rec["transitions"]]
    hidden = ["hidden_rescued", "hidden_harmed"] if rows and "hidden_rescued" in rows[0] else []  # noise toggle on
    return pd.DataFrame(rows, columns=["model", "from", "to", "rescued", "harmed", "net", "churn", "mcnemar_p", *hidden])


def ci_column(lo: pd.Series, hi: pd.Series) -> pd.Series:
    """Intervals as text, "[20, 57]" in percent; empty where there is none."""
    text = "[" + (100 * lo).round().astype("Int64").astype(str) + ", " + (100 * hi).round().astype("Int64").astype(str) + "]"
    return text.where(lo.notna(), "")


def task_table(scope: data.Scope, report: dict) -> None:
    """Per task type, with Wilson 95% intervals; groups under the minimum size are marked and sorted last."""
    st.subheader(f"By task type · {ui.escape_md(scope.focus)}")
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    with left:
        sort = state.bind(st.segmented_control, "tsort", "Sort by", options=list(SORTS), default="visual_confusion_rate",
                          format_func=SORTS.get)  # fmt: skip
    min_n = state.bind(right.number_input, "minn", "Minimum group size", default=MIN_GROUP, min_value=1, max_value=100_000, step=5,
                       help="Task types with fewer items are marked small and sorted after the others: their rates swing widely.")  # fmt: skip
    table = pd.DataFrame(report["task_types"][scope.focus])
    table.insert(2, "size", np.where(table["n"] < min_n, f"small (< {min_n})", ""))
    if sort:
        table = table.sort_values(sort, ascending=False, kind="stable", na_position="last")
        table = table.sort_values("n", key=lambda n: n < min_n, kind="stable")  # small groups last, order kept
    acc = [c for c in table.columns if c.startswith("accuracy[")]
    shown = table[["task_type", "n", "size"]].copy()
    for col in ("best_fixed", "oracle_accuracy", "oracle_headroom", "visual_confusion_rate", "text_overwrite_rate"):
        interval = ci_column(table[f"{col}_lo"], table[f"{col}_hi"]) if col in WILSON_COLUMNS else ""
        shown[col.replace("_", " ")] = (100 * table[col]).round().astype("Int64").astype(str).str.replace("<NA>", "n/a") + "% " + interval
    st.caption(f"{(table['n'] < min_n).sum()} of {len(table)} task types have fewer than {min_n} items (marked small, listed last). "
               "Brackets: Wilson 95% intervals, valid for small groups.")  # fmt: skip
    st.dataframe(shown, hide_index=True,
                 column_config={"task_type": st.column_config.TextColumn("task type", pinned=True), "n": "items", "size": "group"})  # fmt: skip
    with st.expander("Accuracy per configuration, by task type"):
        st.dataframe(table[["task_type", "n", *acc]], hide_index=True,
                     column_config={"task_type": st.column_config.TextColumn("task type", pinned=True), "n": "items"}
                     | {c: st.column_config.NumberColumn(c[len("accuracy["):-1], format="percent") for c in acc})  # fmt: skip
    ui.downloads(table, f"task-types-{scope.focus}")


def tag_notice(scope: data.Scope, metrics: dict) -> None:
    """Under a trajectory-tag filter every number is conditioned on the tag (confused items: 100% confusion)."""
    if scope.tag:
        st.warning(f"Conditioned on the trajectory tag **{ui.escape_md(scope.tag)}** of {ui.escape_md(scope.focus)}: every "
                   f"number below is over its {metrics['n_items']:,} items only, so rates the tag defines (e.g. visual "
                   "confusion for `confused`) are 100% by construction. Clear the tag for the benchmark's numbers.",
                   icon=":material/filter_alt:")  # fmt: skip


ensure_entrypoint()
scope = st.session_state["scope"]
st.title("Overview")
with ui.guard():
    scope = scope.with_noise(sidebar.noise_toggle())  # the bars and the table count only flips beyond noise
    ui.need_items(scope)
    ui.scope_caption(scope)
    info = data.store_info(scope.root, scope.version)
    colours = model_colours(info["models"])
    metrics = data.overview(scope)
    tag_notice(scope, metrics)
    headlines(metrics, colours, scope.focus)
    if "text" not in scope.grid:
        st.caption("Text overwrite is n/a: add `text` to the grid to measure it.")
    if scope.beyond_noise:
        st.caption("Within-noise flips hidden: the bars count only flips of items that do not flip under repeats "
                   "at either budget (the table lists how many were hidden); the curve counts every item.")  # fmt: skip
    ui.chart(curve_and_flows(metrics, colours), "scaling-curve-and-flows")
    with st.expander("Transitions (rescued, harmed, net, churn, McNemar p)"):
        trans = transitions_table(metrics)
        st.dataframe(
            trans, hide_index=True,
            column_config={"net": st.column_config.NumberColumn(format="percent"),
                           "churn": st.column_config.NumberColumn(format="percent"),
                           "mcnemar_p": st.column_config.NumberColumn("McNemar p", format="%.3g")},
        )  # fmt: skip
        ui.downloads(trans, "transitions")
    task_table(scope, metrics)
    # The shareable report: built on click by the CLI's own function (same bytes as `trajaudit report` for this scope and seed).
    from backend.report import build as build_report
    from store.store import Store

    st.download_button(
        "Download report", icon=":material/download:", on_click="ignore", mime="text/html", file_name="trajaudit-report.html",
        data=lambda: build_report(Store(scope.root), scope.resolved, "html", seed=0, bootstrap=data.BOOTSTRAP,
                                  video_root=sidebar.video_root(scope)),
        help="One self-contained HTML file of this view (charts draw offline, tables, a gallery of 24 items); "
             "the same file as `trajaudit report` with this view's flags and `--seed 0`.",
    )  # fmt: skip
    ui.twin(scope, ["metrics"])
