"""Flows: a Sankey of correct/wrong states across the grid (or between two configs); a flow opens its items."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from backend.flows import flow_table
from backend.metrics import FLOW_KINDS
from backend.palette import FLOW_COLOURS, STATE_COLOURS
from pages.common import data, sidebar, state, ui
from pages.common.boot import ensure_entrypoint

PAGE_SIZE = 50
VIEWS = {"grid": "Across the grid", "pair": "Between two configs"}
KIND_TEXT = {"rescued": "rescued (wrong → correct)", "harmed": "harmed (correct → wrong)",
             "stable-correct": "stayed correct", "stable-wrong": "stayed wrong"}  # fmt: skip


def sankey_figure(view: dict) -> go.Figure:
    """The Sankey: state nodes per config, non-empty aggregated links coloured by kind."""
    nodes = view["nodes"]
    n_cfg = len(view["configs"])
    xs = [0.001 + 0.998 * (n["id"] // 2) / max(n_cfg - 1, 1) for n in nodes]
    share_correct = {n["config"]: n["share"] for n in nodes if n["state"] == "correct"}
    ys = [
        0.02 + 0.45 * share_correct[n["config"]] if n["state"] == "correct" else 0.98 - 0.45 * (1 - share_correct[n["config"]])
        for n in nodes
    ]
    links = [link for link in view["links"] if link["count"] > 0]
    custom = [[lk["from"], lk["to"], KIND_TEXT[lk["kind"]], 100 * lk["share"], lk["rescued"], lk["harmed"], lk["mcnemar_p"]] for lk in links]
    fig = go.Figure(
        go.Sankey(
            arrangement="fixed",
            valueformat="d",
            node={
                "label": [f"{n['config']} {'✓' if n['state'] == 'correct' else '✗'} {n['count']}" for n in nodes],
                "color": [STATE_COLOURS[n["state"]] for n in nodes],
                "x": xs, "y": ys, "pad": 18, "thickness": 18, "line": {"width": 0},
                "customdata": [[n["config"], n["state"], 100 * n["share"]] for n in nodes],
                "hovertemplate": "%{customdata[0]}: %{value} items %{customdata[1]} (%{customdata[2]:.1f}%)<extra></extra>",
            },
            link={
                "source": [lk["source"] for lk in links],
                "target": [lk["target"] for lk in links],
                "value": [lk["count"] for lk in links],
                "color": [FLOW_COLOURS[lk["kind"]] for lk in links],
                "customdata": custom,
                "hovertemplate": (
                    "%{customdata[0]} → %{customdata[1]}: <b>%{customdata[2]}</b><br>%{value} items (%{customdata[3]:.1f}%)"
                    "<br>pair: rescued %{customdata[4]} vs harmed %{customdata[5]}, McNemar p = %{customdata[6]:.3g}<extra></extra>"
                ),
            },
        )
    )
    title = f"{view['model']}: correct (✓) and wrong (✗) items per configuration, {view['n_items']:,} items"
    return ui.style(fig, title, height=460 if n_cfg <= 2 else 520)


def _pick_row(table: pd.DataFrame) -> None:
    rows = st.session_state["flowlist"].selection.rows
    if rows:
        row = table.iloc[rows[0]]
        for key in ("from", "to", "kind"):
            state.put(key, row[key])


def _open_item(items: pd.DataFrame, key: str) -> None:
    rows = st.session_state[key].selection.rows
    if rows:
        state.go_later("pages/inspector.py", item=items.iloc[rows[0]]["item_id"])


def flow_items_panel(scope: data.Scope, a: str, b: str, kind: str) -> None:
    items = data.flow_item_list(scope, scope.focus, a, b, kind)
    st.subheader(f"{a} → {b}: {KIND_TEXT[kind]} · {len(items):,} items")
    if items.empty:
        st.info("No item takes this flow.")
        return
    n_pages = max(1, -(-len(items) // PAGE_SIZE))
    page = st.pagination(n_pages, key=f"fp-{a}-{b}-{kind}") if n_pages > 1 else 1
    shown = items.iloc[(page - 1) * PAGE_SIZE : page * PAGE_SIZE].reset_index(drop=True)
    cols = ["item_id", "task_type", "duration", "question", "confidence_from", "confidence_to"]
    key = f"flowitems-{a}-{b}-{kind}-{page}"
    st.caption("Select a row to open the item in the inspector.")
    st.dataframe(
        shown[cols], hide_index=True, key=key, on_select=lambda: _open_item(shown, key), selection_mode="single-row",
        column_config={
            "question": st.column_config.TextColumn(width="large"),
            "confidence_from": st.column_config.NumberColumn(f"confidence at {a}", format="%.2f"),
            "confidence_to": st.column_config.NumberColumn(f"confidence at {b}", format="%.2f"),
        },
    )  # fmt: skip
    ui.downloads(items, f"flow-{scope.focus}-{a}-{b}-{kind}", key=key)


ensure_entrypoint()
scope = st.session_state["scope"]
st.title("Flows")
with ui.guard():
    scope = scope.with_noise(sidebar.noise_toggle())
    ui.need_items(scope)
    ui.scope_caption(scope)
    grid = list(scope.grid)
    mode = state.bind(st.segmented_control, "flowview", "Show", options=list(VIEWS), default="grid", format_func=VIEWS.get)
    configs = None
    if mode == "pair":
        left, right = st.columns(2)
        a = state.bind(left.selectbox, "from", "From", options=grid, default=grid[0])
        b = state.bind(right.selectbox, "to", "To", options=[c for c in grid if c != a], default=grid[-1])
        configs = (a, b)
    view = data.flows_view(scope, scope.focus, configs)
    fig = sankey_figure(view)
    ui.chart(fig, f"flows-{scope.focus}")
    if scope.beyond_noise:
        st.caption(f"Within-noise flips hidden: {view['n_hidden']:,} (flips of items that flip under repeats at either "
                   "side), left out of the rescued and harmed links and of the item lists.")  # fmt: skip
    st.caption("Green: correct, red: wrong; dark links changed state (rescued / harmed), light links kept it. "
               "Hover a link for its counts and McNemar p; pick a flow in the table below to list its items.")  # fmt: skip

    table = flow_table(view)
    st.dataframe(
        table, hide_index=True, key="flowlist", on_select=lambda: _pick_row(table), selection_mode="single-row",
        column_config={
            "kind": st.column_config.TextColumn("flow"),
            "count": st.column_config.NumberColumn("items"),
            "share": st.column_config.NumberColumn("share of items", format="percent"),
            "net": st.column_config.NumberColumn("net (pair)", format="percent"),
            "churn": st.column_config.NumberColumn("churn (pair)", format="percent"),
            "mcnemar_p": st.column_config.NumberColumn("McNemar p (pair)", format="%.3g"),
        },
    )  # fmt: skip
    ui.downloads(table, f"flows-{scope.focus}")

    a, b, kind = state.get("from"), state.get("to"), state.get("kind")
    pairs = set(zip(table["from"], table["to"], strict=True))
    flow = ["--from", a, "--to", b, "--kind", kind] if kind in FLOW_KINDS and (a, b) in pairs else []
    if flow:
        flow_items_panel(scope, a, b, kind)
    else:
        st.info("Pick a flow (a row of the table above) to list its items.", icon="👆")
    pair = ["--from", configs[0], "--to", configs[1]] if configs and not flow else []
    ui.twin(scope, ["flows", "--model", scope.focus], *pair, *flow)
