"""The researcher's path in headless Chromium: click a Sankey link, walk its items, re-run them together.

Screenshots go to ``test-artifacts/screenshots/clickthrough-*.png`` (git-ignored) for a look.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from backend.present.text import count as counted

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import SCREENSHOTS, goto, screenshot, wait_idle

pytest_plugins = ["tests.browser_fixtures"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODEL = "synthetic-A-7B"  # the demo's focus model, registered with random weights for re-runs
BASE = f"bench=synthetic-videomme&models={MODEL}&model={MODEL}"
RERUN_FRAMES = 2
RERUN_TIMEOUT_MS = 300_000  # a CPU worker loads the tiny model, then answers each item


def flow_view(server, kind: str | None = None, pair: tuple[str, str] | None = None) -> dict:
    """The Flows page's numbers, from the backend its table is drawn from (``trajaudit flows --json``)."""
    from backend import views
    from backend.contracts.base import to_json
    from backend.scope.filters import ItemFilter
    from backend.scope.resolve import Scope
    from backend.scope.view import open_view
    from store.store import Store

    store = Store(server.store)
    resolved = Scope(benchmark="synthetic-videomme", models=(MODEL,), grid=(), item_filter=ItemFilter()).resolve(store)
    return to_json(views.flows_view(open_view(store, resolved), MODEL, pair, kind, limit=None))  # as printed


def sankey_chart(page):
    """The Flows Sankey once drawn (``backend/report/static/sankey/sankey.js``, in its shadow root: locators reach into it)."""
    chart = page.locator(".trajaudit-sankey")
    page.locator('.trajaudit-sankey[data-ready="1"] svg.sankey').wait_for()
    return chart


def click_link(page, chart, index: int) -> None:
    """Click the index-th drawn Sankey link at a point inside its ribbon (a quarter along its top edge, 3 px in)."""
    link = chart.locator(".sankey-link").nth(index)
    link.scroll_into_view_if_needed()
    x, y = link.evaluate(
        "e => { const p = e.getPointAtLength(e.getTotalLength() * 0.25); "
        "const m = e.getScreenCTM(); return [p.x * m.a + m.e, p.y * m.d + m.f]; }"
    )
    before = page.locator('[data-testid="stMain"]').inner_text()
    page.mouse.move(x, y + 3)
    page.mouse.click(x, y + 3)
    page.wait_for_function("old => document.querySelector('[data-testid=\"stMain\"]').innerText !== old", arg=before)
    wait_idle(page)


def heading_count(page) -> tuple[str, int]:
    text = page.locator('[data-testid="stMain"] h3').first.inner_text()
    m = re.search(r"^(.*) · ([\d,]+) items", text)
    assert m, text
    return m.group(1), int(m.group(2).replace(",", ""))


def in_view(page, locator) -> bool:
    """Whether ``locator``'s element lies wholly inside the window, as scrolled now (no scrolling to it)."""
    box, size = locator.bounding_box(), page.viewport_size
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and (box["x"] + box["width"] <= size["width"] and box["y"] + box["height"] <= size["height"])
    )


def selected(chart) -> str:
    """The Sankey's outlined shape as the component names it ("link:3", "node:5"; "" for none)."""
    return chart.get_attribute("data-selected")


def test_clicking_a_sankey_link_lists_that_flows_items(app_server, page):
    """A laptop-sized window: the clicked link's items are listed beside the chart, in view without scrolling,
    and the link stays outlined through a rerun of the whole page and in a copied link."""
    page.set_viewport_size({"width": 1440, "height": 900})
    goto(page, app_server, f"flows?{BASE}")
    view = flow_view(app_server)
    drawn = [lk for lk in view["links"] if lk["count"] > 0]
    target = max(range(len(drawn)), key=lambda k: (drawn[k]["kind"] == "harmed", drawn[k]["count"]))
    chart = sankey_chart(page)
    assert selected(chart) == ""
    click_link(page, chart, target)
    title, count = heading_count(page)
    lk = drawn[target]
    assert title.startswith(f"{lk['from']} → {lk['to']}"), (title, lk)
    assert count == lk["count"]  # the flow table's row of this link
    assert f"kind={lk['kind']}" in page.url and f"from={lk['from']}" in page.url
    main = page.locator('[data-testid="stMain"]')
    assert main.evaluate("e => e.scrollTop") == 0  # nothing scrolled: the list came where the user looks
    heading = main.locator("h3").first
    items = main.locator('[data-testid="stDataFrame"]').first  # beside the chart, before the flow table
    assert in_view(page, heading) and in_view(page, items), (heading.bounding_box(), items.bounding_box())
    assert lk["count"] <= 4 or items.bounding_box()["height"] > 4 * 35  # several rows shown, not a sliver
    csv = main.locator('[data-testid="stDownloadButton"] button').first  # the list's, in the narrow column
    assert in_view(page, csv) and csv.inner_text().strip().endswith("CSV")
    assert (
        csv.evaluate("e => [e, ...e.querySelectorAll('*')].filter(c => c.scrollWidth > c.clientWidth + 1).length") == 0
    )
    assert selected(chart) == f"link:{target}"
    assert "selected" in chart.locator(".sankey-link").nth(target).get_attribute("class")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "clickthrough-flows-link-view.png"))  # the window as the user sees it
    screenshot(page, "clickthrough-flows-link")
    page.locator("body").press("r")  # Streamlit's rerun key: the whole page runs again
    wait_idle(page)
    assert selected(sankey_chart(page)) == f"link:{target}"
    copied = page.url
    goto(page, app_server, copied.split("/", 3)[3])  # a new session on the copied link
    assert selected(sankey_chart(page)) == f"link:{target}"


def test_clicking_a_node_lists_the_items_in_that_state(app_server, page):
    goto(page, app_server, f"flows?{BASE}")
    chart = sankey_chart(page)
    before = page.locator('[data-testid="stMain"]').inner_text()
    chart.locator(".sankey-node").nth(3).locator("rect").first.click(force=True)  # 8f ✗
    page.wait_for_function("old => document.querySelector('[data-testid=\"stMain\"]').innerText !== old", arg=before)
    wait_idle(page)
    title, count = heading_count(page)
    node = flow_view(app_server)["nodes"][3]
    assert title == f"{node['state']} at {node['config']}" and count == node["count"]
    assert selected(chart) == "node:3"
    screenshot(page, "clickthrough-flows-node")


def test_inspector_walks_a_flow_and_stops_at_its_last_item(app_server, page):
    items = flow_view(app_server, "harmed", ("text", "8f"))["items"]
    ids = [r["item_id"] for r in items]
    assert len(ids) >= 2
    goto(page, app_server, f"flows?{BASE}&from=text&to=8f&kind=harmed")
    page.get_by_role("button", name=re.compile(r"Walk these \d+ in the Inspector")).click()
    page.wait_for_url(lambda u: "/inspector" in u)
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    assert f"Item 1 of {len(ids)} · text → 8f harmed" in main.inner_text()
    page.get_by_role("button", name="next ▶").click()
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText.includes('Item 2 of')")
    wait_idle(page)
    assert page.locator('[data-testid="stMain"] input').first.input_value() == ids[1]
    assert "walk=flow" in page.url  # the walk travels with a copied link
    goto(page, app_server, f"inspector?{BASE}&walk=flow,text,8f,harmed&item={ids[-1]}")
    assert f"Item {len(ids)} of {len(ids)} · text → 8f harmed" in main.inner_text()
    assert page.get_by_role("button", name="next ▶").is_disabled()
    assert not page.get_by_role("button", name="◀ previous").is_disabled()
    screenshot(page, "clickthrough-inspector-walk")


@pytest.mark.worker
def test_a_flows_items_rerun_together_and_compare(app_server, page):
    view = flow_view(app_server)
    small = min((lk for lk in view["links"] if lk["kind"] == "harmed" and lk["count"] > 0), key=lambda lk: lk["count"])
    goto(page, app_server, f"flows?{BASE}&from={small['from']}&to={small['to']}&kind=harmed")
    panel = page.locator('[data-testid="stVerticalBlock"]').filter(has=page.locator("h3", has_text="Re-run ")).last
    frames = panel.locator('[data-testid="stNumberInput"]').filter(has_text="Frames").locator("input")
    frames.scroll_into_view_if_needed()
    frames.fill(str(RERUN_FRAMES))
    frames.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name=re.compile(rf"^Re-run {small['count']} items?$")).click()
    page.wait_for_function(
        "() => /Of the \\d+ items? /.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
        timeout=RERUN_TIMEOUT_MS,
    )
    wait_idle(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert f"Of the {counted(small['count'], 'item')} ({small['from']} → {small['to']} harmed)" in text
    assert f"Correct under {RERUN_FRAMES}f" in text and "McNemar p" in text
    assert page.locator('[data-testid="stException"]').count() == 0  # its CLI twin and the page's are two
    screenshot(page, "clickthrough-flows-rerun")


def test_overview_opens_at_its_own_path_and_jobs_link_their_items(app_server, page):
    goto(page, app_server, f"overview?{BASE}")
    assert "Page not found" not in page.locator("body").inner_text()
    assert page.locator('[data-testid="stMain"] h1').first.inner_text() == "Overview"
    goto(page, app_server, f"?{BASE}")  # the bare URL lands on /overview
    page.wait_for_url(lambda u: "/overview" in u)


def test_picked_item_rows_are_walked_in_the_inspector(app_server, page):
    goto(page, app_server, f"items?{BASE}&pick=1")
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    row_px = 35
    # tick two rows' checkboxes (the grid is a canvas: by position); the walk button names how many are
    # picked. On a busy machine the canvas can miss a click made while it is still drawing, so a click whose
    # count did not arrive is made once more (the count tells a missed click from a late one).
    for n, row in enumerate((0, 2), start=1):
        want = "the picked item" if n == 1 else f"the {n} picked items"
        button = page.get_by_role("button", name=f"Walk {want} in the Inspector")
        for _ in range(2):
            page.mouse.click(box["x"] + 18, box["y"] + row_px + row_px * row + row_px / 2)
            try:
                button.wait_for(timeout=20_000)
                break
            except PlaywrightTimeout:
                wait_idle(page)
        wait_idle(page)
    screenshot(page, "clickthrough-items-picked")
    page.get_by_role("button", name="Walk the 2 picked items in the Inspector").click()
    page.wait_for_url(lambda u: "/inspector" in u)
    wait_idle(page)
    assert "Item 1 of 2 · 2 picked items" in page.locator('[data-testid="stMain"]').inner_text()
    screenshot(page, "clickthrough-inspector-picked")


def test_walk_opens_the_inspector_at_its_title(app_server, page):
    """From far down Flows, "Walk these N" opened the Inspector scrolled past its title on a laptop-sized
    window (the browser kept Flows' offset): a page switch now opens at the top (``ui.scroll_to_top``). The
    button now sits beside the Sankey, so the page is scrolled down by hand before it is clicked."""
    page.set_viewport_size({"width": 1280, "height": 720})
    # the sidebar's default models: a long Flows page (Sankey, score section) above a flow of 16 items
    goto(page, app_server, "flows?bench=synthetic-videomme&flowview=pair&from=16f&to=64f&kind=rescued")
    button = page.get_by_role("button", name=re.compile(r"^Walk th"))
    scroll = "() => document.querySelector('[data-testid=\"stMain\"]').scrollTop"
    page.locator('[data-testid="stMain"]').evaluate("e => e.scrollTo(0, 600)")  # read down to the tables
    assert page.evaluate(scroll) > 300
    button.dispatch_event("click")  # the button beside the Sankey, clicked without scrolling back to it
    page.wait_for_url(lambda u: "/inspector" in u)
    page.wait_for_selector('[data-testid="stMain"] h1:has-text("Inspector")')
    wait_idle(page)
    page.wait_for_timeout(1000)  # late layout (charts, thumbnails) must not move it either
    assert page.evaluate(scroll) == 0
    assert page.locator('[data-testid="stMain"] h1').first.bounding_box()["y"] >= 0


def test_items_sort_and_page_turn_rerun_the_table_and_land_in_the_url(app_server, page):
    """The Items table reruns alone (a fragment, ``pages/common/part.py``): its sort and page still reach the URL,
    which the entry point writes only on whole-page runs."""
    goto(page, app_server, f"items?{BASE}&size=25")
    main = page.locator('[data-testid="stMain"]')
    assert "page 1 of 2" in main.inner_text()
    page.locator('[data-testid="stButtonGroup"]').filter(has_text="Sort by").locator("button[data-variant]").filter(
        has_text="changes"
    ).click()  # one click: the sort keys are pills
    page.wait_for_function("() => location.search.includes('sort=changes')")  # written by the table's own run
    wait_idle(page)
    assert "desc=1" in page.url  # "changes" sorts most first
    before = main.inner_text()
    page.locator('[data-testid="stPaginationNext"]').first.click()
    page.wait_for_function("old => document.querySelector('[data-testid=\"stMain\"]').innerText !== old", arg=before)
    wait_idle(page)
    assert "page 2 of 2" in main.inner_text()
    page.wait_for_function("() => location.search.includes('page=2')")
    screenshot(page, "clickthrough-items-page-2")
