"""The Inspector's texts side by side in real Chromium (issue 22.2), and an open page following a write
(issue 24.3).

One served store: the small demo (its open-ended items) plus a benchmark whose open-ended answers carry
live HTML and Markdown. The texts must show with the diff marks the backend computed, the hostile answers
as text (no script runs, nothing is fetched), and a row ingested from outside while the page is open must
appear without a reload (``pages.common.live``: the server is told to check every second).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import SCREENSHOTS, build_small_demo, screenshot, serving, wait_idle

pytest_plugins = ["tests.browser_fixtures"]  # the browser and page fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ATTACKER = "attacker.invalid"
SCRIPT = "<script>window.__pwned = 1</script>"
ANSWERS = {  # config -> (answer, score): HTML, a Markdown link and an image around reference words
    "8f": (f"{SCRIPT} red **ball** [x](http://{ATTACKER}/x)", 0.4),
    "16f": (f'red ball rolls <img src="http://{ATTACKER}/i.png">', 0.75),
}
REFERENCE = "red ball rolls away"


def _write(base: Path, store: Path, answers: dict[str, tuple[str, float]], name: str) -> None:
    """Ingest open-ended answers to the item ``h1`` of the benchmark ``hostile`` (a table file, as a user would)."""
    from store.ingest import ingest_paths

    rows = [
        {
            "model": "plain-model",
            "benchmark": "hostile",
            "item_id": "h1",
            "config": config,
            "prediction": text,
            "target": REFERENCE,
            "question": "What happens to the ball?",
            "score": score,
            "correct": int(score >= 0.5),
        }
        for config, (text, score) in answers.items()
    ]
    table = base / f"{name}.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest_paths(store, [table], format="table")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("texts")
    store = build_small_demo(base / "store")
    _write(base, store, ANSWERS, "hostile")
    with serving(store, base / "streamlit.log", {"TRAJAUDIT_LIVE_POLL_S": "1"}) as server:
        yield server, base


def _open(page, server, **params: str) -> list[str]:
    """The Inspector with the query ``params``, drawn; the URLs the page requested."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{server.url}/inspector?{urlencode(params)}")
    wait_idle(page)
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()
    page.locator("table.ta-texts").scroll_into_view_if_needed()
    return requests


def _rows(page) -> list[str]:
    return page.locator("table.ta-texts tbody tr").all_inner_texts()


def test_inspector_shows_the_texts_with_the_diff(served, page):
    from backend import views
    from backend.scope.inspector import item_detail
    from store.store import Store

    server, _ = served
    store = Store(server.store)
    item = store.query("SELECT benchmark, item_id FROM items WHERE answer_type = 'open' ORDER BY item_id LIMIT 1")
    bench, item_id = item.benchmark[0], item.item_id[0]
    texts = views.texts_view(item_detail(store, bench, item_id))
    assert texts is not None
    _open(page, server, bench=bench, item=item_id)
    assert page.get_by_text("Texts side by side").count() == 1
    rows = _rows(page)
    assert len(rows) == len(texts.rows)  # every model is shown by default
    first = texts.rows[0]
    assert first.config in rows[0] and f"{first.score:.2f}" in rows[0]
    marked = sum(w.state == "matched" for r in texts.rows for w in r.diff.answer_words)
    assert page.locator("table.ta-texts span.hit").count() == marked > 0
    n_best = sum(r.rank == "best" for r in texts.rows)
    assert page.locator("table.ta-texts .mark").filter(has_text="best").count() == n_best > 0
    screenshot(page, "inspector-texts")
    page.locator("table.ta-texts").screenshot(path=str(SCREENSHOTS / "inspector-texts-table.png"))


def test_hostile_answers_show_as_text_and_load_nothing(served, page):
    server, _ = served
    requests = _open(page, server, bench="hostile", models="plain-model", model="plain-model", item="h1")
    page.wait_for_timeout(1000)  # give any injected element time to run or fetch
    table = page.locator("table.ta-texts").inner_text()
    assert SCRIPT in table and "**ball**" in table and f"[x](http://{ATTACKER}/x)" in table
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("table.ta-texts img, table.ta-texts script, table.ta-texts a").count() == 0
    assert not [u for u in requests if ATTACKER in u]
    assert page.locator("table.ta-texts .mark").filter(has_text="best").inner_text() == "★ best"


def test_a_write_from_outside_shows_without_a_reload(served, page):
    server, base = served
    _open(page, server, bench="hostile", models="plain-model", model="plain-model", item="h1")
    assert len(_rows(page)) == 2
    page.evaluate("() => { window.__same_page = 1; }")  # a reload or a navigation would drop it
    _write(base, server.store, {"32f": ("red ball rolls away", 1.0)}, "later")
    page.wait_for_function("() => document.querySelectorAll('table.ta-texts tbody tr').length === 3", timeout=30_000)
    wait_idle(page)
    assert page.evaluate("() => window.__same_page") == 1
    assert "/inspector?" in page.url and "item=h1" in page.url  # the server's rerun kept the page and its query
    rows = _rows(page)
    assert "32f" in rows[2] and "1.00" in rows[2] and "best" in rows[2]
    screenshot(page, "inspector-after-write")
