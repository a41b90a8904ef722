"""The score sections in headless Chromium, on the demo store's open-ended items (synthetic-mlvu).

The Overview's oracle gap card shows what ``metrics --json`` prints; a regressed band of the Flows
page's score section opens exactly that band's items. Screenshots go to
``test-artifacts/screenshots/scores-*.png`` (git-ignored) for a look.
"""

from __future__ import annotations

import json
import re

import pytest

from backend.present.text import count

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import goto, screenshot, wait_idle

pytest_plugins = ["tests.browser_fixtures"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODEL = "synthetic-A-7B"
BENCH = "synthetic-mlvu"
BASE = f"bench={BENCH}&models={MODEL}&model={MODEL}"
HEADER_PX = 35  # glide data grid: header and default row height
ROW_PX = 35


def cli(capsys, *argv: str) -> dict:
    from backend.cli import main

    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_overview_oracle_gap_is_the_cli_twins(app_server, page, capsys):
    goto(page, app_server, f"?{BASE}")
    section = page.get_by_role("heading", name="Scores: open-ended items")
    section.scroll_into_view_if_needed()
    wait_idle(page)
    out = cli(capsys, "metrics", "--store", str(app_server.store), "--benchmark", BENCH, "--models", MODEL, "--json")
    gap = out["models"][MODEL]["continuous"]["oracle_gap"]
    card = page.locator(".ta-card").filter(has_text="Oracle gap")
    assert card.count() == 1
    value = card.locator(".ta-value").evaluate("e => e.firstChild.textContent.trim()")  # the value, not its interval
    assert value == f"{100 * gap:.1f}", (value, gap)
    lo, hi = out["models"][MODEL]["continuous"]["ci"]["oracle_gap"]
    assert f"95% CI {100 * lo:.1f}–{100 * hi:.1f}" in card.inner_text()
    main_text = page.locator('[data-testid="stMain"]').inner_text()
    assert (
        "accuracy counts them by their stored verdict" in main_text
    )  # the scope line says where the binary view comes from
    assert page.locator(".ta-chart svg").count() == 1  # the accuracy curve over its bars, drawn on the server
    assert page.locator('[data-testid="stVegaLiteChart"]').count() == 2  # the score curve + its bars
    screenshot(page, "scores-overview")


def test_a_regressed_band_opens_its_items(app_server, page, capsys):
    out = cli(
        capsys, "flows", "--store", str(app_server.store), "--benchmark", BENCH, "--model", MODEL, "--scores", "--json"
    )
    kinds = ("improved", "regressed", "unchanged")  # the table's rows: per transition, these three in turn
    row, step = next((k * 3 + 1, t) for k, t in enumerate(out["transitions"]) if t["regressed"] > 0)
    goto(page, app_server, f"flows?{BASE}")
    grid = page.locator('[data-testid="stDataFrame"]').nth(1)  # the Sankey's flows, then the score bands'
    grid.scroll_into_view_if_needed()
    wait_idle(page)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + HEADER_PX + ROW_PX * row + ROW_PX / 2)
    heading = page.locator('[data-testid="stMain"] strong').filter(has_text=re.compile(r"regressed \(score fell\) · "))
    heading.wait_for()
    wait_idle(page)
    text = heading.inner_text()
    assert text == f"{step['from']} → {step['to']}: regressed (score fell) · {count(step['regressed'], 'item')}", (
        text,
        kinds,
    )
    band = cli(
        capsys,
        "flows",
        "--store",
        str(app_server.store),
        "--benchmark",
        BENCH,
        "--model",
        MODEL,
        "--scores",
        "--from",
        step["from"],
        "--to",
        step["to"],
        "--kind",
        "regressed",
        "--json",
    )
    assert band["n_flow_items"] == step["regressed"] and all(r["delta"] < 0 for r in band["items"])
    assert "sband=" in page.url  # the opened band is in the link
    screenshot(page, "scores-flows")


def test_compare_and_items_show_the_scores(app_server, page):
    goto(page, app_server, f"compare?bench={BENCH}&models={MODEL},synthetic-B-13B")
    assert page.get_by_role("heading", name="Oracle gaps of the open-ended items").count() == 1
    screenshot(page, "scores-compare")
    goto(page, app_server, f"items?{BASE}&sort=drop&desc=1")
    sort = page.locator('[data-testid="stButtonGroup"]').filter(has_text="Sort by")
    chosen = sort.locator('button[data-variant][aria-checked="true"]')  # the link's sort is the pill drawn chosen
    assert chosen.count() == 1 and chosen.inner_text() == "score drop", sort.inner_html()[:500]
    screenshot(page, "scores-items")


def test_a_click_on_a_regressed_band_in_the_chart_opens_its_items(app_server, page, capsys):
    out = cli(
        capsys, "flows", "--store", str(app_server.store), "--benchmark", BENCH, "--model", MODEL, "--scores", "--json"
    )
    step = next(t for t in out["transitions"] if t["regressed"] > 0)
    goto(page, app_server, f"flows?{BASE}")
    chart = page.locator('[data-testid="stVegaLiteChart"]').last  # the score bands (the Sankey is a component)
    chart.scroll_into_view_if_needed()
    wait_idle(page)
    label = f"transition: {step['from']} → {step['to']}; band: regressed;"
    mark = chart.locator(f'g.mark-rect path[aria-label*="{label}"]')  # Vega's SVG names each bar by its fields
    assert mark.count() == 1
    mark.click()
    heading = page.locator('[data-testid="stMain"] strong').filter(has_text="regressed (score fell) · ")
    heading.wait_for()
    assert (
        heading.inner_text()
        == f"{step['from']} → {step['to']}: regressed (score fell) · {count(step['regressed'], 'item')}"
    )
