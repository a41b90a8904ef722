"""The Inspector in headless Chromium (issue 33): previous/next redraw the item in a fragment, a queued
re-run's answer joins its model's line and gets a strip row, and the clip player seeks to a marked frame.

Screenshots go to ``test-artifacts/screenshots/inspector-*.png`` for a look.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import goto, screenshot, serving, wait_idle

pytest_plugins = ["tests.browser_fixtures"]  # the app_server, browser and page fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BENCH, MODELS = "synthetic-videomme", ("synthetic-A-7B", "synthetic-B-13B")
BASE = f"bench={BENCH}&models={','.join(MODELS)}"
RUN_LINE = re.compile(r"^trajaudit run: (\S+) [0-9.]+ s$", re.MULTILINE)  # pages/common/runlog.py
ITEM_BOX = '[data-testid="stMain"] input[aria-label="Item id"]'
SEEK_TOLERANCE_S = 0.02  # currentTime after a seek is the time asked for (the browser may round to its clock)


@pytest.fixture(scope="module")
def server(app_server, tmp_path_factory):
    """A second server on the browser tests' demo store that logs each script run (``TRAJAUDIT_RUN_LOG``), so a
    test can tell a fragment run (``inspector-item``) from a full one (``inspector``)."""
    log = tmp_path_factory.mktemp("inspector") / "streamlit.log"
    with serving(app_server.store, log, {"TRAJAUDIT_RUN_LOG": "1", "TRAJAUDIT_DEMO_ITEMS": "8"}) as s:
        yield s


def _walk(store) -> list[str]:
    """The filtered items in the Inspector's walk order (``pages.common.walk.ids`` without a selection)."""
    from backend.scope.items import item_order
    from backend.scope.resolve import Scope
    from backend.scope.view import open_view
    from store.store import Store

    view = open_view(Store(store), Scope(BENCH, MODELS).resolve(Store(store)))
    order = item_order(view.matrix, MODELS[0], "item", False)  # no sort in the URL: by item id, as Items lists them
    return view.matrix.items["item_id"].astype(str).iloc[order].tolist()


def _runs(server) -> tuple[int, int]:
    """(full script runs of the Inspector, runs of its item fragment) the server logged so far."""
    pages = RUN_LINE.findall(server.log.read_text())
    return pages.count("inspector"), pages.count("inspector-item")


def _drawn_item(page, want: str) -> None:
    page.wait_for_function(
        "([sel, want]) => { const b = document.querySelector(sel); return b && b.value === want; }",
        arg=[ITEM_BOX, want],
    )
    wait_idle(page)


def test_previous_and_next_redraw_the_item_without_a_full_run(server, page):
    ids = _walk(server.store)
    goto(page, server, f"inspector?{BASE}&item={ids[0]}")
    assert page.locator(ITEM_BOX).input_value() == ids[0]
    page.wait_for_timeout(500)
    full, fragment = _runs(server)
    page.get_by_role("button", name="next ▶").click()
    _drawn_item(page, ids[1])
    assert f"Item 2 of {len(ids)}" in page.locator('[data-testid="stMain"]').inner_text()
    page.get_by_role("button", name="next ▶").click()
    _drawn_item(page, ids[2])
    page.get_by_role("button", name="◀ previous").click()
    _drawn_item(page, ids[1])
    page.wait_for_timeout(500)
    after = _runs(server)
    assert after[0] == full and after[1] >= fragment + 3  # fragment runs: the sidebar and scope were not run again
    page.wait_for_function("(want) => new URLSearchParams(location.search).get('item') === want", arg=ids[1])
    assert parse_qs(urlparse(page.url).query)["models"] == [",".join(MODELS)]  # the rest of the URL kept
    screenshot(page, "inspector-walk")


def _queue_and_serve_rerun(store, item: str, config: str) -> dict:
    """Queue a re-run with the demo's model and serve it with a worker in this process (its adapter a stand-in
    that answers "B": ``tests.rerun_fixtures.FakeAdapter``), as the dashboard's queue does."""
    from backend.demo.model import DEMO_MODEL
    from backend.runtime import rerun
    from backend.runtime.worker import Worker
    from store.rerun_request import RerunRequest
    from tests.rerun_fixtures import FakeAdapter

    out = rerun.submit(store, RerunRequest(DEMO_MODEL, BENCH, item, config))
    Worker(store, DEMO_MODEL, device="cpu", lease_s=30, poll_s=0.05, adapter_factory=lambda *a: FakeAdapter()).run(
        once=True
    )
    done = rerun.wait(store, out.job_id, timeout_s=60)
    assert done.state == "done", done
    return done


def _marks(page, title: str) -> list[dict]:
    """The marks of the drawn Vega-Lite chart whose text holds ``title``, from the SVG's accessible labels
    (Vega writes each point's and each line's fields there: ``field: value; ...``), with the mark's kind."""
    labels = page.evaluate(
        """(title) => {
            const chart = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')]
                .find(c => c.textContent.includes(title));
            return chart ? [...chart.querySelectorAll('[aria-roledescription][aria-label]')]
                .map(e => [e.getAttribute('aria-roledescription'), e.getAttribute('aria-label')]) : null;
        }""",
        title,
    )
    assert labels is not None, f"no chart titled {title!r}"
    return [
        {"mark": role} | dict(kv.split(": ", 1) for kv in label.split("; ") if ": " in kv) for role, label in labels
    ]


@pytest.mark.worker  # the demo registers its model only where the worker extra built it
def test_a_queued_reruns_point_joins_its_models_line_and_its_frames_get_a_strip_row(server, page):
    ids = _walk(server.store)
    item, config = ids[3], "20f"  # a budget the grid lacks: the worker decodes it
    done = _queue_and_serve_rerun(server.store, item, config)
    goto(page, server, f"inspector?{BASE}&item={item}")
    marks = _marks(page, "per configuration (lines join budget steps only")
    (star,) = [m for m in marks if m["mark"] == "point" and m.get("kind") == "rerun"]
    assert star["series"] == done.model and star["configuration"] == config  # a point of its model's series
    assert star["run"] == done.run
    dashed = [m for m in marks if m["mark"] == "line mark" and "dash" in m]
    assert [(m["series"], m["configuration"]) for m in dashed] == [(done.model, "16f")]  # from the 16f step
    assert config in dashed[0]["dash"] and done.run in dashed[0]["dash"]
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert f"{config} · re-run" in text and f"live re-run {done.run}" in text  # its frames: a strip row, labelled
    ticks = page.frame_locator('iframe[title*="player"]').locator(f'.mark[data-row="{config} · re-run"]')
    assert ticks.count() == len(done.frame_indices) == 20  # and marks on the clip's timeline
    screenshot(page, "inspector-rerun-joined")


def test_the_player_seeks_to_a_marked_frame(server, page):
    from backend.contracts.base import unset
    from backend.scope.inspector import item_detail, locate_video
    from store.store import Store

    ids = _walk(server.store)
    goto(page, server, f"inspector?{BASE}&item={ids[0]}")
    item = item_detail(Store(server.store), BENCH, ids[0]).item
    _, info, problem = locate_video(server.store / "videos", unset(item.video), Store(server.store), BENCH, ids[0])
    assert problem is None, problem
    player = page.frame_locator('iframe[title*="player"]')
    player.locator('#chart[data-ready="1"] svg').wait_for()
    mark = player.locator('.mark[data-row="16f"]').nth(5)
    mark.scroll_into_view_if_needed()
    frame = int(mark.get_attribute("data-frame"))
    mark.click()
    page.wait_for_function(
        "(t) => { const v = document.querySelector('.st-key-player-video video'); return v && Math.abs(v.currentTime - t) < 0.02; }",
        arg=frame / info.fps,
    )
    video = page.evaluate(
        "() => { const v = document.querySelector('.st-key-player-video video'); "
        "return {t: v.currentTime, error: v.error && v.error.code, src: v.currentSrc}; }"
    )
    assert video["t"] == pytest.approx(frame / info.fps, abs=SEEK_TOLERANCE_S) and video["error"] is None
    assert "/media/" in video["src"] and "videos" not in video["src"]  # served by id: the URL names no folder
    assert player.locator("#status").inner_text().startswith(f"16f: frame #{frame} @{int(frame / info.fps)}.")
    screenshot(page, "inspector-player")


def test_an_items_cell_with_several_runs_says_which_run_it_shows(server, page):
    """The demo repeats one item's answers under seed runs: the Inspector says which run it draws and how to
    pick another (issue 35), and draws the picked one."""
    from store.store import Store

    held = Store(server.store).query(
        "SELECT item_id, config, list(DISTINCT run ORDER BY run) AS runs FROM responses WHERE benchmark = ? "
        "AND model = ? AND coalesce(origin, '') <> 'rerun' GROUP BY ALL HAVING count(DISTINCT run) > 1 "
        "ORDER BY item_id, config LIMIT 1",
        [BENCH, MODELS[0]],
    )
    assert len(held), "the demo holds seed repeats"
    item, runs = held["item_id"][0], list(held["runs"][0])
    goto(page, server, f"inspector?{BASE}&item={item}")
    notice = page.locator('[data-testid="stAlert"]').filter(has_text="several runs in one cell")
    text = notice.inner_text()
    assert f"holds runs {', '.join(runs)}, showing main" in text or "showing main" in text, text
    assert "Pick another with the sidebar's Run choice" in text and "--run" not in text  # a page names its widget
    screenshot(page, "inspector-several-runs")
    other = next(r for r in runs if r != "main")
    goto(page, server, f"inspector?{BASE}&item={item}&run={other}")
    assert f"showing {other}" in page.locator('[data-testid="stAlert"]').filter(has_text="several runs").inner_text()
