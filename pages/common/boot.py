"""Make sure ``app.py`` runs first, whichever URL the first visitor opens.

Because the project has a ``pages/`` folder, Streamlit starts in its legacy multipage mode and,
for the very first session of a server, runs a page file directly by its URL (``/flows``) without
the entry point. The entry point's ``st.navigation`` switches the process to the modern mode for
good; a page that finds itself run in legacy mode switches it the same way and reruns, and the
rerun lands on the same page (both modes key a page on its URL path, which is the file's stem).
"""

from __future__ import annotations

import streamlit as st


def ensure_entrypoint() -> None:
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
