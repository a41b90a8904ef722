"""The Overview's first viewport in headless Chromium at 1440 x 900: it states the focus model's story step with
the counts ``metrics --json`` prints, and the curve, its flow bars and the headline cards are in view without
scrolling. The viewport's screenshot goes to ``test-artifacts/screenshots/story-first-viewport.png``
(git-ignored) for a look."""

from __future__ import annotations

import json

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import SCREENSHOTS, goto

pytest_plugins = ["tests.browser_fixtures"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODELS = "synthetic-A-7B,synthetic-B-13B"
FOCUS = "synthetic-B-13B"
VIEWPORT = {"width": 1440, "height": 900}


def test_the_first_viewport_states_the_story_step_with_its_counts(app_server, browser, capsys):
    from backend.cli import main

    capsys.readouterr()
    argv = ["metrics", "--store", str(app_server.store), "--benchmark", "synthetic-videomme", "--models", MODELS]
    assert main([*argv, "--bootstrap", "0", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)["story"][FOCUS]
    assert step is not None
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    try:
        goto(page, app_server, f"?bench=synthetic-videomme&models={MODELS}&model={FOCUS}")
        main_area = page.locator('[data-testid="stMain"]')
        story = main_area.locator("h3").first
        text = story.inner_text()
        assert text.startswith(f"{FOCUS} · {step['from']} → {step['to']}: net "), text
        assert f"= {step['rescued']} rescued − {step['harmed']} harmed" in text, text
        assert "of items changed state" in text
        in_view = [
            story,
            main_area.locator(".ta-chart svg"),  # the curve over its flows, one SVG drawn on the server
            main_area.locator(".ta-cards"),
        ]
        for element in in_view:
            box = element.bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], box
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOTS / "story-first-viewport.png")
    finally:
        context.close()
