"""What each page asks the browser to draw (issue 33): elements, charts, height, and what fits the first viewport.

The browser's share of every click is drawing the page's elements (``benchmarks/dashboard_browser.py``
times it); this script counts them, page by page, in real Chromium at 1440x900, against a real
``streamlit run app.py`` on a store (default: the demo store at the size the README's first start
builds, made once under ``--workdir``). Per page it prints the Streamlit element containers, the
charts (Vega-Lite, Plotly, component frames), the page height in px, how many elements start in the
first viewport, and saves a screenshot of that viewport (``<workdir>/elements-<label>/<page>.png``).

``--repo`` serves another checkout (e.g. a clone of an older commit) so one run can show before and
after on the same store.

Usage: ``python benchmarks/page_elements.py [--store PATH] [--repo PATH] [--label after] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser_fixtures import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server  # noqa: E402
from tests.browser_fixtures import REPO as SERVED

PAGES = ["overview", "flows", "items", "inspector", "compare", "policies", "audits", "workers"]
VIEWPORT = {"width": 1440, "height": 900}
SETTLE_S = 1.0  # quiet time after the script run ends: late charts and component frames finish drawing

COUNT = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const els = [...main.querySelectorAll('[data-testid="stElementContainer"]')]
    .filter(e => e.getBoundingClientRect().height > 0);
  const charts = main.querySelectorAll('[data-testid="stVegaLiteChart"], [data-testid="stPlotlyChart"], iframe').length;
  const top = main.getBoundingClientRect().top;
  return {elements: els.length, charts,
          height_px: Math.round(main.scrollHeight),
          first_viewport: els.filter(e => e.getBoundingClientRect().top - top < window.innerHeight).length,
          dom_nodes: main.querySelectorAll('*').length};
}"""
IDLE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidgetRunningIcon"]')
    && !document.querySelector('[data-testid="stSkeleton"]')
    && !!document.querySelector('[data-testid="stMain"] h1');
}"""


def demo_store(workdir: Path) -> Path:
    """The demo store at the README's default size, built once."""
    store = workdir / "demo-store"
    if not (store / "manifest.json").exists():
        from backend.demo.model import build_demo_store

        build_demo_store(store, seed=0)
    return store


def measure(url: str, shots: Path) -> dict[str, dict]:
    shots.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        for name in PAGES:
            page.goto(f"{url}/{name}")
            page.wait_for_function(IDLE, timeout=300_000)
            time.sleep(SETTLE_S)
            page.wait_for_function(IDLE, timeout=300_000)
            out[name] = page.evaluate(COUNT)
            page.screenshot(path=str(shots / f"{name}.png"))
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, help="store to serve (default: the demo store, built under --workdir)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/trajaudit-elements"))
    ap.add_argument("--repo", type=Path, default=SERVED, help="checkout to serve (default: this one)")
    ap.add_argument("--label", default="now", help="names the screenshot folder")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    store = args.store or demo_store(args.workdir)
    import tests.browser_fixtures as fixtures

    fixtures.REPO = args.repo.resolve()  # start_server runs `streamlit run app.py` in this checkout
    server = start_server(store, args.workdir / f"streamlit-{args.label}.log")
    try:
        counts = measure(server.url, args.workdir / f"elements-{args.label}")
    finally:
        stop_server(server)
    if args.json:
        print(json.dumps(counts, indent=2))
        return
    print(f"{'page':<10} {'elements':>8} {'charts':>6} {'height px':>9} {'in 1st viewport':>15} {'DOM nodes':>9}")
    for name, c in counts.items():
        print(
            f"{name:<10} {c['elements']:>8} {c['charts']:>6} {c['height_px']:>9} {c['first_viewport']:>15} {c['dom_nodes']:>9}"
        )


if __name__ == "__main__":
    main()
