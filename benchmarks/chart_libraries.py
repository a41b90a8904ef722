"""Which chart library draws a first-screen chart fastest in this Streamlit, in real Chromium (issue 33, item 5).

The pages draw with two libraries (Vega-Lite dicts through ``st.vega_lite_chart``, Plotly through
``st.plotly_chart``) and the report with Plotly; one should stay. This serves one minimal Streamlit app that
draws the same chart, an Overview-like accuracy curve and flip bars (4 series x 10 points as lines with
markers, plus 10 bars), with either library as the link asks (``?lib=vega`` or ``?lib=plotly``; ``?lib=none``
draws no chart: the floor), both as the pages call them (``theme=None``, full width). Each rerun draws new
numbers, so a rerun redraws the chart as a filter does.

Per run and library: a new browser session (a new context: empty cache, Streamlit's frontend and the
library's code loaded afresh) until the chart is drawn, then a click on the app's button until the rerun's
chart is drawn; the libraries' order rotates from run to run, so a slower spell of the machine hits each
alike. Waiting is ``benchmarks/dashboard_browser.py``'s (imported, not copied): the script run started by the
action is over, nothing is loading, and every Vega-Lite chart has its SVG or canvas and every Plotly chart
its SVG. Prints each measurement, then the medians.

Usage: ``python benchmarks/chart_libraries.py [--runs 7] [--workdir /work/bench/charts]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from dashboard_browser import new_session, serve, timed  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests import browser_fixtures  # noqa: E402
from tests.browser_fixtures import CHROMIUM, CHROMIUM_ARGS, stop_server  # noqa: E402

LIBRARIES = ("none", "vega", "plotly")

APP = '''"""One chart, drawn by the library the link names (benchmarks/chart_libraries.py)."""
import numpy as np
import streamlit as st

st.title("charts")
lib = st.query_params.get("lib", "none")
st.button("rerun")
st.session_state.n = st.session_state.get("n", 0) + 1
rng = np.random.default_rng(st.session_state.n)
configs = [f"{2 ** k}f" for k in range(1, 11)]
series = {f"model-{m}": np.sort(rng.uniform(30, 80, len(configs))) for m in "ABCD"}
bars = rng.integers(-40, 40, len(configs))
if lib == "vega":
    points = [{"config": c, "model": m, "accuracy": float(v)} for m, ys in series.items() for c, v in zip(configs, ys)]
    flips = [{"config": c, "net": int(b)} for c, b in zip(configs, bars)]
    x = {"field": "config", "type": "ordinal", "sort": configs, "title": "configuration"}
    spec = {
        "height": 420,
        "vconcat": [
            {
                "data": {"values": points},
                "mark": {"type": "line", "point": True},
                "encoding": {"x": x, "y": {"field": "accuracy", "type": "quantitative", "title": "accuracy (%)"},
                             "color": {"field": "model", "type": "nominal"},
                             "tooltip": [{"field": "model"}, {"field": "config"}, {"field": "accuracy"}]},
                "width": "container",
                "height": 260,
            },
            {
                "data": {"values": flips},
                "mark": "bar",
                "encoding": {"x": x, "y": {"field": "net", "type": "quantitative", "title": "net flips"},
                             "tooltip": [{"field": "config"}, {"field": "net"}]},
                "width": "container",
                "height": 120,
            },
        ],
    }
    st.vega_lite_chart(spec, width="stretch", theme=None)
elif lib == "plotly":
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.05)
    for m, ys in series.items():
        fig.add_trace(go.Scatter(x=configs, y=ys, mode="lines+markers", name=m), row=1, col=1)
    fig.add_trace(go.Bar(x=configs, y=bars, name="net flips"), row=2, col=1)
    fig.update_layout(height=420, template="plotly_white")
    st.plotly_chart(fig, theme=None, config={"displaylogo": False})
st.subheader(f"run {st.session_state.n}")
'''


def measure(browser, url: str, lib: str, figures: dict[str, list[float]], shot: Path | None = None) -> None:
    """A new session on ``?lib=lib`` until its chart is drawn, then a rerun click until the new chart is (and a
    screenshot of it into ``shot``, to look at what was timed)."""
    context, page = new_session(browser)
    once: dict[str, float] = {}
    timed(page, f"{lib}: new session", lambda: page.goto(f"{url}/?lib={lib}"), once, "charts")
    timed(
        page, f"{lib}: rerun click", lambda: page.get_by_role("button", name="rerun").click(), once, heading="^run 2$"
    )
    if shot is not None:
        page.screenshot(path=str(shot))
    context.close()
    for label, seconds in once.items():
        figures.setdefault(label, []).append(seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="runs per library (each: a new session and a rerun click)")
    ap.add_argument("--workdir", default="/work/bench/charts")
    args = ap.parse_args()
    app_dir = Path(args.workdir) / "chart-app"
    app_dir.mkdir(parents=True, exist_ok=True)
    (app_dir / "app.py").write_text(APP)
    browser_fixtures.REPO = app_dir  # start_server runs `streamlit run app.py` in REPO
    server = serve(app_dir, Path(args.workdir) / "streamlit-charts.log")
    figures: dict[str, list[float]] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            print("warm-up (not counted: the server's first import of each library)", flush=True)
            for lib in LIBRARIES:
                measure(browser, server.url, lib, {}, Path(args.workdir) / f"chart-{lib}.png")
            for run in range(args.runs):
                order = LIBRARIES[run % 3 :] + LIBRARIES[: run % 3]  # rotated: each library first in turn
                print(f"run {run + 1}: {', '.join(order)}", flush=True)
                for lib in order:
                    measure(browser, server.url, lib, figures)
            browser.close()
    finally:
        stop_server(server)
    print(f"\nmedians over {args.runs} runs (seconds; min-max in brackets):")
    for label, values in figures.items():
        print(f"  {label:<24} {statistics.median(values):6.2f}  [{min(values):.2f}-{max(values):.2f}]")


if __name__ == "__main__":
    main()
