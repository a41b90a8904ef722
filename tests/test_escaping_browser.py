"""Ingested and user-written text reaches the browser as text, and a link cannot point the server elsewhere.

A store whose model name and annotation carry live HTML (a fixed-position overlay, an iframe, an
image) and whose option carries a Markdown image is served by the real ``streamlit run app.py``;
headless Chromium must show all of it literally and never request those URLs. Links with
``?store=`` / ``?vroot=`` must leave the server on its configured store and video root.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode, urlparse

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import screenshot, serving, sidebar_popover, wait_idle

pytest_plugins = ["tests.browser_fixtures"]  # the browser and page fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ATTACKER = "attacker.invalid"
OVERLAY = '<div style="position:fixed;top:0;left:0;width:100%;height:100%;background:red">OVERLAY</div>'
EVIL_MODEL = f'evil{OVERLAY}<iframe src="http://{ATTACKER}/frame"></iframe><img src=x>'
EVIL_NOTE = f'note {OVERLAY}<iframe src="http://{ATTACKER}/note"></iframe><img src=x> ![n](http://{ATTACKER}/note.png)'
EVIL_AUTHOR = f'<img src="http://{ATTACKER}/author.png">mallory'
EVIL_OPTION = f"C. ![pixel](http://{ATTACKER}/pixel.png)"
OPTIONS = ["A. Red.", "B. Green.", EVIL_OPTION, "D. Blue."]
MODELS = ["plain-model", EVIL_MODEL]
CONFIGS = ["8f", "16f", "32f"]
VIDEO = "clips/q1.mp4"
WORD_JOINER = "\u2060"  # pages.common.ui.escape_md puts it where GFM would autolink a URL


def _rows() -> list[dict]:
    return [
        {
            "model": m,
            "benchmark": "bench",
            "item_id": f"q{i}",
            "config": c,
            "prediction": "AB"[(i + k) % 2],
            "target": "A",
            "question": f"What colour is screen {i}?",
            "options": json.dumps(OPTIONS),
            "video": VIDEO if i == 1 else None,
            "task_type": "colour",
        }
        for i in range(1, 7)
        for k, m in enumerate(MODELS)
        for c in CONFIGS
    ]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A served store holding hostile text; ``elsewhere`` holds the item's video, outside the video root."""
    from backend.scope.annotations import VOCABULARY, add_annotation
    from store.ingest import ingest_paths
    from store.store import Store
    from tests.rerun_fixtures import write_video

    base = tmp_path_factory.mktemp("hostile")
    table = base / "responses.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    ingest_paths(base / "store", [table], format="table")
    add_annotation(Store(base / "store"), "bench", "q1", next(iter(VOCABULARY)), EVIL_NOTE, EVIL_AUTHOR, EVIL_MODEL)
    (base / "videos").mkdir()
    write_video(base / "elsewhere" / VIDEO)
    with serving(base / "store", base / "streamlit.log", {"TRAJAUDIT_VIDEO_ROOT": str(base / "videos")}) as server:
        yield server, base


def _open(page, server, path: str, **params: str) -> list[str]:
    """Open ``path`` with the query ``params``; the URLs the page requested."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{server.url}/{path}?{urlencode(params)}")
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    return requests


def test_hostile_text_is_shown_as_text_and_loads_nothing(hostile, page):
    server, _ = hostile
    requests = _open(page, server, "inspector", bench="bench", models=",".join(MODELS), model=EVIL_MODEL, item="q1")
    page.get_by_text("Annotations", exact=True).scroll_into_view_if_needed()
    page.wait_for_timeout(1500)  # give any injected element time to fetch
    main = page.locator('[data-testid="stMain"]').inner_text().replace(WORD_JOINER, "")
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert EVIL_OPTION in main
    assert EVIL_NOTE in main and EVIL_AUTHOR in main
    assert f"about {EVIL_MODEL}" in main
    assert EVIL_MODEL in sidebar  # the model picker's chip
    assert page.locator("iframe").count() == 0
    assert ATTACKER not in page.eval_on_selector_all(
        "a[href]", "els => els.map(e => new URL(e.href).hostname)"
    )  # no link
    assert page.locator('img[src="x"]').count() == 0
    assert page.get_by_text("OVERLAY", exact=True).count() == 0  # never an element of its own
    fetched = [u for u in requests if urlparse(u).hostname == ATTACKER or urlparse(u).path.endswith("/x")]
    assert not fetched, fetched
    screenshot(page, "inspector-hostile-text")


def test_link_cannot_move_the_store_or_the_video_root(hostile, page):
    server, base = hostile
    other, elsewhere = base / "other-store", base / "elsewhere"
    _open(page, server, "inspector", bench="bench", models=MODELS[0], item="q1", store=str(other), vroot=str(elsewhere))
    main = page.locator('[data-testid="stMain"]').inner_text()
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    options = sidebar_popover(page, "Options").inner_text()  # where the sidebar names the store
    assert page.locator('[data-testid="stMain"] h1').first.inner_text() == "Inspector"
    assert (
        str(server.store) in options
        and "store= parameter is ignored" in sidebar
        and "vroot= parameter is ignored" in sidebar
    )
    assert "Video unavailable" in main and str(base / "videos") in main and str(elsewhere) not in main
    assert page.locator('[data-testid="stImage"]').count() == 0  # no frame decoded from the other folder
    assert not other.exists()  # no demo store built, nothing half-built there


@pytest.mark.parametrize(("path", "extra"), [("compare", {}), ("audits", {"atab": "crossmodel"})])
def test_a_hostile_model_name_on_cards_and_tables_is_text(hostile, page, path, extra):
    """Compare's headline table and overlap cards, and the cross-model audit's cards (each labelled with a model's
    name), show a model name carrying HTML as text and load nothing from it."""
    server, _ = hostile
    requests = _open(page, server, path, bench="bench", models=",".join(MODELS), model=EVIL_MODEL, **extra)
    page.wait_for_timeout(1500)  # give any injected element time to fetch
    main = page.locator('[data-testid="stMain"]').inner_text().replace(WORD_JOINER, "")
    assert EVIL_MODEL in main
    assert page.locator(".ta-cards").count() >= 1  # the cards were drawn
    assert page.locator("iframe").count() == 0 and page.locator('img[src="x"]').count() == 0
    assert page.get_by_text("OVERLAY", exact=True).count() == 0
    fetched = [u for u in requests if urlparse(u).hostname == ATTACKER or urlparse(u).path.endswith("/x")]
    assert not fetched, fetched
