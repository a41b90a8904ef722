"""How soon a table's click reaches the server: a row's selection against a row's button (issue 33), real Chromium.

Opening an item from a table row took 0.15 s longer than the same page switch from the sidebar. Streamlit's table
grid debounces a selection before it sends it (so a selection of several clicks travels once); a button column's
click is sent at once. This app draws two tables of the same rows: one whose rows are selected (``on_select``, the
way rows opened before), one whose rows start with an Open button (``st.column_config.ButtonColumn``, the way
``pages/common/ui.py``'s ``row_table`` opens them now). Each round clicks a row of each and records when the
browser sends the rerun request (the websocket's next outgoing frame) and when the page shows which row the server
got. Medians over the clicks.

Usage: ``python benchmarks/row_open.py [--workdir /tmp/row-open] [--clicks 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard_browser import minimal_app, new_session  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser_fixtures import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

APP = """
import pandas as pd
import streamlit as st

ROWS = pd.DataFrame({"item": [f"item-{k}" for k in range(20)], "question": ["What happens next?"] * 20})


def got(how, row):
    st.session_state["got"] = f"{how} {row}"


st.markdown(f"got: {st.session_state.get('got', 'nothing')}")
st.dataframe(
    ROWS, key="selected", hide_index=True, selection_mode="single-row",
    on_select=lambda: got("selection", st.session_state["selected"].selection.rows[0]),
)
st.dataframe(
    ROWS.assign(open="Open")[["open", "item", "question"]], key="buttons", hide_index=True,
    column_config={"open": st.column_config.ButtonColumn(
        "", type="tertiary", pinned=True, key="open", on_click=lambda: got("button", st.session_state["open"]["row"])
    )},
)
"""
HEADER_PX, ROW_PX = 35, 35


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/row-open"))
    parser.add_argument("--clicks", type=int, default=5, help="clicks on each table (default 5)")
    args = parser.parse_args()
    sent: list[float] = []
    figures: dict[str, list[tuple[float, float]]] = {"selection": [], "button": []}
    with minimal_app(APP, args.workdir / "app", args.workdir / "streamlit.log") as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        _, page = new_session(browser)
        page.on("websocket", lambda ws: ws.on("framesent", lambda _: sent.append(time.perf_counter())))
        page.goto(server.url)
        page.locator('[data-testid="stDataFrame"]').nth(1).wait_for()
        page.wait_for_timeout(2000)
        for k in range(args.clicks):
            row = k % 10 + 1
            for table, how in ((0, "selection"), (1, "button")):
                box = page.locator('[data-testid="stDataFrame"]').nth(table).bounding_box()
                before = len(sent)
                start = time.perf_counter()
                page.mouse.click(box["x"] + 18, box["y"] + HEADER_PX + ROW_PX * row + ROW_PX / 2)
                page.get_by_text(f"got: {how} {row}").wait_for()
                shown = time.perf_counter() - start
                figures[how].append((sent[before] - start, shown))
                page.wait_for_timeout(400)
        browser.close()
    print(f"{args.clicks} clicks on each table (medians, ms): request sent after the click / row shown by the server")
    for how, pairs in figures.items():
        request, shown = (statistics.median(v) * 1000 for v in zip(*pairs, strict=True))
        print(f"  a row's {how:9s} {request:6.0f} / {shown:6.0f}")


if __name__ == "__main__":
    main()
