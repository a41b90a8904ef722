"""Make sure ``app.py`` runs first, whichever URL the first visitor opens.

Because the project has a ``pages/`` folder (its layout requires one), Streamlit starts a server in
its ``pages/``-folder mode and, for the very first session, runs a page file directly by its URL
(``/flows``) without the entry point (Streamlit's ``AppTest`` does so on every run). Calling
``st.navigation`` turns that mode off for the server's process (Streamlit's documented rule: an app
that calls ``st.navigation`` ignores the ``pages/`` folder), which ``app.py`` does on every run. A page
run without ``app.py`` therefore calls ``st.navigation`` itself and reruns: the rerun goes through
``app.py`` and lands on the same page, since both modes key a page on its URL path (the file's stem),
query string included. ``app.py`` marks the runs it makes (``RUNNING``, for the run only) and the
sessions it has served (``PAGE``); a page run alone with a view put in the session state (a test of
one page) is left to draw.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import streamlit as st

RUNNING = "_entry_running"  # set by app.py while it runs a page
PAGE = "_page"  # the URL path of the page app.py ran last in this session


def ensure_entrypoint() -> None:
    """Called at the top of every page; does nothing when ``app.py`` runs it, or when it runs alone on a view."""
    state = st.session_state
    if state.get(RUNNING) or ("view" in state and PAGE not in state):
        return
    caller = inspect.stack()[1].filename  # the page file Streamlit ran directly
    # A default page beside it: the one page alone would be the default, served at "/" only, and the
    # browser, still at this page's URL, would say "Page not found" until the rerun's navigation arrives.
    st.navigation([st.Page(_never, url_path="entry", default=True), st.Page(Path(caller))], position="hidden")
    st.rerun()


def _never() -> None:
    """The stand-in default page of that one navigation call; the rerun replaces it before anything runs it."""
