"""trajaudit dashboard: ``streamlit run app.py`` (store: ``$TRAJAUDIT_STORE`` or ./trajaudit-data).

The entry point draws the shared sidebar, opens the ``View`` it selects and runs the chosen page.
All state is in the URL (``pages.common.state``): the navigation links carry it, and a run that
stays on its page writes it back, so a copied link reopens the same view.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.common import boot, data, live, runlog, sidebar, state, ui

ASSETS = Path(__file__).resolve().parent / "assets"

st.set_page_config(page_title="trajaudit", page_icon=str(ASSETS / "favicon.svg"), layout="wide")
state.init()


def _root() -> None:
    """Never drawn: the entry point sends the bare URL to ``/overview`` before anything is drawn."""


PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/monitoring:", url_path="overview"),
    st.Page("pages/flows.py", title="Flows", icon=":material/conversion_path:", url_path="flows"),
    st.Page("pages/items.py", title="Items", icon=":material/table_rows:", url_path="items"),
    st.Page("pages/inspector.py", title="Inspector", icon=":material/frame_inspect:", url_path="inspector"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
    st.Page("pages/policies.py", title="Policies", icon=":material/alt_route:", url_path="policies"),
    st.Page("pages/audits.py", title="Audits", icon=":material/fact_check:", url_path="audits"),
    st.Page("pages/workers.py", title="Workers", icon=":material/memory:", url_path="workers"),
]
# The default page is served only at "/", so an Overview that were the default would answer
# ``/overview`` with "Page not found": the root is a stand-in that switches to ``/overview`` with
# the link's parameters, before the sidebar consumes any of them (its notices then show there).
ROOT = st.Page(_root, title="Overview", url_path="home", default=True)
page = st.navigation([ROOT, *PAGES], position="hidden")
if page is ROOT:
    st.switch_page(PAGES[0], query_params=state.params())
switched = st.session_state.get(boot.PAGE) != page.url_path
st.session_state[boot.PAGE] = page.url_path

st.logo(str(ASSETS / "logo.svg"), size="large")
st.html(f"<style>{(ASSETS / 'style.css').read_text()}</style>")
nav = st.sidebar.container()
timer = runlog.start(page.url_path)
try:
    with ui.guard():
        view = sidebar.draw()
    with nav:
        links = state.params()  # once: the state is the same for every page's link (2 ms each)
        for p in PAGES:
            st.page_link(p, query_params=links)
        st.divider()
    if view is not None:
        st.session_state["view"] = view
        state.follow()
        # Before the page runs (it draws nothing): a page that stops early (st.stop) follows writes too.
        live.follow_writes(view.root, view.version)  # a write elsewhere reruns the page (no reload)
        st.session_state[boot.RUNNING] = True  # the page runs through the entry point (pages.common.boot)
        page.run()
        data.warm_snapshot(view.root, view.version)
        if switched:
            ui.scroll_to_top()
finally:
    st.session_state.pop(boot.RUNNING, None)
    # A page switch already carried the state in its link; rewriting the URL in that same run
    # would race the browser's own URL update (the path would lag one page behind).
    if not switched:
        state.publish()
    timer.stop()
