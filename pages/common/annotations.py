"""The annotation panel of an item: its tags and notes, with delete, and a form to add one (behind a button).

Annotations live in the store (``backend.scope.annotations``: append-only, tombstones for deletes), so
the panel only draws them and hands the user's actions to the backend. Every write bumps the store
version, which is the cache key of the listing, so the panel shows the new state on the next run.
The author is remembered for the session, starting from ``$TRAJAUDIT_AUTHOR`` or the login name.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import streamlit as st

from backend.contracts.store import Annotation
from backend.scope import annotations as scope_annotations
from pages.common import ui
from pages.common.data import annotation_listing as _listing
from store.errors import UserError
from store.store import Store

AUTHOR_KEY = "annotation_author"
EVERY_MODEL = "(every model)"
_FLASH = "_annotation_flash"


def _flash(kind: str, text: str) -> None:
    """A message for the next run (callbacks run before the page draws, so they cannot draw it)."""
    st.session_state[_FLASH] = (kind, text)


def _delete(root: str, annotation_id: str) -> None:
    try:
        gone = scope_annotations.delete_annotation(Store(root), annotation_id, st.session_state.get(AUTHOR_KEY))
        _flash("success", f"Deleted the *{ui.escape_md(gone.tag)}* annotation.")
    except UserError as exc:
        _flash("error", ui.escape_md(exc))


def _add(root: str, benchmark: str, item_id: str, form: str) -> None:
    values = {k: st.session_state[f"{form}-{k}"] for k in ("tag", "note", "author", "model")}
    st.session_state[AUTHOR_KEY] = values["author"]
    model = None if values["model"] == EVERY_MODEL else values["model"]
    try:
        row = scope_annotations.add_annotation(
            Store(root), benchmark, item_id, values["tag"], values["note"], values["author"], model
        )
        _flash("success", f"Added *{ui.escape_md(row.tag)}* to {ui.escape_md(item_id)}.")
        st.session_state[f"{form}-note"] = ""
    except UserError as exc:
        _flash("error", ui.escape_md(exc))


def _row(root: str, ann: Annotation) -> None:
    left, right = st.columns([12, 1], vertical_alignment="center")
    # Notes, authors and model names are whatever someone typed or ingested: shown as text (escaped).
    about = f" · about {ann.model}" if ann.model is not None else ""
    when = datetime.fromisoformat(ann.created_at).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    note = f": {ui.escape_md(ann.note)}" if ann.note is not None else ""
    left.markdown(f":violet-badge[{ui.escape_md(ann.tag)}]{note}")
    left.caption(ui.escape_md(f"{ann.author} · {when}{about}"))
    right.button(
        ":material/delete:",
        key=f"ann-del-{ann.annotation_id}",
        help="Delete this annotation",
        on_click=_delete,
        args=(root, ann.annotation_id),
    )


def annotation_panel(store: Store | str | Path, benchmark: str, item_id: str, models: list[str]) -> None:
    """Draw ``item_id``'s annotations (newest first, each deletable) and the form that adds one.

    ``models`` are offered for an annotation about one model; the default is about the item.
    """
    store = store if isinstance(store, Store) else Store(store)
    root = str(store.root)
    st.subheader("Annotations")
    flash = st.session_state.pop(_FLASH, None)
    if flash:
        (st.success if flash[0] == "success" else st.error)(flash[1])
    listing = _listing(root, store.version(), benchmark, item_id)
    if not listing:
        st.caption("No annotation on this item yet.")
    for ann in listing:  # one item's annotations: a handful
        _row(root, ann)
    form = f"ann-{benchmark}-{item_id}"
    st.session_state.setdefault(AUTHOR_KEY, scope_annotations.default_author())
    # In a popover: Streamlit draws its form only while it is open, and the Inspector redraws this panel on every
    # previous/next and every switch to the page (six elements fewer each time; issue 33).
    add = st.popover("Add an annotation", icon=":material/add:")
    with add, st.form(form, border=False):
        st.markdown("**Add an annotation** (evidence pathway and a free note)")
        c1, c2, c3 = st.columns([2, 1, 1])
        c1.selectbox(
            "Tag",
            list(scope_annotations.VOCABULARY),
            key=f"{form}-tag",
            format_func=lambda t: f"{t}: {scope_annotations.VOCABULARY[t]}",
        )
        c2.selectbox("About", [EVERY_MODEL, *models], key=f"{form}-model")
        if f"{form}-author" not in st.session_state:
            st.session_state[f"{form}-author"] = st.session_state[AUTHOR_KEY]
        c3.text_input("Author", key=f"{form}-author")
        st.text_area(
            "Note", key=f"{form}-note", placeholder="what you saw, e.g. the answer is in the last 5 s", height=80
        )
        st.form_submit_button(
            "Add annotation", icon=":material/add:", on_click=_add, args=(root, benchmark, item_id, form)
        )
