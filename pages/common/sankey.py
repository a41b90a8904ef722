"""A clickable Sankey: a Streamlit component that draws a Plotly Sankey figure (as a dict) as SVG and reports clicks.

``st.plotly_chart(on_select=...)`` reports box/lasso/point selections of cartesian traces only: a
click on a Sankey link fires Plotly's ``plotly_click`` but Streamlit's selection stays empty
(checked on Streamlit 1.67), so the Flows page draws its Sankey here. The component is one HTML
file (``assets/sankey/index.html``) speaking Streamlit's component messages by hand. It draws the
figure's Sankey trace (fixed arrangement: nodes where the figure puts them, links stacked as
d3-sankey stacks them, the trace's hover templates) itself: loading Plotly's script into
the component's frame slowed every first switch to the page (``benchmarks/dashboard_browser.py``;
the figure: ``benchmarks/README.md``). The figure is built in Python (``pages/flows.py``), a plain
dict in Plotly's figure schema.

The page passes the opened link or node back (``selected``), so the component draws it outlined on
every run, whichever way it was opened (a click, the flow table, a link): the selection is the URL's,
not the component's. A click is read before the chart is drawn (``new_click``), so the run it starts
already draws its answer.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import streamlit as st
import streamlit.components.v1 as components
from plotly.io.json import to_json_plotly

FOLDER = Path(__file__).resolve().parents[2] / "assets" / "sankey"


@cache
def _component():
    """Declare the component once per process."""
    return components.declare_component("trajaudit_sankey", path=str(FOLDER))


def new_click(key: str) -> dict | None:
    """The click on the Sankey keyed ``key`` that started this run, as ``{"what": "link"|"node", "index": i}``
    (indices into the trace's lists), else None.

    The component keeps its last value across reruns, so each click carries a nonce and is
    reported once.
    """
    value = st.session_state.get(key)
    seen = f"_{key}_nonce"
    if not value or value.get("nonce") == st.session_state.get(seen):
        return None
    st.session_state[seen] = value["nonce"]
    return {"what": value["what"], "index": int(value["index"])}


def clickable_sankey(fig: dict, key: str, height: int, selected: dict | None) -> None:
    """Draw ``fig`` with ``selected`` (``{"what": "link"|"node", "index": i}``, or None) outlined; its clicks are
    read by ``new_click`` on the run they start."""
    # Plotly's own encoder: NaN (a McNemar p of a pair without flips) as null, NumPy values as numbers.
    _component()(figure=to_json_plotly(fig), height=height, selected=selected, key=key, default=None)
