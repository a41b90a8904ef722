"""A clickable Sankey: Plotly in a Streamlit component that reports which link or node was clicked.

``st.plotly_chart(on_select=...)`` reports box/lasso/point selections of cartesian traces only: a
click on a Sankey link fires Plotly's ``plotly_click`` but Streamlit's selection stays empty
(checked on Streamlit 1.67), so the Flows page draws its Sankey here. The component is one HTML
file (``assets/sankey/index.html``) speaking Streamlit's component messages by hand; the Plotly
JS it loads is the installed plotly package's own ``plotly.min.js``, copied beside it into a
cache folder on first use, so nothing is fetched from a CDN at run time.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import streamlit as st
import streamlit.components.v1 as components

SOURCE = Path(__file__).resolve().parents[2] / "assets" / "sankey" / "index.html"
CACHE = Path("~/.cache/trajaudit/components").expanduser()


@cache
def _component():
    """Declare the component once per process, from a folder holding the page and plotly's JS."""
    folder = CACHE / f"sankey-{plotly.__version__}"
    folder.mkdir(parents=True, exist_ok=True)
    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not (folder / "plotly.min.js").exists():
        tmp = folder / "plotly.min.js.tmp"
        shutil.copyfile(js, tmp)
        tmp.replace(folder / "plotly.min.js")  # atomic: another session never reads half a file
    shutil.copyfile(SOURCE, folder / "index.html")
    return components.declare_component("trajaudit_sankey", path=str(folder))


def clickable_sankey(fig: go.Figure, key: str, height: int) -> dict | None:
    """Draw ``fig``; a new click as ``{"what": "link"|"node", "index": i}`` (indices into the trace's lists), else None.

    The component keeps its last value across reruns, so each click carries a nonce and is
    reported once.
    """
    value = _component()(figure=fig.to_json(), height=height, key=key, default=None)
    seen = f"_{key}_nonce"
    if not value or value.get("nonce") == st.session_state.get(seen):
        return None
    st.session_state[seen] = value["nonce"]
    return {"what": value["what"], "index": int(value["index"])}
