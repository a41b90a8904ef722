"""What a page switch costs by the kind of element the page draws (issue 33): one minimal app, real Chromium.

The dashboard's first switch to each page waits 2.6-4.7x the floor's click, its second switch to the same page
about 2x (``benchmarks/README.md``). This app has one page per element kind (a title and that element), beside
an empty page; each round, in a new browser session, switches from the empty page to each kind twice (back to
the empty page between): the first switch is the first time the tab draws that kind, the second is the same page
drawn again. Kinds are visited in ``KINDS``' order, so a kind that shares a script with an earlier one (the two
table grids) finds it loaded. Each figure is ``dashboard_browser.timed``'s: wall time from the click on the page
link until the run it started is over. Medians over the rounds.

With ``--preload`` the empty page first imports the table grid's and Vega's scripts, as the Overview does after its
first screen: what is left of a first switch is drawing that kind the first time in the tab.

Usage: ``python benchmarks/switch_kinds.py [--workdir /tmp/switch-kinds] [--runs 3] [--preload]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard_browser import minimal_app, new_session, timed  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser_fixtures import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

APP = """
import json
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

TABLE = pd.DataFrame({
    "item id": [f"item-{k:05d}" for k in range(20)],
    "question": ["What does the person do after opening the door?"] * 20,
    "task type": ["action"] * 20,
    "confidence": np.linspace(0, 1, 20),
    "changes": np.arange(20),
})
LINE = {
    "data": {"values": [{"x": k, "y": k * k % 7} for k in range(10)]},
    "mark": "line",
    "encoding": {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}},
}


def empty():
    st.title("empty")
    if PRELOAD:  # the Overview's ``later_loader``: the grid's and Vega's scripts imported after the first screen
        names = [p.name for stem in ("ArrowVegaLiteChart", "embed", "DataFrame")
                 for p in (Path(st.__file__).parent / "static" / "static" / "js").glob(f"{stem}.*.js")]
        st.html(
            "<script>if (!window.loaded) { window.loaded = true; for (const name of " + json.dumps(names) + ") "
            "import(new URL('static/js/' + name, document.baseURI).href); }</script>",
            unsafe_allow_javascript=True,
        )


def table_grid():
    st.title("table_grid")
    st.dataframe(TABLE, hide_index=True)


def table_grid_with_selection():
    st.title("table_grid_with_selection")
    st.dataframe(TABLE, hide_index=True, on_select="rerun", selection_mode="single-row", key="rows")


def html_table():
    st.title("html_table")
    st.html(TABLE.to_html(index=False))


def vega_chart():
    st.title("vega_chart")
    st.vega_lite_chart(LINE, use_container_width=True)


def ten_markdown():
    st.title("ten_markdown")
    for k in range(10):
        st.markdown(f"line **{k}** of text")


def ten_html():
    st.title("ten_html")
    for k in range(10):
        st.html(f"<small>line <b>{k}</b> of text</small>")


def three_metrics():
    st.title("three_metrics")
    for k, column in enumerate(st.columns(3)):
        column.metric(f"metric {k}", f"{k}.0%")


def alert():
    st.title("alert")
    st.info("Click a link of the Sankey to list its items here.", icon=":material/touch_app:")


KINDS = [empty, table_grid, table_grid_with_selection, html_table, vega_chart, ten_markdown, ten_html,
         three_metrics, alert]
pages = [st.Page(kind, url_path=kind.__name__, title=kind.__name__) for kind in KINDS]
st.navigation(pages).run()
"""
KINDS = (
    "table_grid",
    "table_grid_with_selection",
    "html_table",
    "vega_chart",
    "ten_markdown",
    "ten_html",
    "three_metrics",
    "alert",
)
EMPTY = "empty"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/switch-kinds"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--preload",
        action="store_true",
        help="the empty page imports the table grid's and Vega's scripts first, as the Overview does after its "
        "first screen (``pages.overview.later_loader``); the switches start 2 s later",
    )
    args = parser.parse_args()
    waits: dict[tuple[str, str], list[float]] = {}
    source = f"PRELOAD = {args.preload}\n{APP}"
    with sync_playwright() as pw, minimal_app(source, args.workdir / "app", args.workdir / "streamlit.log") as server:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(args.runs):
            context, page = new_session(browser)
            timed(page, "new session", lambda page=page: page.goto(server.url), {}, EMPTY)
            if args.preload:
                page.wait_for_timeout(2000)
            for kind in KINDS:
                for visit in ("first", "again"):
                    label = f"{kind} ({visit})"
                    figures: dict = {}
                    timed(page, label, _link(page, kind), figures, kind)
                    waits.setdefault((kind, visit), []).append(figures[label].wait)
                    timed(page, "back to the empty page", _link(page, EMPTY), figures, EMPTY)
                    waits.setdefault((EMPTY, "back"), []).append(figures["back to the empty page"].wait)
            context.close()
    print(f"\nmedians of {args.runs} new sessions (wall time until the switch's run is over)")
    print("| the page draws | first switch s (min-max) | again s (min-max) |\n|---|---|---|")
    for kind in KINDS:
        first, again = waits[(kind, "first")], waits[(kind, "again")]
        print(f"| {kind} | {_cell(first)} | {_cell(again)} |")
    print(f"| (a switch back to the empty page) | {_cell(waits[(EMPTY, 'back')])} | |")


def _link(page, title: str):
    return lambda: page.locator('[data-testid="stSidebar"]').get_by_role("link", name=title, exact=True).click()


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.2f}-{max(values):.2f})"


if __name__ == "__main__":
    main()
