"""Items: a server-paged, sortable table with each item's trajectory drawn inline, and a trajectory heatmap.

The table is a part of the page that reruns alone (``pages.common.part``): a sort or a page turn
redraws the table, not the sidebar and the page around it.
"""

import html

import pandas as pd
import streamlit as st

from backend.analysis.explain import Target
from backend.analysis.flows import CLASS_HELP, CLASSES
from backend.contracts.base import to_json
from backend.present import charts_items
from backend.present.palette import model_colours
from backend.present.tables import sentence
from backend.present.text import count
from backend.scope.annotations import with_annotations
from backend.scope.items import MOST_FIRST, SORTS
from backend.scope.selection import Selection
from backend.scope.view import View
from pages.common import data, explain_panel, sparkline, state, ui, walk
from pages.common.boot import ensure_entrypoint
from pages.common.part import part
from pages.common.rerun_panel import selection_panel

SIZES = (25, 50, 100)
VIEWS = {"table": "Table", "heatmap": "Heatmap"}
# One item row per pixel of the heatmap: more rows draw nothing more (``views.heatmap`` keeps every stride-th
# row of the class order, so the class shares hold), and each row is marks for the browser to draw.
HEATMAP_ROWS = charts_items.HEATMAP_HEIGHT


def picked(page: pd.DataFrame) -> list[str]:
    """The rows picked on this page (pick mode), as item ids."""
    event = st.session_state.get("itemtable")
    rows = event.selection.rows if event is not None else []
    return page["item_id"].iloc[[r for r in rows if r < len(page)]].astype(str).tolist()


def selection_actions(view: View, ids: list[str]) -> None:
    """Pick mode: walk or re-run the picked rows; with none picked, the batch re-run takes the filtered items."""
    if ids:
        sel = Selection("items", tuple(ids))
        picked = "the picked item" if len(ids) == 1 else f"the {count(len(ids), 'picked item')}"
        if st.button(f"Walk {picked} in the Inspector", icon=":material/frame_inspect:"):
            state.go("pages/inspector.py", item=ids[0], walk=sel.to_url())
        selection_panel(view, sel, ids, key="batch-picked")
        explain_panel.panel(view, Target("items", tuple(ids)), "items-picked")
    else:
        st.caption(
            "Pick rows in the table to walk or re-run them; without a pick, the re-run below takes every filtered item."
        )
        selection_panel(view, None, walk.ids(view, view.scope.focus, None), key="batch-filtered")


@part("items")
def table_view(view: View) -> None:
    """The sortable, paged table and what acts on its rows: a sort, a page turn or a pick reruns this part only."""
    scope = view.scope
    sort = state.bind_one(
        st,
        "sort",
        "Sort by",
        list(SORTS),
        "item",
        format_func=SORTS.get,
        help="Correct, changes, confidence and score drop are the focus model's: configurations answered right, "
        "changes of correctness along the grid, mean confidence, largest drop of an open-ended score; "
        "disagreement is between the selected models.",
    )
    c1, c2, c3 = st.columns([1, 1, 1], vertical_alignment="bottom")
    pick = state.bind(
        c3.toggle,
        "pick",
        "Pick rows",
        default=False,
        help="Pick several rows to walk them in the Inspector or re-run them together",
    )
    if st.session_state.get("_items_sort") not in (None, sort):  # another key picked: its natural direction
        state.put("desc", sort in MOST_FIRST)
    st.session_state["_items_sort"] = sort
    desc = state.bind(c1.toggle, "desc", "Descending", default=False)
    size = state.bind(c2.segmented_control, "size", "Rows per page", options=list(SIZES), default=50, required=True)
    page_no = max(1, int(state.get("page") or 1))
    report = data.item_page(view, scope.focus, sort, bool(desc), page_no, size)
    page, n_pages = pd.DataFrame(to_json(report.rows)), report.n_pages
    has_conf = any(v is not None for row in page["confidence"] for v in row)
    m = view.matrix
    cells = m.correct[:, page["position"].to_numpy(), :]  # [M, rows, C]: only this page's rows
    shown = page.drop(columns=["position"]).assign(
        trajectory=[ui.trajectory_svg(cells[:, r, :]) for r in range(len(page))],
    )
    cols = (
        ["item_id", "trajectory"]
        + (["confidence"] if has_conf else [])
        + ["n_correct", "changes", "drop", "task_type", "tags", "duration", "question"]
    )
    shown["confidence"] = [
        sparkline.confidence_svg(row) for row in page["confidence"]
    ]  # a missing value is a gap, not an error cell
    if len(scope.models) > 1:
        cols.insert(cols.index("n_correct"), "disagreement")
    cols = [
        c for c in cols if c in ("item_id", "trajectory") or shown[c].notna().any()
    ]  # no all-empty column (no question text)
    colours = model_colours(data.store_info(view.root, view.version).models)
    order = ", ".join(ui.swatch(colours[mod], mod) for mod in scope.models)
    st.html(
        f"<small>Trajectory: one row of cells per model (top to bottom: {order}), one cell per configuration "
        f"({html.escape(' → '.join(scope.grid))}); green correct, red wrong. Tags, counts and confidence are "
        f"{html.escape(scope.focus)}'s. "
        + ("" if has_conf else "No confidences in this store for these items, so no confidence column. ")
        + ("Tick rows to walk or re-run them; a row's " if pick else "A row's ")
        + "Open button opens its item in the Inspector."
        + "</small>"
    )
    row_h = max(35, 13 * len(scope.models) + 10)  # a model's row of cells per line of the trajectory glyph
    named = {key: sentence(words) for key, words in SORTS.items()}  # the sort keys' words, as headers
    ui.row_table(
        shown[cols],
        "itemtable",
        lambda row: walk.open_row(page, row),
        {
            "item_id": st.column_config.TextColumn(named["item"], pinned=True),
            # The cell scales the image to the row's height: its width follows the image's aspect, so no config is cut off.
            "trajectory": st.column_config.ImageColumn(
                "Trajectory", width=int((row_h - 8) * len(scope.grid) / len(scope.models)) + 24
            ),
            "tags": st.column_config.ListColumn("Tags", width="medium"),
            "task_type": st.column_config.TextColumn(named["task_type"], width="medium"),
            "n_correct": st.column_config.NumberColumn(named["n_correct"], help="configs answered correctly"),
            "changes": st.column_config.NumberColumn(named["changes"], help="changes of correctness along the grid"),
            "drop": st.column_config.NumberColumn(
                named["drop"],
                format="%.3f",
                help="largest fall of the score between consecutive configurations (scored items)",
            ),
            "disagreement": st.column_config.ProgressColumn(
                named["disagreement"], min_value=0.0, max_value=1.0, format="%.2f"
            ),
            "confidence": st.column_config.ImageColumn(
                named["mean_confidence"],
                width=sparkline.column_width(row_h),
                help="focus model, along the grid (0 to 1); gaps: no confidence",
            ),
            "question": st.column_config.TextColumn("Question", width="large"),
        },
        height=min(len(shown), 12) * row_h + 40,
        row_height=row_h,
        **({"on_select": "rerun", "selection_mode": "multi-row"} if pick else {}),  # pick mode: tick rows too
    )
    left, right = st.columns([3, 2], vertical_alignment="center")
    if n_pages > 1:
        with left:
            state.put("page", min(page_no, n_pages))
            state.bind(st.pagination, "page", None, num_pages=n_pages)
    right.caption(f"page {min(page_no, n_pages)} of {n_pages} · {count(m.n_items, 'item')}")
    st.markdown(
        "**Download the filtered items** (focus model, every page, with their annotations; same columns as "
        "`trajaudit items --format csv --annotations`)"
    )

    def export() -> pd.DataFrame:  # built on click only
        return with_annotations(data.items_export(view, scope.focus), view.store, scope.benchmark)

    ui.downloads(export, f"items-{scope.benchmark}-{scope.focus}", parquet=True)
    if pick:
        selection_actions(view, picked(page))
    flags = ["--sort", sort, *(["--desc"] if desc else []), "--page", str(report.page), "--page-size", str(size)]
    ui.twin(view, ["items", "--model", scope.focus], *flags)


def heatmap_view(view: View) -> None:
    scope = view.scope
    heat = data.heatmap(view, scope.focus, HEATMAP_ROWS)
    ui.vega(charts_items.heatmap(heat), f"heatmap-{scope.focus}")
    counts = pd.DataFrame(
        {
            "class": CLASSES,
            "items": [heat.class_counts[c] for c in CLASSES],
            "meaning": [CLASS_HELP[c] for c in CLASSES],
        }
    )
    st.dataframe(counts, hide_index=True, column_config=ui.plain_headers(counts.columns, {}))
    ui.downloads(counts, f"trajectory-classes-{scope.focus}")
    ui.twin(view, ["flows", "--model", scope.focus])  # its trajectory_classes


ensure_entrypoint()
view = st.session_state["view"]
st.title("Items")
with ui.guard():
    ui.matched(view)
    mode = state.bind(
        st.segmented_control, "itemview", "View", options=list(VIEWS), default="table", format_func=VIEWS.get
    )
    if mode == "heatmap":
        heatmap_view(view)
    else:
        table_view(view)
