"""Flows: a Sankey of correct/wrong states across the grid (or between two configs); a click opens its items.

A link opens its flow (from -> to, rescued/harmed/stable), a node the items in that state; the
list opens an item in the Inspector, which then walks that flow's items (``pages.common.walk``),
and the whole list can be re-run under another configuration (``rerun_panel.selection_panel``).
"""

import html

import pandas as pd
import streamlit as st

from backend.analysis.explain import Target
from backend.analysis.metrics import FLOW_KINDS
from backend.present import series
from backend.present.tables import flow_table, step_table
from backend.present.text import KIND_TEXT, count
from backend.report.palette import SANKEY_COLOURS
from backend.scope.selection import Selection
from backend.scope.view import View
from pages.common import data, explain_panel, scores, sidebar, state, ui, walk
from pages.common.boot import ensure_entrypoint
from pages.common.rerun_panel import selection_panel
from pages.common.sankey import clickable_sankey

VIEWS = {"grid": "Across the grid", "pair": "Between two configs"}


def sankey_figure(view: dict) -> dict:
    """The Sankey (``backend.present.series``' trace, the report's figure's): state nodes per config, non-empty
    aggregated links coloured by kind. A Plotly figure as a plain dict, in the dashboard's chart look
    (``ui.style``'s): the component draws it (``pages.common.sankey``), so it is never validated into a
    ``go.Figure`` (a cost on every run). The component shows hover values as text and decodes entities in
    labels and the title, where it reads ``<b>`` as markup: the title's model name is escaped."""
    n_cfg = len(view["configs"])
    trace = series.sankey_trace(view, SANKEY_COLOURS, config_labels=True)  # no column headers: labels name them
    title = series.sankey_title(view, lambda t: html.escape(t, quote=False))
    layout = {
        "title": {"text": title, "font": {"size": 16}},
        "font": ui.FONT,
        "margin": {"l": 60, "r": 30, "t": 50, "b": 30},
        "height": 420 if n_cfg <= 2 else 480,
    }
    return {"data": [trace], "layout": layout}


def _open_flow(a: str, b: str, kind: str) -> None:
    for key, value in (("from", a), ("to", b), ("kind", kind), ("node", None)):
        state.put(key, value)


def _pick_row(table: pd.DataFrame) -> None:
    rows = st.session_state["flowlist"].selection.rows
    if rows:
        row = table.iloc[rows[0]]
        _open_flow(row["from"], row["to"], row["kind"])


def open_clicked(view: dict, click: dict | None) -> None:
    """A Sankey click: a link opens its flow, a node the items in its state (indices as drawn)."""
    if click is None:
        return
    if click["what"] == "link":
        links = [lk for lk in view["links"] if lk["count"] > 0]  # the links drawn
        if click["index"] < len(links):
            lk = links[click["index"]]
            _open_flow(lk["from"], lk["to"], lk["kind"])
    elif click["index"] < len(view["nodes"]):
        node = view["nodes"][click["index"]]
        state.put("node", [node["config"], node["state"]])
        state.put("kind", None)


def opened(table: pd.DataFrame, view: dict) -> Selection | None:
    """The flow or node the URL opens, when it exists in this view."""
    node = state.get("node")
    if node and len(node) == 2 and tuple(node) in {(n["config"], n["state"]) for n in view["nodes"]}:
        return Selection("state", tuple(node))
    a, b, kind = state.get("from"), state.get("to"), state.get("kind")
    if kind in FLOW_KINDS and (a, b) in set(zip(table["from"], table["to"], strict=True)):
        return Selection("flow", (a, b, kind))
    return None


def title(sel: Selection) -> str:
    if sel.kind == "flow":
        a, b, kind = sel.args
        return f"{a} → {b}: {KIND_TEXT[kind]}"
    return f"{sel.args[1]} at {sel.args[0]}"


def items_panel(view: View, sel: Selection) -> None:
    """The opened flow's or node's items: a list that opens the Inspector on its walk, and a batch re-run."""
    scope = view.scope
    items = walk.items(view, scope.focus, sel)
    st.subheader(f"{title(sel)} · {count(len(items), 'item')}")
    if items.empty:
        st.info("No item takes this flow.")
        return
    tag = "-".join(sel.to_url())
    page, shown = walk.page_of(items, f"fp-{tag}")
    conf = ["confidence_from", "confidence_to"] if sel.kind == "flow" else ["confidence"]
    has_conf = bool(items[conf].notna().to_numpy().any())
    cols = [c for c in ["item_id", "task_type", "duration", "question"] if c == "item_id" or items[c].notna().any()] + (
        conf if has_conf else []
    )
    key = f"flowitems-{tag}-{page}"
    walk.walk_bar(
        items,
        sel,
        "Select a row to open the item in the Inspector, which then walks these items."
        + ("" if has_conf else " No confidences in this store for these items, so no confidence columns."),
    )
    a, b = (sel.args[0], sel.args[1]) if sel.kind == "flow" else (sel.args[0], sel.args[0])
    walk.item_table(
        shown[cols],
        key,
        {
            "question": st.column_config.TextColumn(width="large"),
            "confidence": st.column_config.NumberColumn(f"confidence at {a}", format="%.2f"),
            "confidence_from": st.column_config.NumberColumn(f"confidence at {a}", format="%.2f"),
            "confidence_to": st.column_config.NumberColumn(f"confidence at {b}", format="%.2f"),
        },
        sel,
    )
    ui.downloads(items, f"flow-{scope.focus}-{tag}", key=key)
    selection_panel(view, sel, items["item_id"].astype(str).tolist(), key=f"batch-{tag}")


ensure_entrypoint()
st.title("Flows")
with ui.guard():
    view = ui.matched(data.restate(st.session_state["view"], beyond_noise=sidebar.noise_toggle()))
    scope = view.scope
    grid = list(scope.grid)
    mode = state.bind(
        st.segmented_control, "flowview", "Show", options=list(VIEWS), default="grid", format_func=VIEWS.get
    )
    configs = None
    if mode == "pair":
        left, right = st.columns(2)
        a = state.bind(left.selectbox, "from", "From", options=grid, default=grid[0])
        b = state.bind(right.selectbox, "to", "To", options=[c for c in grid if c != a], default=grid[-1])
        configs = (a, b)
    report = data.flows_view(view, scope.focus, configs)
    fig = sankey_figure(report)
    height = fig["layout"]["height"]
    open_clicked(report, clickable_sankey(fig, f"sankey-{scope.focus}", height))
    if scope.beyond_noise:
        st.caption(
            f"Within-noise flips hidden: {report['n_hidden']:,} (flips of items that flip under repeats at either "
            "side), left out of the rescued and harmed links and of the item lists."
        )
    st.caption(
        "Green: correct, red: wrong; dark links changed state (rescued / harmed), light links kept it. "
        "Hover a link for its counts and McNemar p; click a link to list its items, a node for the items in "
        "that state (or pick a flow in the table below)."
    )

    steps = step_table(report)
    st.dataframe(
        steps,
        hide_index=True,
        column_config={
            "net": st.column_config.NumberColumn("net", format="percent"),
            "churn": st.column_config.NumberColumn("churn", format="percent"),
            "mcnemar_p": st.column_config.NumberColumn("McNemar p", format="%.3g"),
        },
    )
    ui.downloads(steps, f"flow-steps-{scope.focus}")
    table = flow_table(report)
    ui.row_table(
        table,
        "flowlist",
        lambda: _pick_row(table),
        {
            "kind": st.column_config.TextColumn("flow"),
            "count": st.column_config.NumberColumn("items"),
            "share": st.column_config.NumberColumn("share of items", format="percent"),
        },
    )
    ui.downloads(table, f"flows-{scope.focus}")

    sel = opened(table, report)
    if sel is not None:
        items_panel(view, sel)
        explain_panel.panel(view, Target(sel.kind, sel.args), "-".join(sel.to_url()))
    else:
        st.info(
            "Click a link or a node of the Sankey (or pick a flow in the table above) to list its items.",
            icon=":material/touch_app:",
        )
    scores.flows_section(view, configs)  # where the scope has scored (open-ended) items
    flow = (
        ["--from", sel.args[0], "--to", sel.args[1], "--kind", sel.args[2]]
        if sel is not None and sel.kind == "flow"
        else []
    )
    pair = ["--from", configs[0], "--to", configs[1]] if configs and not flow else []
    ui.twin(view, ["flows", "--model", scope.focus], *pair, *flow)
