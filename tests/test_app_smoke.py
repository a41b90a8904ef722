"""Every page renders on a small demo store, without a browser (Streamlit's AppTest), and the state round-trips."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1", reason="streamlit's AppTest is needed for the page smoke tests")
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block

from backend.cli import main
from backend.present.metrics import METRICS
from pages.common import state
from store.store import Store

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 180
PAGES = {
    "pages/overview.py": "Overview",
    "pages/flows.py": "Flows",
    "pages/items.py": "Items",
    "pages/inspector.py": "Inspector",
    "pages/compare.py": "Compare",
}
MODELS = "synthetic-A-7B,synthetic-B-13B"


pytestmark = pytest.mark.usefixtures("app_env")


@pytest.fixture(scope="module")
def demo(demo_store) -> Path:
    return demo_store


@pytest.fixture(autouse=True)
def launch_store(demo, monkeypatch):
    """The server's store comes from its launch (here $TRAJAUDIT_STORE), never from the link."""
    monkeypatch.setenv("TRAJAUDIT_STORE", str(demo))
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)


def open_app(page: str = "pages/overview.py", **params: str) -> AppTest:
    """Run the app as a link with ``params`` would open it, then go to ``page``."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT_S)
    at.query_params.update({"bench": "synthetic-videomme", **params})
    at.run()
    if page != "pages/overview.py":
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", list(PAGES))
def test_each_page_renders(demo, page):
    at = open_app(page, models=MODELS)
    assert at.title[0].value == PAGES[page]
    assert not at.error, [e.value for e in at.error]
    main_text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "synthetic-videomme" in main_text or page == "pages/inspector.py"


def overview_cards(at: AppTest) -> dict[str, tuple[str, str]]:
    """The Overview's headline cards (one HTML block): per metric key, its label and the value line."""
    html = next(h.value for h in at.html if "ta-cards" in h.value)
    return {
        key: (label, value)
        for key, label, value in re.findall(
            r'data-key="(\w+)"><div class="ta-label">([^<]*)</div><div class="ta-value">(.*?)</div>', html
        )
    }


def test_overview_headlines_are_percentages_with_intervals_and_definitions(demo):
    at = open_app(models=MODELS)
    cards = overview_cards(at)
    assert {label for label, _ in cards.values()} >= {"Oracle", "Oracle headroom", "Visual confusion", "Text overwrite"}
    best = cards["best_fixed"][0]
    assert best.startswith("Best fixed (") and best.endswith("f)")  # with its config
    for _, value in cards.values():
        assert re.match(r"\d+\.\d% <span class=\"ta-ci\">95% CI \d+\.\d–\d+\.\d</span>", value), value
    html = next(h.value for h in at.html if "ta-cards" in h.value)
    assert all(html.count(METRICS[k].definition) == 1 for k in cards)  # each one's plain words, shown


def test_text_overwrite_is_na_without_text(demo):
    at = open_app(models=MODELS, grid="8f,16f,32f")
    assert overview_cards(at)["text_overwrite_rate"][1].startswith("—")


def test_link_reopens_flow_view(demo):
    at = open_app(
        "pages/flows.py",
        models=MODELS,
        model="synthetic-B-13B",
        flowview="pair",
        **{"from": "8f", "to": "32f", "kind": "harmed"},
    )
    assert at.sidebar.button_group(key="w_model").value == "synthetic-B-13B"
    assert at.button_group(key="w_from").value == "8f" and at.button_group(key="w_to").value == "32f"
    assert any(s.value.startswith("8f → 32f: harmed") for s in at.subheader)


def test_filters_leaving_no_items_say_so(demo):
    at = open_app(models=MODELS, q="no-such-item-anywhere")
    assert any("No item has a response" in w.value for w in at.warning)


def test_bad_link_values_fall_back(demo):
    at = open_app(models="no-such-model", bench="no-such-bench", grid="3f,8f")
    assert at.sidebar.button_group(key="w_bench").value in ("synthetic-mlvu", "synthetic-videomme")
    assert at.sidebar.button_group(key="w_models").value  # the defaults, not an error


def test_inspector_strips_without_video_show_indices(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJAUDIT_VIDEO_ROOT", str(tmp_path / "no-videos"))
    at = open_app("pages/inspector.py", models=MODELS, item="001-1")
    assert any("Video unavailable" in w.value for w in at.warning)
    strips = at.text  # one line of frame indices per strip
    assert strips and all(c.value.split()[0] == "0" for c in strips)  # uniform indices start at frame 0


def test_inspector_shows_thumbnails_and_unknown_item_error(demo):
    at = open_app("pages/inspector.py", models=MODELS, item="001-1")
    assert len(at.get("image")) == 3  # the default strips: the grid's configs of at most 32 frames (8f, 16f, 32f)
    bad = open_app("pages/inspector.py", models=MODELS, item="no-such-item")
    assert any("not found" in e.value for e in bad.error)


@pytest.mark.slow
def test_fresh_launch_store_builds_the_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJAUDIT_DEMO_ITEMS", "8")
    monkeypatch.setenv("TRAJAUDIT_STORE", str(tmp_path / "fresh"))
    at = open_app()
    assert not Store(tmp_path / "fresh").is_empty()
    assert at.title[0].value == "Overview"


def test_link_cannot_point_the_server_elsewhere(demo, tmp_path):
    """``?store=`` and ``?vroot=`` are ignored (with a notice): the view and its frames stay the server's."""
    at = open_app(
        "pages/inspector.py",
        models=MODELS,
        item="001-1",
        store=str(tmp_path / "typed"),
        vroot=str(tmp_path / "no-videos"),
    )
    assert not (tmp_path / "typed").exists()
    assert at.title[0].value == "Inspector"
    assert len(at.get("image")) == 3  # frames from the configured video root (the default strips, 8f..32f)
    notices = " ".join(w.value for w in at.sidebar.warning)
    assert "store=" in notices and "vroot=" in notices


def test_link_picks_a_configured_store_by_name_only(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJAUDIT_STORES", f"other={tmp_path / 'other'}")
    at = open_app(db="other")
    assert any("holds no responses" in i.value for i in at.info)
    assert not at.button and Store(tmp_path / "other").is_empty()  # no demo offered outside the default store
    at = open_app(db="no-such-store")
    assert at.title[0].value == "Overview"
    assert any("no store named" in w.value for w in at.sidebar.warning)


def test_emptied_default_store_offers_the_demo_on_request(tmp_path, monkeypatch):
    """A default store that has a manifest but no responses is never refilled unasked: it gets a button."""
    from store.store import MANIFEST, Manifest

    (tmp_path / "emptied").mkdir()
    (tmp_path / "emptied" / MANIFEST).write_text(Manifest().dump())
    monkeypatch.setenv("TRAJAUDIT_STORE", str(tmp_path / "emptied"))
    at = open_app()
    assert Store(tmp_path / "emptied").is_empty()
    assert any("holds no responses" in i.value for i in at.info)
    assert [b.label for b in at.button] == ["Build the demo store here"]


def test_models_sharing_no_configuration_say_so(tmp_path, monkeypatch):
    from tests.matrix_fixtures import build_store

    build_store(tmp_path / "s", {"A": {"8f": [1, 0], "16f": [1, 1]}, "B": {"32f": [0, 1], "64f": [1, 1]}})
    monkeypatch.setenv("TRAJAUDIT_STORE", str(tmp_path / "s"))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT_S)
    at.query_params.update({"bench": "bench", "models": "A,B"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("share no configuration on bench" in i.value for i in at.info), [i.value for i in at.info]


def test_a_model_left_out_of_the_first_view_is_named(tmp_path, monkeypatch):
    """A model sharing fewer than two configurations with the others (an lmms-eval run at one budget beside a
    sweep) is not selected at first; the sidebar names it and says why, and stops once the user picks it."""
    from tests.matrix_fixtures import build_store

    sweep = {"text": [1, 0, 1], "8f": [1, 1, 0], "16f": [1, 1, 1]}
    build_store(tmp_path / "s", {"sweep": sweep, "lmms<b>": {"16f@151k": [0, 1, 1]}})
    monkeypatch.setenv("TRAJAUDIT_STORE", str(tmp_path / "s"))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT_S)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.button_group(key="w_models").value == ["sweep"]
    said = [c.value for c in at.sidebar.caption if "Not selected at first" in c.value]
    assert said == [
        "Not selected at first: lmms\\<b\\>. A fresh view compares up to 4 models that share two or more "
        "configurations; add one above."
    ], said  # the name as data: Markdown-escaped
    at.sidebar.button_group(key="w_models").set_value(["sweep", "lmms<b>"]).run()
    assert not [c for c in at.sidebar.caption if "Not selected at first" in c.value]


def test_items_sorted_by_disagreement_read_from_the_top(demo):
    """Picking a key read from the top (changes, disagreement) turns the order descending; a link's
    explicit direction is kept, and picking an id-like key turns it back."""
    at = open_app("pages/items.py", models=MODELS)
    assert at.toggle(key="w_desc").value is False
    at.button_group(key="w_sort").set_value("disagreement").run()
    assert at.toggle(key="w_desc").value is True
    at.button_group(key="w_sort").set_value("task_type").run()
    assert at.toggle(key="w_desc").value is False
    linked = open_app("pages/items.py", models=MODELS, sort="disagreement", desc="0")
    assert linked.toggle(key="w_desc").value is False


def test_inspector_draws_raw_outputs_when_their_panel_opens(demo):
    """The raw outputs table is drawn only once its expander is opened (a folded grid still costs the browser)."""
    at = open_app("pages/inspector.py", models=MODELS)
    assert not at.dataframe
    at.session_state["raw"] = True  # what opening the expander sets
    at.run()
    table = at.dataframe[0].value
    assert {"model", "config", "raw_output", "provenance"} <= set(table.columns) and len(table) > 0


def test_inspector_shows_the_texts_panel_for_open_ended_items_only(demo):
    item = Store(demo).query("SELECT item_id FROM items WHERE answer_type = 'open' ORDER BY item_id LIMIT 1").item_id[0]
    at = open_app("pages/inspector.py", bench="synthetic-mlvu", models=MODELS, item=item)
    assert "Texts side by side" in [h.value for h in at.subheader]
    assert "Texts side by side" not in [
        h.value for h in open_app("pages/inspector.py", models=MODELS, item="001-1").subheader
    ]


def popover_labels(at: AppTest) -> list[str]:
    """The labels of the sidebar's popover buttons (AppTest keeps a popover as a plain block with its proto)."""
    found: list[str] = []

    def walk(node) -> None:
        if not isinstance(node, Block):
            return
        if node.proto is not None and node.proto.WhichOneof("type") == "popover":
            found.append(node.proto.popover.label)
        for child in node.children.values():
            walk(child)

    walk(at.sidebar)
    return found


@pytest.mark.parametrize(("task", "label"), [("Nope", "Filter items"), ("Counting Problem", "Filter items: task type")])
def test_the_filters_button_names_only_a_filter_its_widget_applies(demo, task, label):
    """A link's task type the benchmark lacks (an old link) filters nothing: the closed popover does not claim it."""
    at = open_app(models=MODELS, task=task)
    assert label in popover_labels(at)


def _filter_app(n: int) -> None:
    import streamlit as st

    from pages.common import state

    st.write(state.bind_many(st.container(), "task", "Task type", [f"type {k:02d}" for k in range(n)]))


@pytest.mark.parametrize("n", [3, 24, 25])
def test_a_filter_is_pills_up_to_24_values_and_a_searchable_box_beyond(n):
    """Pills pick in one click; a long list keeps the multiselect's search. Both pick any of the values, and none
    picked is no filter (an empty list)."""
    at = AppTest.from_function(_filter_app, args=(n,), default_timeout=TIMEOUT_S).run()
    assert not at.exception, [e.value for e in at.exception]
    pills = n <= state.PILLS_UP_TO
    assert (len(at.button_group), len(at.multiselect)) == ((1, 0) if pills else (0, 1))
    widget = at.button_group(key="w_task") if pills else at.multiselect(key="w_task")
    assert widget.value == [] and len(widget.options) == n
    widget.set_value(["type 00", "type 02"]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.json[0].value == '["type 00", "type 02"]'


def test_inspector_walks_the_filtered_items_in_the_items_pages_order(demo, capsys):
    """Opened from a sorted Items page (its sort and direction in the URL), the Inspector walks the filtered items
    in that order, as ``trajaudit items --sort changes --desc`` lists them: "next" is the row below, and the
    caption says which order it walks."""
    flags = ["--store", str(demo), "--benchmark", "synthetic-videomme", "--models", MODELS]
    assert main(["items", *flags, "--sort", "changes", "--desc", "--page-size", "3", "--json"]) == 0
    top = [row["item_id"] for row in json.loads(capsys.readouterr().out)["rows"]]
    at = open_app("pages/inspector.py", models=MODELS, sort="changes", desc="1")
    assert at.text_input(key="w_item").value == top[0]
    assert any("Items page's order (changes, descending)" in m.value for m in at.markdown)
    next(b for b in at.button if b.label == "next ▶").click().run()
    assert at.text_input(key="w_item").value == top[1]
    by_id = open_app("pages/inspector.py", models=MODELS)
    assert not any("Items page's order" in m.value for m in by_id.markdown)
