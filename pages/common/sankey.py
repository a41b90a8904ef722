"""A clickable Sankey: a Streamlit component that draws a Plotly Sankey figure (as a dict) as SVG and reports clicks.

``st.plotly_chart(on_select=...)`` reports box/lasso/point selections of cartesian traces only: a
click on a Sankey link fires Plotly's ``plotly_click`` but Streamlit's selection stays empty
(checked on Streamlit 1.67), so the Flows page draws its Sankey here. The component is an
``st.components.v2`` module (``backend/report/static/sankey/``: ``sankey.js`` and ``sankey.css``, which the offline report draws its Sankey with too) that runs in the page
itself, in a shadow root: an ``st.components.v1`` iframe (its own document to fetch and start on every
switch to the page) cost a switch to Flows about a fifth more of the browser's CPU
(``benchmarks/README.md``), and loading Plotly's script there slowed it by over a second before
that. The script sets text only as text (``textContent``), never as markup. It draws the figure's Sankey trace (fixed
arrangement: nodes where the figure puts them, links stacked as d3-sankey stacks them, the trace's
hover templates) itself. The figure is built in Python (``pages/flows.py``), a plain dict in Plotly's
figure schema.

The page passes the opened link or node back (``selected``), so the component draws it outlined on
every run, whichever way it was opened (a click, the flow table, a link): the selection is the URL's,
not the component's. A click is a trigger value handed to ``on_click`` before the run it starts, so
that run already draws its answer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import streamlit as st
from plotly.io.json import to_json_plotly

FOLDER = Path(__file__).resolve().parents[2] / "backend" / "report" / "static" / "sankey"


@cache
def _component():
    """Register the component once per process (its script and style, read from ``FOLDER``)."""
    return st.components.v2.component(
        "trajaudit_sankey", js=(FOLDER / "sankey.js").read_text(), css=(FOLDER / "sankey.css").read_text()
    )


def clicked(key: str) -> dict | None:
    """In ``clickable_sankey``'s ``on_click``: the click, ``{"what": "link"|"node", "index": i}`` (indices into the
    trace's lists)."""
    value = st.session_state[key]["click"]
    return value and {"what": value["what"], "index": int(value["index"])}


def clickable_sankey(fig: dict, key: str, selected: dict | None, on_click: Callable[[], None]) -> None:
    """Draw ``fig`` with ``selected`` (``{"what": "link"|"node", "index": i}``, or None) outlined; a click calls
    ``on_click`` before the run it starts (``clicked(key)`` reads it there)."""
    # Plotly's own encoder: NaN (a McNemar p of a pair without flips) as null, NumPy values as numbers.
    data = {"figure": to_json_plotly(fig), "height": fig["layout"]["height"], "selected": selected}
    _component()(data=data, key=key, on_click_change=on_click)
