"""The Inspector's "next ▶" as a user waits for it (issue 33): real Chromium against ``streamlit run app.py``.

Each figure is wall time from the click until the item it opens is drawn: the item box holds the next id,
the app's script run is over (``data-test-script-state``), no skeleton is left and every Vega-Lite chart
has its SVG; beside it, the server's share and which runs it made (``TRAJAUDIT_RUN_LOG``: ``inspector`` a
full run, ``inspector-item`` the item's fragment). Beside the times, the elements drawn: Streamlit elements (``stElementContainer``) and DOM
nodes under the main area, on the last item. ``pages/inspector.py`` redraws the item inside a fragment, so
a click reruns the item's part of the page alone; run this on a commit before that and after it to compare.

Usage: ``python benchmarks/inspector_next.py --store STORE [--clicks 8] [--query 'bench=...&models=...']``
(a store with videos: ``trajaudit demo``, or the browser tests' small demo). Last line: the median.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser_fixtures import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server  # noqa: E402

TIMEOUT_MS = 120_000
# ``pages.common.runlog``'s line per script run: the entry point's full runs and the item fragment's runs
RUN_LINE = re.compile(r"^trajaudit run: (\S+) ([0-9.]+) s$", re.MULTILINE)
SETTLE_MS = 400  # outside the measured time: no user clicks in the frame a page is drawn
ITEM_BOX = '[data-testid="stMain"] [data-testid="stTextInput"] input'
# The item ``want`` is drawn and the run that drew it is over.
DONE = """(want) => {
  const box = document.querySelector('[data-testid="stMain"] input[aria-label="Item id"]');
  const app = document.querySelector('[data-testid="stApp"]');
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  return !!box && box.value === want && app.getAttribute('data-test-script-state') !== 'running'
    && !document.querySelector('[data-testid="stStatusWidgetRunningIcon"]')
    && !document.querySelector('[data-testid="stSkeleton"]')
    && charts.length > 0 && charts.every(c => !!c.querySelector('svg, canvas'))
    && [...document.querySelectorAll('[data-testid="stMain"] .stElementContainer')].every(e => !e.querySelector('.stale-element'));
}"""
COUNT = """() => ({elements: document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]').length,
                 nodes: document.querySelectorAll('[data-testid="stMain"] *').length})"""


def walk_ids(store: Path, query: str) -> list[str]:
    """The filtered items, in the Inspector's walk order (the view's matrix, as ``pages.common.walk.ids``)."""
    from urllib.parse import parse_qs

    from backend.scope.resolve import Scope
    from backend.scope.view import open_view
    from store.store import Store

    q = {k: v[0] for k, v in parse_qs(query).items()}
    scope = Scope(q.get("bench"), tuple(q["models"].split(",")))
    view = open_view(Store(store), scope.resolve(Store(store)))
    return view.matrix.items["item_id"].astype(str).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--clicks", type=int, default=8)
    parser.add_argument("--query", default="bench=synthetic-videomme&models=synthetic-A-7B,synthetic-B-13B")
    parser.add_argument("--screenshot", type=Path, help="a screenshot of the last item drawn")
    parser.add_argument("--profile", type=Path, help="a folder for each run's cProfile (pages/common/runlog.py)")
    args = parser.parse_args()
    ids = walk_ids(args.store, args.query)
    log = Path(tempfile.mkdtemp()) / "streamlit.log"
    server = start_server(args.store, log, {"TRAJAUDIT_LIVE_POLL_S": "0", "TRAJAUDIT_RUN_LOG": str(args.profile or 1)})
    times: list[float] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{server.url}/inspector?{args.query}&item={ids[0]}")
            page.wait_for_function(DONE, arg=ids[0], polling="raf")
            page.wait_for_timeout(500)
            seen = len(RUN_LINE.findall(log.read_text()))
            for k in range(1, args.clicks + 1):
                page.wait_for_timeout(SETTLE_MS)
                t = time.perf_counter()
                page.get_by_role("button", name="next ▶").click()
                page.wait_for_function(DONE, arg=ids[k], polling="raf")
                times.append(time.perf_counter() - t)
                page.wait_for_timeout(100)  # the run's log line
                runs = RUN_LINE.findall(log.read_text())
                said, server_s = runs[seen:], sum(float(s) for _, s in runs[seen:])
                seen = len(runs)
                kinds = ", ".join(sorted({k for k, _ in said})) or "none logged"
                print(f"  next → {ids[k]:<12} {times[-1]:6.3f} s  (server {server_s:.3f} s: {kinds})", flush=True)
            counts = page.evaluate(COUNT)
            if args.screenshot:
                page.screenshot(path=str(args.screenshot), full_page=True)
            browser.close()
    finally:
        stop_server(server)
    print(f"elements drawn: {counts['elements']} Streamlit elements, {counts['nodes']} DOM nodes in the main area")
    print(f"inspector next: median {statistics.median(times):.3f} s, min {min(times):.3f} s, max {max(times):.3f} s")


if __name__ == "__main__":
    main()
