"""What a choice costs by the kind of widget that takes it (issue 33): one minimal Streamlit app, real Chromium.

The same app offers the same choice as a multiselect and as pills (a multi-value filter, in a popover as the
sidebar's item filters are), and as a select box and as a segmented control (a sort key), beside a button (the
floor's click) and 25 lines of text that show every value (so each choice reruns a page of some size). Each figure
is ``dashboard_browser.timed``'s: wall time from the action until the run it started is over; a select box's and a
multiselect's action is the two clicks a user makes (open the list, pick a value). New browser sessions, medians.

Usage: ``python benchmarks/widget_kinds.py [--workdir /tmp/widget-kinds] [--runs 5]``.
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
import streamlit as st

TYPES = [f"Task type {k:02d}" for k in range(12)]
KEYS = ["item id", "task type", "correct", "changes", "confidence", "disagreement", "score drop"]
st.title("widget kinds")
with st.sidebar:
    box = st.popover("Filter items")
    many = box.multiselect("Task multiselect", TYPES, default=[])
    pills = box.pills("Task pills", TYPES, selection_mode="multi", default=[])
select = st.selectbox("Sort selectbox", KEYS)
segmented = st.segmented_control("Sort segmented", KEYS, default=KEYS[0])
st.button("rerun")
st.session_state.n = st.session_state.get("n", 0) + 1
for k in range(25):
    st.markdown(f"line {k}: {many} {pills} {select} {segmented}")
st.subheader(f"run {st.session_state.n}")
"""


def choices(page) -> list[tuple[str, object]]:
    """(label, action) in the order they run; the filters' popover is opened before the first filter."""

    def multiselect() -> None:
        box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Task multiselect")
        box.locator("input").click()
        page.keyboard.press("ArrowDown")
        page.locator('[role="option"]').first.click()

    def selectbox() -> None:
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Sort selectbox").click()
        page.locator('[role="option"]').filter(has_text="disagreement").first.click()

    def group(label: str, option: str):
        box = page.locator('[data-testid="stButtonGroup"]').filter(has_text=label)
        return lambda: box.locator("button[data-variant]").filter(has_text=option).first.click()

    return [
        ("button click", lambda: page.get_by_role("button", name="rerun").click()),
        ("multiselect: pick a value", multiselect),
        ("pills: pick a value", group("Task pills", "Task type 03")),
        ("select box: choose a key", selectbox),
        ("segmented control: choose a key", group("Sort segmented", "confidence")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/widget-kinds"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    waits: dict[str, list[float]] = {}
    with sync_playwright() as pw, minimal_app(APP, args.workdir / "app", args.workdir / "streamlit.log") as server:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(args.runs):
            context, page = new_session(browser)
            timed(page, "new session", lambda page=page: page.goto(server.url), {})
            for run, (label, action) in enumerate(choices(page), start=2):
                if label.startswith("multiselect"):
                    page.locator('[data-testid="stPopoverButton"]').click()
                    page.locator('[data-testid="stPopoverBody"]').wait_for()
                figures: dict = {}
                timed(page, label, action, figures, heading=f"^run {run}$")
                waits.setdefault(label, []).append(figures[label].wait)
                if label.startswith("multiselect"):
                    page.keyboard.press("Escape")  # the list; the popover stays open for the pills
            context.close()
    print(f"\nmedians of {args.runs} new sessions (wall time until the run is over)")
    print("| choice | wait s (min-max) |\n|---|---|")
    for label, values in waits.items():
        print(f"| {label} | {statistics.median(values):.3f} ({min(values):.2f}-{max(values):.2f}) |")


if __name__ == "__main__":
    main()
