"""Pages honest about missing data (AppTest): no confidence column or chart without confidences, a
notice instead of an all-None noise table, Run disabled with its reason, the tag-filter notice, and
the Wilson intervals and small-group marks of the Overview's task types, which equal the twin's JSON.

The real scale-grid store (``../shared/realdata``) has answers only: no confidences, no repeats.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import msgspec
import pyarrow as pa
import pytest

pytest.importorskip("streamlit.testing.v1", reason="streamlit's AppTest is needed for the page tests")
from streamlit.testing.v1 import AppTest

from backend.cli import main
from backend.contracts.views import ModelMetrics
from backend.present.metrics import COMPARE_METRICS
from backend.present.tables import headline_table, task_table
from tests.page_tables import html_rows

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 180
DEMO_BASE = {"bench": "synthetic-videomme", "models": "synthetic-A-7B,synthetic-B-13B"}
REAL_BASE = {"bench": "videomme", "models": "LLaVA-NeXT-Video-7B"}

pytestmark = pytest.mark.usefixtures("app_env")


def open_page(store: Path, page: str, **params: str) -> AppTest:
    os.environ["TRAJAUDIT_STORE"] = str(store)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT_S)
    at.query_params.update(params)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


@pytest.fixture(autouse=True)
def _store_env(monkeypatch):
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    monkeypatch.setenv("TRAJAUDIT_STORE", "")  # each test names its store


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> Path:
    data = REPO.parent / "shared" / "realdata"
    wide = data / "LLaVA-NeXT-Video-7B_V1_short_predictions_wide.csv"
    if not wide.exists():
        pytest.skip(f"real data not found at {data}")
    root = tmp_path_factory.mktemp("real") / "store"
    assert main(["ingest", str(wide), "--answers", str(data / "videomme_answers.csv"), "--store", str(root)]) == 0
    return root


def test_items_on_the_real_store_have_no_confidence_column(real_store):
    at = open_page(real_store, "pages/items.py", **REAL_BASE)
    columns = list(at.dataframe[0].value.columns)
    assert "confidence" not in columns and "question" not in columns  # the release carries neither
    assert "trajectory" in columns
    assert any("No confidences in this store" in h.proto.body for h in at.get("html"))


def test_inspector_on_the_real_store_draws_no_empty_chart(real_store):
    at = open_page(real_store, "pages/inspector.py", item="001-3", **REAL_BASE)
    charts = at.get("vega_lite_chart")  # the spec's data goes to the browser as an Arrow table
    assert charts and all(pa.ipc.open_stream(c.proto.data.data).read_all().num_rows for c in charts)
    assert any("No confidence or score stored" in c.value for c in at.caption)
    assert any("Item 3 of 786" in m.value for m in at.markdown)


def test_noise_tab_without_repeats_says_so(real_store):
    at = open_page(real_store, "pages/audits.py", atab="noise", **REAL_BASE)
    assert any("No repeats in this store" in i.value for i in at.info)
    assert not at.dataframe and not at.get("vega_lite_chart")


def test_intervention_run_is_disabled_with_the_reason_without_a_registered_model(demo_store):
    at = open_page(demo_store, "pages/audits.py", atab="intervention", **DEMO_BASE)
    (button,) = [b for b in at.button if b.label.startswith("Run the intervention: ")]
    assert button.disabled and "not a registered model" in button.help
    n = int(button.label.split(": ")[1].split()[0])
    assert any(c.value.startswith(f"{n} terminal regressions at ") and "Disabled" in c.value for c in at.caption)


def test_overview_marks_tag_conditioning_and_small_task_groups(demo_store, capsys):
    at = open_page(demo_store, "pages/overview.py", tag="confused", minn="10", **DEMO_BASE)
    assert any("Conditioned on the trajectory tag" in w.value for w in at.warning)
    table = html_rows(at, "task_types")  # plain HTML (the per-config table is drawn when its expander opens)
    assert table and any("task types have fewer than 10 items" in h.value for h in at.html)
    argv = [
        "metrics",
        "--store",
        str(demo_store),
        "--benchmark",
        "synthetic-videomme",
        "--models",
        DEMO_BASE["models"],
        "--tag",
        "confused",
        "--bootstrap",
        "0",
        "--json",
    ]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["task_types"]["synthetic-A-7B"]
    twins = {r[0]: r for r in task_table(rows, "synthetic-A-7B").rows}  # the report's cells for the twin's numbers
    for row in table:
        twin = twins[row[0]]
        assert (row[2] != "") == (int(twin[1]) < 10)  # the size column: "small (< 10)" or empty
        assert [row[1], *row[3:]] == twin[1:]


@pytest.mark.slow
@pytest.mark.parametrize("page", ["pages/overview.py", "pages/compare.py"])
def test_headline_table_shows_the_cli_twins_cells(demo_store, capsys, page):
    """The Overview's and Compare's headline table (one row per model, the report's) holds the cells
    ``backend.present`` builds from its CLI twin's JSON: the same text, not only the same numbers."""
    at = open_page(demo_store, page, **DEMO_BASE)
    shown = html_rows(at, "headlines")
    argv = ["metrics", "--store", str(demo_store), "--benchmark", "synthetic-videomme", "--models", DEMO_BASE["models"],
            "--bootstrap", "1000", "--seed", "0", "--json"]  # fmt: skip  # the page's bootstrap (data.BOOTSTRAP), seed 0
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    models = msgspec.convert(out["models"], dict[str, ModelMetrics])  # the typed metrics the page reads
    twin = headline_table(models, out["n_items"], out["grid"])
    assert shown == twin.rows


def test_compare_states_the_confusion_overlap_with_what_each_number_means(demo_store, capsys):
    """Compare's overlap numbers are cards with their plain definitions on the page (not behind a tooltip), each
    as ``trajaudit compare --json`` prints it."""
    at = open_page(demo_store, "pages/compare.py", **DEMO_BASE)
    argv = ["compare", "--store", str(demo_store), "--benchmark", "synthetic-videomme", "--models", DEMO_BASE["models"],
            "--json"]  # fmt: skip
    assert main(argv) == 0
    overlap = json.loads(capsys.readouterr().out)["overlap"]
    block = next(h.value for h in at.html if "ta-cards" in h.value)
    for m in COMPARE_METRICS.values():
        card = block.split(f'data-key="{m.key}"', 1)[1].split('<div class="ta-card"', 1)[0]
        assert html.escape(m.label) in card and html.escape(m.definition) in card
        assert f'<div class="ta-value">{html.escape(m.format(overlap[m.key]))} ' in card
