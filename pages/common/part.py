"""A part of a page that reruns alone (``st.fragment``): a click inside it redraws that part, not the page.

A whole-page run redraws the sidebar and every section above the click; the browser's drawing of those
elements was most of each wait (``benchmarks/dashboard_browser.py``). A fragment's own rerun skips the
entry point (``app.py``), so what the entry point does around a page's run is done here for it: a
table row's "open in the Inspector" (``state.go_later``) is followed, the state is written to the URL
(``state.publish``), a ``UserError`` is shown as a notice (``ui.guard``) and the run is clocked
(``runlog``, as ``<page>#part``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from pages.common import runlog, state, ui


def _alone() -> bool:
    """Whether this run reruns fragments only (the page's other elements stay as drawn)."""
    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def part(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Make a page section a fragment named ``name`` (the run log's ``<name>#part``); its arguments are those of
    the last whole-page run, so pass what the section reads (the view), not what a click inside it changes."""

    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> None:
            if not _alone():  # within the page's run: app.py follows, publishes and clocks
                func(*args, **kwargs)
                return
            timer = runlog.start(f"{name}#part")
            try:
                state.follow()
                with ui.guard():
                    func(*args, **kwargs)
                state.publish()
            finally:
                timer.stop()

        return st.fragment(run)

    return decorate
