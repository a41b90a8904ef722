"""Make sure ``app.py`` runs first, whichever URL the first visitor opens.

Because the project has a ``pages/`` folder (its layout requires one), Streamlit starts a server in
its ``pages/``-folder mode and, for the very first session, runs a page file directly by its URL
(``/flows``) without the entry point. Calling ``st.navigation`` turns that mode off for the server's
process (Streamlit's documented rule: an app that calls ``st.navigation`` ignores the ``pages/``
folder), which ``app.py`` does on every run. A page that finds itself run without a view (``app.py``
opens one before it runs a page; a test that runs a page alone puts one in the session state)
therefore calls ``st.navigation`` itself, with itself as the one page, and reruns: the rerun goes
through ``app.py`` and lands on the same page, since both modes key a page on its URL path (the
file's stem), query string included.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import streamlit as st


def ensure_entrypoint() -> None:
    """Called at the top of every page; does nothing when the page has its view to draw."""
    if "view" in st.session_state:
        return
    caller = inspect.stack()[1].filename  # the page file Streamlit ran directly
    # A default page beside it: the one page alone would be the default, served at "/" only, and the
    # browser, still at this page's URL, would say "Page not found" until the rerun's navigation arrives.
    st.navigation([st.Page(_never, url_path="entry", default=True), st.Page(Path(caller))], position="hidden")
    st.rerun()


def _never() -> None:
    """The stand-in default page of that one navigation call; the rerun replaces it before anything runs it."""
