"""Issue 35, point 4, in headless Chromium: an lmms-eval tree whose three runs logged query-adaptive frame
selections shows the Overview and the Inspector with no grid chosen (the default grid is the adaptive
ladder). Its 8f run is ingested twice, the second time as ``--run repeat``: the scope line names that cell's
runs and the one shown, and the sidebar offers the other (issue 35, point 5). Screenshots:
``/tmp/shots/adaptive-overview.png`` and ``/tmp/shots/adaptive-inspector.png``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.adaptive_tree import MODEL, write_tree
from tests.browser_fixtures import goto, screenshot, serving

pytest_plugins = ["tests.browser_fixtures"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path("/tmp/shots")
LADDER = "8f/adaptive → 16f/adaptive → 32f/adaptive"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from store.ingest import ingest_paths

    base = tmp_path_factory.mktemp("adaptive")
    store = base / "store"
    tree = write_tree(base / "out")
    ingest_paths(store, [tree], benchmark="videomme")
    ingest_paths(store, [tree / "videomme_aks_8"], benchmark="videomme", run="repeat")
    with serving(store, base / "streamlit.log") as server:
        yield server


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(screenshot(page, name), SHOTS / f"{name}.png")


def test_adaptive_only_store_shows_overview_and_inspector_without_a_chosen_grid(served, page):
    goto(page, served, f"?bench=videomme&models={MODEL}")
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Select at least two configurations" not in text
    assert f"default grid {LADDER}" in text and "6 matched items" in text
    assert f"Several runs in one cell: {MODEL} at 8f/adaptive holds runs main, repeat, showing main" in text
    assert "Pick another with the sidebar's Run choice." in text and "--run" not in text  # the page's own widget
    assert page.locator('[data-testid="stSidebar"]').get_by_text("Run (cells holding several)").count() == 1
    assert page.locator(".ta-chart svg").count() == 1  # the accuracy curve is drawn
    _shot(page, "adaptive-overview")
    goto(page, served, f"inspector?bench=videomme&models={MODEL}&item=002-1")
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Select at least two configurations" not in text
    assert all(label in text for label in ("8f/adaptive", "16f/adaptive", "32f/adaptive"))
    _shot(page, "adaptive-inspector")
