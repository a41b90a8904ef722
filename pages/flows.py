"""Flows: a Sankey of correct/wrong states across the grid (or between two configs); a click opens its items.

A link opens its flow (from -> to, rescued/harmed/stable), a node the items in that state; the
items are listed beside the chart (where the user looks when clicking), the link or node stays
outlined, and a click reruns that part of the page only (``pages.common.part``). The list opens an
item in the Inspector, which then walks that flow's items (``pages.common.walk``), and the whole list
can be re-run under another configuration (``rerun_panel.selection_panel``, below the chart).
"""

from typing import cast

import pandas as pd
import streamlit as st

from backend.analysis.metrics import FLOW_KINDS
from backend.analysis.target import Target
from backend.contracts.explain import TargetKind
from backend.contracts.views import FlowsReport, SankeyLink
from backend.present import series
from backend.present.palette import SANKEY_COLOURS
from backend.present.tables import flow_table, sankey_steps, step_table, transitions_table
from backend.present.text import KIND_TEXT, count
from backend.report.html import table_html
from backend.scope.selection import Selection
from backend.scope.view import View
from pages.common import data, explain_panel, scores, sidebar, state, ui, walk
from pages.common.boot import ensure_entrypoint
from pages.common.part import part
from pages.common.rerun_panel import selection_panel
from pages.common.sankey import clickable_sankey, clicked

VIEWS = {"grid": "Across the grid", "pair": "Between two configs"}
ROW_PX = 35  # a table row's height (Streamlit's default), the header's too


def drawn_links(view: FlowsReport) -> list[SankeyLink]:
    """The Sankey's links as drawn (non-empty ones, ``series.sankey_trace``'s): a click's index is into these."""
    return [lk for lk in view.links if lk.count > 0]


def _open_flow(a: str, b: str, kind: str) -> None:
    for key, value in (("from", a), ("to", b), ("kind", kind), ("node", None)):
        state.put(key, value)


def _open_row(table: pd.DataFrame, row: int) -> None:
    flow = table.iloc[row]
    _open_flow(flow["from"], flow["to"], flow["kind"])


def open_clicked(view: FlowsReport, click: dict | None) -> None:
    """A Sankey click: a link opens its flow, a node the items in its state (indices as drawn)."""
    if click is None:
        return
    if click["what"] == "link":
        links = drawn_links(view)
        if click["index"] < len(links):
            lk = links[click["index"]]
            _open_flow(lk.from_, lk.to, lk.kind)
    elif click["index"] < len(view.nodes):
        node = view.nodes[click["index"]]
        state.put("node", [node.config, node.state])
        state.put("kind", None)


def opened(table: pd.DataFrame, view: FlowsReport) -> Selection | None:
    """The flow or node the URL opens, when it exists in this view."""
    node = state.get("node")
    if node and len(node) == 2 and tuple(node) in {(n.config, n.state) for n in view.nodes}:
        return Selection("state", tuple(node))
    a, b, kind = state.get("from"), state.get("to"), state.get("kind")
    if kind in FLOW_KINDS and (a, b) in set(zip(table["from"], table["to"], strict=True)):
        return Selection("flow", (a, b, kind))
    return None


def marked(view: FlowsReport, sel: Selection | None) -> dict | None:
    """The Sankey's outlined shape for the opened selection: a flow's drawn link, a state's node (as drawn)."""
    if sel is None:
        return None
    if sel.kind == "flow":
        keys = [(lk.from_, lk.to, lk.kind) for lk in drawn_links(view)]
        return {"what": "link", "index": keys.index(sel.args)} if sel.args in keys else None
    nodes = [(n.config, n.state) for n in view.nodes]
    return {"what": "node", "index": nodes.index(sel.args)} if sel.args in nodes else None


def title(sel: Selection) -> str:
    if sel.kind == "flow":
        a, b, kind = sel.args
        return f"{a} → {b}: {KIND_TEXT[kind]}"
    return f"{sel.args[1]} at {sel.args[0]}"


def item_list(view: View, sel: Selection, height: int) -> pd.DataFrame:
    """The opened flow's or node's items beside the Sankey (about its ``height``): a heading, a button that walks
    them in the Inspector, and a paged list whose rows open one there. Returns the items."""
    scope = view.scope
    items = walk.items(view, scope.focus, sel)
    st.subheader(f"{title(sel)} · {count(len(items), 'item')}")
    if items.empty:
        st.info("No item takes this flow.")
        return items
    tag = "-".join(sel.to_url())
    conf = ["confidence_from", "confidence_to"] if sel.kind == "flow" else ["confidence"]
    has_conf = bool(items[conf].notna().to_numpy().any())
    cols = [c for c in ["item_id", "question"] if c == "item_id" or items[c].notna().any()]
    cols += (conf if has_conf else []) + [c for c in ["task_type", "duration"] if items[c].notna().any()]
    walk.walk_button(items, sel)
    st.caption(
        "A row's Open button opens its item in the Inspector, which then walks these items; re-run them together "
        "below." + ("" if has_conf else " No confidences in this store for these items.")
    )
    page, shown = walk.page_of(items, f"fp-{tag}")
    a, b = (sel.args[0], sel.args[1]) if sel.kind == "flow" else (sel.args[0], sel.args[0])
    walk.item_table(
        shown[cols],
        f"flowitems-{tag}-{page}",
        {
            "question": st.column_config.TextColumn("Question", width="medium"),
            "confidence": st.column_config.NumberColumn(f"Confidence at {a}", format="%.2f"),
            "confidence_from": st.column_config.NumberColumn(f"Confidence at {a}", format="%.2f"),
            "confidence_to": st.column_config.NumberColumn(f"Confidence at {b}", format="%.2f"),
        },
        sel,
        height=min(ROW_PX * (len(shown) + 1) + 3, max(height - 250, 4 * ROW_PX)),  # no empty rows, none below the chart
    )
    ui.downloads(items, f"flow-{scope.focus}-{tag}", key=f"flowitems-{tag}")
    return items


def hint() -> None:
    st.info(
        "Click a link of the Sankey (a flow between two configurations) or a node (the items in one state) to "
        "list its items here; or open a flow in the table below.",
        icon=":material/touch_app:",
    )


@part("flows")
def flows_part(view: View, report: FlowsReport, configs: tuple[str, str] | None) -> None:
    """The Sankey with the opened flow's items beside it, the step and flow tables, and what acts on the opened
    items: a click on a link, a node or a row reruns this part only."""
    scope = view.scope
    fig = series.sankey_figure(report, SANKEY_COLOURS, ui.FONT)
    height = fig["layout"]["height"]
    key = f"sankey-{scope.focus}"
    table = flow_table(report)
    sel = opened(table, report)
    chart, side = st.columns([3, 2], gap="medium")
    with chart:
        clickable_sankey(fig, key, marked(report, sel), lambda: open_clicked(report, clicked(key)))
    items = None
    with side:
        if sel is None:
            hint()
        else:
            items = item_list(view, sel, height)
    if scope.beyond_noise:
        st.caption(
            f"Within-noise flips hidden: {report.n_hidden or 0:,} (flips of items that flip under repeats at either "
            "side), left out of the rescued and harmed links and of the item lists."
        )
    st.caption(
        "Green: correct, red: wrong; dark links changed state (rescued / harmed), light links kept it. "
        "Hover a link for its counts and McNemar p; click a link to list its items beside the chart, a node "
        "for the items in that state (or open a flow in the table below)."
    )
    # The steps as the Overview's transitions read (net and churn in points): plain HTML, no second table grid.
    st.html(f'<div class="ta-table">{table_html(transitions_table({scope.focus: sankey_steps(report)}))}</div>')
    ui.downloads(lambda: step_table(report), f"flow-steps-{scope.focus}")
    ui.row_table(
        table,
        "flowlist",
        lambda row: _open_row(table, row),
        {
            "kind": st.column_config.TextColumn("Flow"),
            "count": st.column_config.NumberColumn("Items"),
            "share": st.column_config.NumberColumn("Share of items", format="percent"),
        },
    )
    ui.downloads(table, f"flows-{scope.focus}")
    if sel is not None and items is not None and len(items):
        tag = "-".join(sel.to_url())
        selection_panel(view, sel, items["item_id"].astype(str).tolist(), key=f"batch-{tag}")
    if sel is not None:
        explain_panel.panel(view, Target(cast(TargetKind, sel.kind), sel.args), "-".join(sel.to_url()))
    scores.flows_section(view, configs)  # where the scope has scored (open-ended) items
    flow = (
        ["--from", sel.args[0], "--to", sel.args[1], "--kind", sel.args[2]]
        if sel is not None and sel.kind == "flow"
        else []
    )
    pair = ["--from", configs[0], "--to", configs[1]] if configs and not flow else []
    ui.twin(view, ["flows", "--model", scope.focus], *pair, *flow)


ensure_entrypoint()
st.title("Flows")
with ui.guard():
    view = ui.matched(data.restate(st.session_state["view"], beyond_noise=sidebar.noise_toggle()))
    grid = list(view.scope.grid)
    mode = state.bind(
        st.segmented_control, "flowview", "Show", options=list(VIEWS), default="grid", format_func=VIEWS.get
    )
    configs = None
    if mode == "pair":
        left, right = st.columns(2)
        a = state.bind_one(left, "from", "From", grid, grid[0])
        b = state.bind_one(right, "to", "To", [c for c in grid if c != a], grid[-1])
        configs = (a, b)
    flows_part(view, data.flows_view(view, view.scope.focus, configs), configs)
