"""Issue 20: the Inspector draws its frame strips from a video linked through a real Video-MME layout (the
file named by its YouTube id, the item ``001-1``, ``items.video`` only Video-MME's number ``001``).
Screenshot: ``test-artifacts/screenshots/inspector-linked-videomme.png``."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from backend.cli import main  # noqa: E402
from tests import video_layouts  # noqa: E402
from tests.browser_fixtures import goto, require_chromium, screenshot, serving  # noqa: E402

pytest_plugins = ["tests.browser_fixtures"]  # the browser and page fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def linked_server(tmp_path, monkeypatch):
    require_chromium()
    root = tmp_path / "videos"
    monkeypatch.setenv("TRAJAUDIT_VIDEO_ROOT", str(root))
    built = video_layouts.videomme(root, tmp_path / "logs")
    store = tmp_path / "store"
    for config in ("8f", "16f"):  # a page needs two configurations to compare
        argv = ["ingest", *map(str, built.samples), "--store", str(store), "--model", "m", "--config", config,
                "--sampler", "lmms-eval"]  # fmt: skip  # the log names no frames: lmms-eval's sampler reconstructs them
        assert main(argv) == 0
    link = ["videos", "link", "--benchmark", "videomme", "--dataset", str(built.dataset), "--store", str(store)]
    assert main([*link, "--no-progress"]) == 0
    with serving(store, tmp_path / "streamlit.log", {"TRAJAUDIT_VIDEO_ROOT": str(root)}) as server:
        yield server


def test_inspector_draws_strips_from_a_linked_videomme_video(linked_server, page):
    goto(page, linked_server, "inspector?bench=videomme&models=m&item=001-1")
    main_area = page.locator('[data-testid="stMain"]')
    assert "Video unavailable" not in main_area.inner_text()
    page.wait_for_function(
        """() => { const imgs = [...document.querySelectorAll('[data-testid="stMain"] img')].filter(i => i.src.includes('/media/'));
                   return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0); }"""
    )
    widths = page.eval_on_selector_all(
        '[data-testid="stMain"] img', "els => els.filter(i => i.src.includes('/media/')).map(i => i.naturalWidth)"
    )
    assert len(widths) >= 8 and min(widths) > 0  # thumbnails decoded from the .mp4 named by the YouTube id
    assert (
        "reconstructed by the lmms-eval sampler" in main_area.inner_text()
    )  # the strip says where its frames come from
    screenshot(page, "inspector-linked-videomme")
