"""The shareable report: deterministic, self-contained, small, escaped, and drawing exactly its JSON.

The demo store (60 items with videos) stands in for a real audit; a second store carries hostile
text (HTML and script tags, TeX and Markdown specials in model, task and question) to show every
output keeps it literal. The browser test opens the file from disk in headless Chromium with every
request refused except the file itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from backend.cli import main
from backend.contracts.catalog import parsed
from backend.present.metrics import HEADLINES
from backend.report import build, tables
from backend.report.data import report_data
from backend.scope.resolve import Scope
from store.store import Store

pytest_plugins = ["tests.browser_fixtures"]  # the session's one browser (a second sync Playwright would clash)

MODELS = ("synthetic-A-7B", "synthetic-B-13B", "synthetic-C-72B")
BENCH = "synthetic-videomme"
GENERATED = re.compile(rb'<time id="generated">[^<]*</time>')
OUR_SCRIPTS = {"embed-options", "report-figures", "charts-gz", None}  # None: the one executable script
EVIL_MODEL = 'evil<script>alert("model")</script><img src=x onerror=alert(1)>_&%$#{}~^\\|*'
EVIL_QUESTION = 'Which? </script><script>alert("q")</script><img src=x onerror=alert(2)> | *bold* _x_ 100% & $5'
EVIL_TASK = "task_&%$#{}<b>"
SCREENSHOTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "screenshots"


def demo_scope(store: Store):
    return Scope(benchmark=BENCH, models=MODELS).resolve(store)


@pytest.fixture(scope="module")
def demo_html(demo_store) -> bytes:
    store = Store(demo_store)
    return build(store, demo_scope(store), "html", gallery_items=24, seed=0)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Store:
    """Two models (one named with live HTML and TeX specials) on 12 items whose question and task type are hostile too."""
    from backend.scope.annotations import VOCABULARY, add_annotation
    from store.ingest import ingest_paths

    base = tmp_path_factory.mktemp("hostile-report")
    rows = [
        {
            "model": m,
            "benchmark": "bench",
            "item_id": f"q{i}",
            "config": c,
            "prediction": "AB"[(i * (k + 1) + j) % 2 if i % 3 else 0],
            "target": "A",
            "question": EVIL_QUESTION,
            "options": json.dumps(["A. <i>one</i>", "B. two & three"]),
            "video": "missing.mp4",
            "task_type": EVIL_TASK if i % 2 else "plain",
        }
        for i in range(12)
        for k, m in enumerate(["plain-model", EVIL_MODEL])
        for j, c in enumerate(["8f", "16f", "32f"])
    ]
    table = base / "responses.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest_paths(base / "store", [table], format="table")
    store = Store(base / "store")
    add_annotation(store, "bench", "q1", next(iter(VOCABULARY)), EVIL_QUESTION, "<b>mallory</b>", EVIL_MODEL)
    return store


def hostile_scope(store: Store):
    return Scope(benchmark="bench", models=("plain-model", EVIL_MODEL)).resolve(store)


@pytest.mark.slow
def test_same_scope_and_seed_give_the_same_bytes(demo_store, demo_html, monkeypatch):
    store = Store(demo_store)
    again = build(store, demo_scope(store), "html", gallery_items=24, seed=0)
    assert GENERATED.sub(b"", again) == GENERATED.sub(b"", demo_html)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # reproducible builds: the timestamp is fixed too
    first = build(store, demo_scope(store), "html", gallery_items=24, seed=0)
    assert first == build(store, demo_scope(store), "html", gallery_items=24, seed=0)
    assert b'<time id="generated">2023-11-14T22:13:20Z</time>' in first
    other_seed = build(store, demo_scope(store), "json", gallery_items=24, seed=1)
    assert (
        json.loads(other_seed)["overview"]
        != json.loads(build(store, demo_scope(store), "json", gallery_items=24, seed=0))["overview"]
    )


@pytest.mark.slow
def test_demo_report_with_24_gallery_items_is_self_contained_and_under_5_mb(demo_html):
    assert len(demo_html) < 5_000_000, f"{len(demo_html) / 1e6:.2f} MB"
    text = demo_html.decode()
    assert len(re.findall(r'<article class="item"', text)) == 24
    assert text.count("data:image/jpeg;base64,") >= 24 * 5  # every item has frames for every visual budget
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing to fetch: no CDN, no remote image or font
    assert "cdn.plot.ly" not in text and "@import" not in text and "url(" not in text.replace("url(#", "")
    assert text.count('id="charts-gz"') == 1  # Vega and the Sankey script inlined once


def test_json_is_exactly_what_the_html_draws_and_matches_metrics(demo_store, demo_html, capsys, monkeypatch):
    store = Store(demo_store)
    data = json.loads(build(store, demo_scope(store), "json", gallery_items=24, seed=0))
    html = demo_html.decode()
    drawn = re.findall(r'<table id="table-headlines">.*?</table>', html, flags=re.S)[0]
    rows = re.findall(r'<tr data-row="([^"]*)">(.*?)</tr>', drawn, flags=re.S)
    assert [r for r, _ in rows] == list(MODELS)
    for model, row in rows:
        cells = {k: float(v) for k, v in re.findall(r'data-key="([^"]*)" data-value="([^"]*)"', row)}
        rec = data["overview"]["models"][model]
        assert cells["best_fixed"] == rec["best_fixed"]["accuracy"]
        assert cells["visual_confusion_rate"] == rec["visual_confusion_rate"]
    figures = json.loads(
        re.search(r'<script type="application/json" id="report-figures">(.*?)</script>', html, flags=re.S)[1]
    )
    from backend.report.figures import figures as build_figures

    assert set(figures) == set(build_figures(parsed("report --format json", data)))
    assert data["gallery"][0]["frames"][0]["jpeg_base64"][0] in html
    capsys.readouterr()
    assert (
        main(["metrics", "--store", str(demo_store), "--models", ",".join(MODELS), "--benchmark", BENCH, "--json"]) == 0
    )
    metrics = json.loads(capsys.readouterr().out)
    assert data["overview"]["models"] == metrics["models"]
    assert data["overview"]["grid"] == metrics["grid"] and data["scope"]["n_items"] == metrics["n_items"]
    assert data["task_types"]["rows"] == metrics["task_types"][MODELS[0]]  # the Overview's table, Wilson intervals


def test_hostile_text_is_escaped_in_html(hostile):
    html = build(hostile, hostile_scope(hostile), "html", gallery_items=6).decode()
    scripts = re.findall(r"<script\b([^>]*)>", html, flags=re.I)
    ids = [(re.search(r'id="([^"]+)"', attrs) or [None, None])[1] for attrs in scripts]
    assert len(scripts) == 4 and set(ids) == OUR_SCRIPTS, scripts
    assert not re.search(r"<img[^>]*onerror", html, flags=re.I) and "<img src=x" not in html.lower()
    assert "evil&lt;script&gt;alert(&quot;model&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;/script&gt;&lt;script&gt;alert(&quot;q&quot;)" in html
    assert "&lt;b&gt;mallory&lt;/b&gt;" in html
    assert "Frames not shown: video &#x27;missing.mp4&#x27; not found" in html  # no video: a note, no image
    figures = re.search(r'id="report-figures">(.*?)</script>', html, flags=re.S)[1]
    names = {point["model"] for point in json.loads(figures)["fig-curve"]["data"]["values"]}
    assert "<" not in figures and any(n.startswith("evil<script>") for n in names)  # data text as data, never markup


def test_the_html_carries_its_content_security_policy_and_the_policy_admits_only_its_boot_script(hostile):
    """The policy without a browser (the browser test sees it enforced): no request of any kind, no string
    evaluation, and the one executable script is the one whose SHA-256 it names (so an injected one could not run)."""
    html = build(hostile, hostile_scope(hostile), "html", gallery_items=6).decode()
    metas = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert len(metas) == 1, metas
    text = unescape(metas[0])  # an attribute: its quotes are written as entities
    policy = dict(part.strip().split(" ", 1) for part in text.split(";"))
    assert policy["default-src"] == policy["connect-src"] == policy["form-action"] == "'none'"
    assert policy["img-src"] == "data:" and "'unsafe-eval'" not in text
    [boot] = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(boot.encode()).digest()).decode()
    assert policy["script-src"].split() == [f"'sha256-{digest}'", "blob:"]


def test_latex_and_markdown_keep_hostile_names_literal(hostile):
    tex = build(hostile, hostile_scope(hostile), "latex").decode()
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == 3
    assert tex.count(r"\begin{table}") == tex.count(r"\end{table}") == 3
    assert tex.count(r"\toprule") == tex.count(r"\midrule") == tex.count(r"\bottomrule") == 3
    unescaped_brace = re.compile(r"(?<!\\)[{}]")
    depth = 0
    for ch in unescaped_brace.findall(tex):
        depth += 1 if ch == "{" else -1
        assert depth >= 0
    assert depth == 0
    assert (
        r"evil\textless{}script\textgreater{}" in tex
        and r"\_\&\%\$\#\{\}\textasciitilde{}\textasciicircum{}\textbackslash{}" in tex
    )
    assert r"task\_\&\%\$\#\{\}\textless{}b\textgreater{}" in tex
    for body in re.findall(r"\\midrule\n(.*?)\\bottomrule", tex, flags=re.S):
        header_cols = None
        for line in body.strip().splitlines():
            cols = len(re.findall(r"(?<!\\)&", line)) + 1
            header_cols = header_cols or cols
            assert cols == header_cols and line.endswith(r"\\")
    assert re.search(r"\d+\.\d \[\d+\.\d, \d+\.\d\]", tex)  # intervals as 68.3 [61.7, 75.6]
    md = build(hostile, hostile_scope(hostile), "markdown").decode()
    for table in md.split("\n\n"):
        lines = [ln for ln in table.splitlines() if ln.startswith("|")]
        if lines:
            assert len({len(re.findall(r"(?<!\\)\|", ln)) for ln in lines}) == 1, table
    assert r"evil\<script\>" in md and not re.search(r"(?<!\\)<", md)  # no tag can open
    assert re.search(r"\| \d+\.\d \[\d+\.\d, \d+\.\d\] \|", md)


def test_cli_writes_each_format_and_refuses_bad_input_in_one_line(demo_store, tmp_path, capsys):
    base = [
        "report",
        "--store",
        str(demo_store),
        "--models",
        "synthetic-A-7B",
        "--benchmark",
        BENCH,
        "--bootstrap",
        "50",
    ]
    assert main([*base, "--format", "markdown", "--out", str(tmp_path / "t.md")]) == 0
    assert (tmp_path / "t.md").read_text().count("| synthetic-A-7B |") >= 1
    assert main([*base, "--format", "json", "--gallery", "2", "--out", str(tmp_path / "r.json")]) == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["overlap"] is None and len(data["gallery"]) == 2  # one model: no overlap section
    capsys.readouterr()
    assert main([*base, "--gallery", "-1", "--out", str(tmp_path / "x.html")]) == 2
    assert main([*base, "--out", str(tmp_path / "nowhere" / "x.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("trajaudit report: error: ") for line in err)
    assert not (tmp_path / "x.html").exists()


def test_latex_escape_makes_tex_specials_literal():
    assert tables.latex_escape("a_b & 50% {x}") == r"a\_b \& 50\% \{x\}"


def test_gallery_skips_frames_with_a_note_where_videos_are_absent(demo_store, tmp_path):
    store = Store(demo_store)
    data = report_data(store, demo_scope(store), gallery_items=3, bootstrap=0, video_root=tmp_path)
    for item in data.gallery:
        assert item.video_problem and "not found" in item.video_problem
        assert all(s.jpeg_base64 == [] and s.shown for s in item.frames)  # indices still listed


def only(url: str, asked: list[str]):
    """A route handler letting ``url`` through and refusing every other request (all recorded in ``asked``)."""

    def handle(route, request) -> None:
        asked.append(request.url)
        route.continue_() if request.url == url else route.abort()

    return handle


@pytest.mark.browser
def test_report_opens_offline_draws_every_chart_and_shows_the_metrics(
    demo_store, demo_html, hostile, tmp_path, capsys, browser
):
    files = {"demo": tmp_path / "demo.html", "hostile": tmp_path / "hostile.html"}
    files["demo"].write_bytes(demo_html)
    files["hostile"].write_bytes(build(hostile, hostile_scope(hostile), "html", gallery_items=6))
    capsys.readouterr()
    main(["metrics", "--store", str(demo_store), "--models", ",".join(MODELS), "--benchmark", BENCH, "--json"])
    metrics = json.loads(capsys.readouterr().out)
    # one Playwright per process: the session's browser (tests.browser_fixtures)
    for name, path in files.items():
        page = browser.new_page(viewport={"width": 1000, "height": 1200})
        asked, problems, dialogs = [], [], []
        page.route("**/*", only(path.as_uri(), asked))
        page.on(
            "console", lambda m, problems=problems: problems.append(m.text) if m.type in ("error", "warning") else None
        )
        page.on("pageerror", lambda exc, problems=problems: problems.append(str(exc)))
        page.on("dialog", lambda d, dialogs=dialogs: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        # the report's policy forbids string evaluation ('unsafe-eval'), so no predicate runs in the page
        page.wait_for_selector("body[data-charts]", state="attached", timeout=60_000)
        assert page.get_attribute("body", "data-charts") == "drawn", page.inner_text("#js-status")
        for fig in page.locator(".fig").all():  # Vega's SVG, or the Sankey script's
            assert fig.locator("svg").count() > 0, fig.get_attribute("id")
        page.wait_for_timeout(500)
        assert asked == [path.as_uri()] and problems == [] and dialogs == []
        assert page.locator("img[src='x']").count() == 0
        policy = page.get_attribute("meta[http-equiv='Content-Security-Policy']", "content")
        assert "'unsafe-eval'" not in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"report-{name}.png"), full_page=False)
        if name == "demo":
            shown = page.eval_on_selector_all(
                "#table-headlines td[data-key]",
                "cells => cells.map(c => [c.closest('tr').dataset.row, c.dataset.key, c.dataset.value])",
            )
            for model, key, value in shown:
                rec = metrics["models"][model]
                want = rec["best_fixed"]["accuracy"] if key == "best_fixed" else rec[key]
                assert float(value) == pytest.approx(want, abs=0), (model, key)
            # every headline carries its interval (text is in the demo grid): one bracket each
            assert page.locator("#table-headlines").inner_text().count("[") == len(HEADLINES) * len(MODELS)
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_overview_download_button_gives_the_same_bytes_as_the_cli(tmp_path, monkeypatch, browser):
    """The button builds with the CLI's function: the file it serves equals ``trajaudit report`` run with the
    command line printed inside it (both with ``SOURCE_DATE_EPOCH``, so even the timestamp agrees)."""
    from tests.browser_fixtures import build_small_demo, screenshot, serving, wait_idle

    epoch = "1700000000"
    store = build_small_demo(tmp_path / "store")
    with serving(store, tmp_path / "streamlit.log", {"SOURCE_DATE_EPOCH": epoch}) as server:
        # one Playwright per process: the session's browser (tests.browser_fixtures)
        page = browser.new_page(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
        page.set_default_timeout(120_000)
        page.goto(f"{server.url}/overview")
        wait_idle(page)
        button = page.get_by_role("button", name="Download report")
        button.scroll_into_view_if_needed()
        screenshot(page, "overview-download-report")
        with page.expect_download(timeout=120_000) as download:
            button.click()
        served = Path(download.value.path()).read_bytes()
        page.close()
    command = re.search(r'<p class="muted">This file:</p><code class="cmd">(.*?)</code>', served.decode())[1]
    argv = shlex.split(unescape(command))
    assert argv[:2] == ["trajaudit", "report"]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    assert main([*argv[1:], "--out", str(tmp_path / "cli.html")]) == 0
    assert (tmp_path / "cli.html").read_bytes() == served


def test_a_one_configuration_store_is_reported_with_a_notice_where_the_flows_would_be(tmp_path, capsys):
    """Issue 34: ``report`` refused a store of one configuration ("flows need at least two configurations");
    it reports what it can (headline numbers, task types) and says why there are no flows."""
    rows = pd.DataFrame(
        {"model": "m1", "benchmark": "b", "item_id": [f"q{k}" for k in range(20)], "config": "8f", "correct": 1}
    )
    (tmp_path / "in").mkdir()
    rows.to_csv(tmp_path / "in" / "one.csv", index=False)
    store = str(tmp_path / "store")
    assert main(["ingest", str(tmp_path / "in" / "one.csv"), "--store", store]) == 0
    html, data = tmp_path / "r.html", tmp_path / "r.json"
    assert main(["report", "--store", store, "--models", "m1", "--out", str(html)]) == 0
    assert "Flows need two configurations: this scope has only 8f" in html.read_text()
    assert main(["report", "--store", store, "--models", "m1", "--format", "json", "--out", str(data)]) == 0
    report = json.loads(data.read_text())
    assert report["flows"] is None and report["overview"]["n_items"] == 20
    assert report["overview"]["models"]["m1"]["accuracy"]["8f"] == 1.0


def test_a_page_draws_a_table_in_the_reports_markup():
    """``table_html`` (the Overview's headline and task-type tables) is the report's ``table`` macro: data text
    escaped, each interval under its value, the model's colour chip, the number as ``data-value``."""
    from backend.present.tables import Table
    from backend.report.html import table_html

    t = Table("headlines", "a <caption>", ["Model", "Oracle"], [['m<b>"1', "79.9 [79.4, 80.4]"]], [[None, 0.799]],
              [None, "oracle"])  # fmt: skip
    out = table_html(t, {'m<b>"1': "#3b6fb6"})
    assert "<b>" not in out and "a &lt;caption&gt;" in out
    assert '<span class="chip" style="background:#3b6fb6"></span>m&lt;b&gt;&quot;1</th>' in out
    assert '<td data-key="oracle" data-value="0.799">79.9<span class="ci">[79.4, 80.4]</span></td>' in out
