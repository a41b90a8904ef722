"""The running dashboard in headless Chromium: pages load, filters apply, flows and items open, links restore views.

Each page's screenshot goes to ``test-artifacts/screenshots/<page>.png`` (git-ignored) for a look.
"""

from __future__ import annotations

import csv
import io
from urllib.parse import parse_qs, urlparse

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")  # imported here before pytest loads it as a plugin
from tests.browser_fixtures import goto, press_run, rerun_panel, screenshot, sidebar_popover, wait_idle

pytest_plugins = ["tests.browser_fixtures"]  # the app_server, browser and page fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = ["overview", "flows", "items", "inspector", "compare"]
PATHS = {"overview": ""} | {name: name for name in PAGES[1:]}  # the default page lives at the root URL
BASE = "bench=synthetic-videomme&models=synthetic-A-7B,synthetic-B-13B"
HEADER_PX = 35  # glide data grid: header and default row height
ROW_PX = 35
CAPTION = '[data-testid="stMain"] [data-testid="stCaptionContainer"]'


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def rerun_after(page, action, probe: str = '[data-testid="stMain"]') -> str:
    """Do ``action`` and wait for the app to rerun and redraw (``probe``'s text changes); the new text."""
    before = page.locator(probe).first.inner_text()
    action()
    page.wait_for_function(
        "([sel, old]) => { const e = document.querySelector(sel); return e && e.innerText !== old; }",
        arg=[probe, before],
    )
    wait_idle(page)
    return page.locator(probe).first.inner_text()


def click_row(page, table_index: int, row: int, row_px: int = ROW_PX) -> None:
    """Click a row's Open button (its first column) in the n-th dataframe (a canvas: click by position)."""
    grid = page.locator('[data-testid="stDataFrame"]').nth(table_index)
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + HEADER_PX + row_px * row + row_px / 2)


@pytest.mark.parametrize("name", PAGES)
def test_page_loads_without_exception(app_server, page, name):
    goto(page, app_server, f"{PATHS[name]}?{BASE}&chartn=1")  # the small demo: every chart drawn
    assert page.locator('[data-testid="stMain"] h1').first.inner_text() == name.capitalize()
    assert page.locator(".js-plotly-plot").count() == 0  # one chart library, Vega-Lite (backend/present/charts*.py)
    if name == "compare":
        assert page.locator('[data-testid="stVegaLiteChart"]').count() == 3
    if name == "overview":  # the curve and its flows, drawn on the server (backend/present/drawn.py): no Vega chunk
        assert page.locator('[data-testid="stVegaLiteChart"]').count() == 0
        chart = page.locator('[data-testid="stMain"] .ta-chart svg')
        assert chart.count() == 1 and "Stable curve, unstable items" in chart.text_content()
        assert "model: synthetic-" in chart.locator("title").first.text_content()  # a tooltip, shown on hover
    if name == "flows":  # the clickable Sankey draws its SVG in the page, in its shadow root (pages/common/sankey.py)
        chart = page.locator(".trajaudit-sankey")
        page.locator('.trajaudit-sankey[data-ready="1"] svg.sankey').wait_for()
        assert chart.locator(".sankey-link").count() > 0 and chart.locator(".sankey-node").count() > 0
    screenshot(page, name)


def test_filter_narrows_items_and_lands_in_url(app_server, page):
    goto(page, app_server, f"?{BASE}")
    before = main_text(page)
    assert "48 matched items" in before or "matched items" in before
    filters = sidebar_popover(page, "Filter items")  # the item filters are drawn only while their popover is open
    pills = filters.locator('[data-testid="stButtonGroup"]').filter(has_text="Task type")  # a value is one click
    caption = rerun_after(page, lambda: pills.locator("button[data-variant]").first.click(), CAPTION)
    page.keyboard.press("Escape")
    button = page.locator('[data-testid="stSidebar"] [data-testid="stPopoverButton"]')
    assert button.filter(has_text="Filter items: task type").count() == 1  # the closed popover says what filters
    n_after = int(caption.split("·")[1].split()[0].replace(",", ""))
    n_before = int(before.split(" matched items")[0].split("·")[-1].strip().replace(",", ""))
    assert 0 < n_after < n_before
    page.wait_for_timeout(500)
    assert parse_qs(urlparse(page.url).query).get("task"), page.url


def test_flow_list_opens_items_then_inspector_with_frames(app_server, page):
    goto(page, app_server, f"flows?{BASE}")
    # table grids: the flows, then the opened flow's items (the steps are a plain table, in points as the Overview)
    steps = page.locator('[data-testid="stMain"] .ta-table table#table-transitions')
    assert "Net (pp)" in steps.inner_text() and "text → 8f" in steps.inner_text()
    rerun_after(page, lambda: click_row(page, 0, 0))  # the first flow of the table: text -> 8f rescued
    heading = page.locator('[data-testid="stMain"] h3').first
    assert "text → 8f: rescued" in heading.inner_text() and "items" in heading.inner_text()
    screenshot(page, "flows-items")
    tables = page.locator('[data-testid="stDataFrame"]')
    assert tables.count() == 2  # the opened flow's items now come first: beside the Sankey, above the flows
    click_row(page, 0, 0)
    page.wait_for_url(lambda u: "/inspector" in u)
    page.wait_for_selector('[data-testid="stMain"] h1:has-text("Inspector")')
    wait_idle(page)
    first_item = parse_qs(urlparse(page.url).query)["item"][0]
    assert page.locator('[data-testid="stMain"] h1').first.inner_text() == "Inspector"
    assert first_item in page.locator('[data-testid="stMain"] input').first.input_value()
    imgs = page.locator(
        '[data-testid="stMain"] [data-testid="stImage"] img, [data-testid="stMain"] [data-testid="stFullScreenFrame"] img'
    )
    imgs.first.scroll_into_view_if_needed()
    page.wait_for_function(
        """() => { const imgs = [...document.querySelectorAll('[data-testid="stMain"] img')].filter(i => i.src.includes('/media/'));
                   return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0); }"""
    )
    widths = page.eval_on_selector_all(
        '[data-testid="stMain"] img', "els => els.filter(i => i.src.includes('/media/')).map(i => i.naturalWidth)"
    )
    assert len(widths) >= 8 and min(widths) > 0
    screenshot(page, "inspector-frames")


def test_download_buttons_show_their_whole_label(app_server, page):
    """Compare's buttons, the Jaccard one in a narrow column among them, read "CSV", not an ellipsis (at a
    laptop's width, where fixed column shares squashed it to "C..")."""
    page.set_viewport_size({"width": 1100, "height": 800})
    goto(page, app_server, f"compare?{BASE}")
    buttons = page.locator('[data-testid="stMain"] [data-testid="stDownloadButton"] button')
    assert buttons.count() >= 4
    for i in range(buttons.count()):
        button = buttons.nth(i)
        button.scroll_into_view_if_needed()
        assert button.inner_text().strip().endswith("CSV")
        clipped = "e => [e, ...e.querySelectorAll('*')].filter(c => c.scrollWidth > c.clientWidth + 1).length"
        assert button.evaluate(clipped) == 0, i


def test_link_with_query_params_restores_the_view(app_server, page, browser):
    view = f"flows?{BASE}&model=synthetic-B-13B&flowview=pair&from=8f&to=32f&kind=harmed"
    goto(page, app_server, view)
    text = main_text(page)
    assert "8f → 32f: harmed" in text
    # Change the state through the UI, then reopen the page's own URL in a fresh browser context.
    to = page.locator('[data-testid="stMain"] [data-testid="stButtonGroup"]').filter(has_text="To")
    text = rerun_after(page, lambda: to.locator("button[data-variant]").filter(has_text="64f").first.click(), "h3")
    assert "8f → 64f: harmed" in text
    page.wait_for_timeout(500)
    copied = page.url
    assert parse_qs(urlparse(copied).query)["to"] == ["64f"]
    other = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    try:
        other.goto(copied)
        wait_idle(other)
        assert "8f → 64f: harmed" in main_text(other)
        assert "synthetic-B-13B" in other.locator('[data-testid="stSidebar"]').inner_text()
    finally:
        other.context.close()


def test_csv_export_downloads(app_server, page):
    goto(page, app_server, f"?{BASE}")
    button = page.locator('[data-testid="stDownloadButton"] button').filter(has_text="CSV").first
    with page.expect_download() as info:
        button.click()
    rows = list(csv.DictReader(io.StringIO(info.value.path().read_text())))
    assert rows and {"model", "best_fixed", "best_fixed_lo", "best_fixed_hi"} <= set(rows[0])
    assert {r["model"] for r in rows} == {"synthetic-A-7B", "synthetic-B-13B"}


RERUN_FRAMES = 24  # a budget the demo grid does not have: the worker must really run it
RERUN_TIMEOUT_MS = 150_000  # a local CPU worker starts (imports torch, loads the tiny model), then runs


@pytest.mark.worker
def test_inspector_rerun_runs_on_a_local_worker_and_draws_the_new_point(app_server, page):
    goto(page, app_server, f"inspector?{BASE}&model=synthetic-A-7B")
    press_run(page, RERUN_FRAMES)
    # The status fragment polls the queue (queued -> running); the page redraws once the job is done.
    page.wait_for_function(
        "() => /Job \\d+ · \\S+ · (queued|running|done)/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)"
        " || /Job \\d+ done in/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)"
    )
    screenshot(page, "inspector-rerun-status")
    page.wait_for_function(
        "() => /Job \\d+ done in/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
        timeout=RERUN_TIMEOUT_MS,
    )
    wait_idle(page)
    text = main_text(page)
    assert f"{RERUN_FRAMES}f" in text and "random weights: pipeline demo" in text
    # its frames join the strips as a row, in the page the answer redrew (no reopening)
    assert f"{RERUN_FRAMES}f · re-run" in text
    # The confidence chart (Vega-Lite, drawn as SVG) names the live re-run series and its configuration.
    charts = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=\"stVegaLiteChart\"]')].map(c => c.textContent)"
    )
    confidence = [c for c in charts if "per configuration (lines join budget steps only" in c]
    assert confidence, charts
    assert "live re-run" in confidence[0] and f"{RERUN_FRAMES}f" in confidence[0]
    # Its frame strip: one thumbnail per frame the worker decoded, every image loaded.
    panel = rerun_panel(page)
    panel.locator("img").last.scroll_into_view_if_needed()
    page.wait_for_function(
        """() => { const h = [...document.querySelectorAll('h3')].find(e => e.innerText.includes('Re-run this item'));
                   const box = h && h.closest('[data-testid="stVerticalBlock"]');
                   const imgs = box ? [...box.querySelectorAll('img')].filter(i => i.src.includes('/media/')) : [];
                   return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0); }"""
    )
    assert panel.locator("img").count() >= RERUN_FRAMES
    titles = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=\"stVegaLiteChart\"]')].map(c => c.textContent)"
    )
    assert any("Phase timings" in t for t in titles) and any("Option probabilities" in t for t in titles), titles
    screenshot(page, "inspector-rerun")
    goto(page, app_server, f"workers?{BASE}")
    assert (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text="done")
        .locator('[data-testid="stMetricValue"]')
        .inner_text()
        != "0"
    )
    screenshot(page, "workers")


@pytest.mark.parametrize("tab", ["intervention", "isocompute", "noise", "crossmodel"])
def test_policies_and_audits_pages_draw(app_server, page, tab):
    if tab == "intervention":  # the Policies page once, beside the Audits page's first tab
        goto(page, app_server, f"policies?{BASE}&ladder=16f,32f,64f,128f&chartn=1")  # the small demo: every chart
        assert page.locator('[data-testid="stMain"] h1').first.inner_text() == "Policies"
        assert "Cheapest threshold matching fixed 128f" in main_text(page)
        legend = page.locator('[data-testid="stVegaLiteChart"] svg').first.text_content()
        for name in (
            "cascade (frames shared)",
            "budget predictor (levels q)",
            "fixed budgets",
            "oracle (cheapest correct)",
        ):
            assert name in legend, legend
        screenshot(page, "policies")
    goto(page, app_server, f"audits?{BASE}&atab={tab}&pix=100000&chartn=1")
    assert page.locator('[data-testid="stMain"] h1').first.inner_text() == "Audits"
    assert page.locator('[data-testid="stMain"] [data-testid="stVegaLiteChart"] svg').count() >= 1
    screenshot(page, "audits" if tab == "intervention" else f"audits-{tab}")
