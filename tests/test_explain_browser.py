"""The "Why these items?" panel in headless Chromium: on Flows for an opened flow it lists the slices
``trajaudit explain`` finds, and a slice's link opens the Inspector walking exactly that slice's items.

Screenshots: ``test-artifacts/screenshots/explain-*.png`` (git-ignored), looked at by hand.
"""

from __future__ import annotations

import re

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import goto, screenshot, wait_idle

pytest_plugins = ["tests.browser_fixtures"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODEL = "synthetic-A-7B"
BASE = f"bench=synthetic-videomme&models={MODEL}&model={MODEL}"
FLOW = ("text", "8f", "harmed")


def explained(server) -> dict:
    """The panel's numbers from the backend it draws (``trajaudit explain --json``)."""
    from backend import views
    from backend.analysis.explain import Target
    from backend.scope.filters import ItemFilter
    from backend.scope.resolve import Scope
    from backend.scope.view import open_view
    from store.store import Store

    store = Store(server.store)
    resolved = Scope(benchmark="synthetic-videomme", models=(MODEL,), grid=(), item_filter=ItemFilter()).resolve(store)
    return views.explain_view(open_view(store, resolved), MODEL, Target("flow", FLOW))


def test_flows_panel_lists_slices_and_a_slice_link_walks_exactly_its_items(app_server, page):
    out = explained(app_server)
    goto(page, app_server, f"flows?{BASE}&from={FLOW[0]}&to={FLOW[1]}&kind={FLOW[2]}")
    page.get_by_text("Why these items?", exact=False).first.click()
    page.wait_for_selector("text=One attribute")
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    text = main.inner_text()
    assert f"{out.n_selected:,} of {out.n_scope:,} items selected" in text
    assert out.slices and out.slices[0].label in text
    assert f"{out.verdict.text}." in text  # the verdict, above the chart
    assert "trajaudit explain --model" in text and "--flow text:8f:harmed" in text
    screenshot(page, "explain-flows-panel")

    first = next(s for s in out.slices if s.item_ids)
    link = main.get_by_role("link", name=f"{first.label} ({first.n_selected:,})").first
    with page.context.expect_page() as opened:
        link.click()
    inspector = opened.value
    inspector.set_default_timeout(90_000)
    wait_idle(inspector)
    shown = inspector.locator('[data-testid="stMain"]').inner_text()
    n = first.n_selected
    assert re.search(rf"Item 1 of {n:,} · {n} picked item", shown), shown[:400]
    assert inspector.locator('[data-testid="stMain"] input').first.input_value() == first.item_ids[0]
    screenshot(inspector, "explain-slice-walk")


def test_overview_panel_explains_a_tag(app_server, page):
    from backend import views
    from backend.analysis.explain import Target
    from backend.scope.filters import ItemFilter
    from backend.scope.resolve import Scope
    from backend.scope.view import open_view
    from store.store import Store

    store = Store(app_server.store)
    resolved = Scope(benchmark="synthetic-videomme", models=(MODEL,), grid=(), item_filter=ItemFilter()).resolve(store)
    out = views.explain_view(open_view(store, resolved), MODEL, Target("tag", ("text-overwrite",)))
    goto(page, app_server, f"overview?{BASE}")
    page.get_by_text("Why these items? What a trajectory tag's items have in common").click()
    page.wait_for_selector("text=One attribute")  # the sidebar sets no tag: text overwrite's, chosen inside
    wait_idle(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert f"{out.n_selected:,} of {out.n_scope:,} items selected" in text and out.slices[0].label in text
    assert "--tag text-overwrite" in text
    screenshot(page, "explain-overview-panel")
