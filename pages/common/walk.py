"""The current selection on the pages: which items the Inspector walks and a batch re-run takes.

The selection lives in the URL (``walk``, ``backend.scope.selection.Selection.to_url``), so a copied
Inspector link reopens the same walk at the same item. Without one the walk is the filtered list, in the Items
page's order (its sort, also in the URL), so "next" from a row of a sorted Items page opens the row below it.
Item lists are computed by ``backend.analysis.selection`` (the ``rerun --flow/--state/--items`` twin's
functions) and cached per view.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from backend.scope.items import SORTS
from backend.scope.selection import Selection
from backend.scope.view import View
from pages.common import state, ui
from pages.common.data import filtered_ids
from pages.common.data import walk_items as items

PAGE_SIZE = 50  # rows per page of an item list


def current() -> Selection | None:
    """The selection the URL carries (None: the filtered items)."""
    return Selection.from_url(state.get("walk"))


def order() -> tuple[str, bool]:
    """The Items page's sort key and direction (the URL's ``sort`` and ``desc``; by item id where it names none or
    an unknown key), which the walk of the filtered items follows."""
    sort = state.get("sort")
    return (sort if sort in SORTS else "item"), bool(state.get("desc"))


def describe_order() -> str:
    """The filtered walk's order in words, when it is not the ids' own: ", in the Items page's order (...)"."""
    sort, descending = order()
    if (sort, descending) == ("item", False):
        return ""
    return f", in the Items page's order ({SORTS[sort]}, {'descending' if descending else 'ascending'})"


def ids(view: View, model: str, sel: Selection | None) -> list[str]:
    """The walk's item ids, in order (the filtered list, in the Items page's order, when ``sel`` is None)."""
    if sel is None:
        return list(filtered_ids(view, model, *order()))
    if sel.kind == "items":
        return list(dict.fromkeys(sel.args))
    return items(view, model, sel)["item_id"].astype(str).tolist()


def page_of(items: pd.DataFrame, key: str) -> tuple[int, pd.DataFrame]:
    """The page of ``items`` that the pager ``key`` shows (drawn only when there is more than one): (page, rows)."""
    n_pages = max(1, -(-len(items) // PAGE_SIZE))
    page = st.pagination(n_pages, key=key) if n_pages > 1 else 1
    return page, items.iloc[(page - 1) * PAGE_SIZE : page * PAGE_SIZE].reset_index(drop=True)


def walk_bar(items: pd.DataFrame, sel: Selection, caption: str, key: str | None = None) -> None:
    """An item list's caption beside a button that opens its first item in the Inspector, walking them all."""
    c1, c2 = st.columns([3, 1], vertical_alignment="center")
    c1.caption(caption)
    with c2:
        walk_button(items, sel, key)


def walk_button(items: pd.DataFrame, sel: Selection, key: str | None = None) -> None:
    """A button that opens the first of ``items`` in the Inspector, walking them all (``sel``)."""
    these = "Walk this item" if len(items) == 1 else f"Walk these {len(items):,}"
    if st.button(f"{these} in the Inspector", icon=":material/frame_inspect:", width="stretch", key=key):
        state.go("pages/inspector.py", item=str(items["item_id"].iloc[0]), walk=sel.to_url())


def item_table(
    frame: pd.DataFrame, key: str, column_config: dict, sel: Selection | None = None, height: int | None = None
) -> None:
    """A list of items (``frame`` has ``item_id``) whose row's Open button opens that item in the Inspector,
    walking ``sel`` (None: the filtered items); ``height`` in pixels (None: Streamlit's, ten rows)."""
    ui.row_table(frame, key, lambda row: open_row(frame, row, sel), column_config, height=height)


def open_row(frame: pd.DataFrame, row: int, sel: Selection | None = None) -> None:
    """An item table's Open callback (``row``: a position in ``frame``): open that row's item in the Inspector,
    walking ``sel`` (None: the filtered items)."""
    item = str(frame.iloc[row]["item_id"])
    state.go_later("pages/inspector.py", item=item, walk=None if sel is None else sel.to_url())
