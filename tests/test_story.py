"""The story step (``backend.analysis.story``): the step a curve is flattest against its churn, picked from the
data on hand-built matrices, said in one sentence (``backend.present.text.story``), printed first by
``metrics`` and carried by ``metrics --json``; the Overview opens on it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from backend import views
from backend.analysis.story import MIN_CHURN, flattest_step
from backend.cli import main
from backend.contracts.base import to_json
from backend.contracts.common import Transition
from backend.contracts.views import OverviewReport
from backend.present.series import Curve
from backend.present.text import story as story_text
from backend.present.text import story_why
from backend.scope.resolve import Scope
from backend.scope.view import open_view
from store.store import Store
from tests.matrix_fixtures import build_store

N = 100


def ladder() -> dict[str, list[int]]:
    """100 items on text < 8f < 16f < 32f, built step by step (item k's answer changes where said):
    text -> 8f: 30 rescued, 0 harmed (imbalance 1); 8f -> 16f: 10 rescued, 2 harmed (2/3);
    16f -> 32f: 5 rescued, 6 harmed (1/11): the cancelling step, net -1.0 pt, churn 11%."""
    y = {"text": np.zeros(N, int)}
    y["8f"] = y["text"].copy()
    y["8f"][0:30] = 1
    y["16f"] = y["8f"].copy()
    y["16f"][30:40], y["16f"][0:2] = 1, 0
    y["32f"] = y["16f"].copy()
    y["32f"][40:45], y["32f"][2:8] = 1, 0
    return {c: v.tolist() for c, v in y.items()}


def step(frm: str, to: str, rescued: int, harmed: int, n: int = N) -> Transition:
    return Transition(from_=frm, to=to, rescued=rescued, harmed=harmed, net=(rescued - harmed) / n,
                      churn=(rescued + harmed) / n, mcnemar_p=1.0)  # fmt: skip


def pick(steps: list[Transition], n: int) -> dict | None:
    """``flattest_step`` as its JSON (what ``metrics --json`` prints under ``story``)."""
    return to_json(flattest_step(steps, n))


def report(store: Store, models: tuple[str, ...], **scope) -> OverviewReport:
    resolved = Scope(benchmark="bench", models=models, **scope).resolve(store)
    return views.overview(open_view(store, resolved), bootstrap=0)


def overview(store: Store, models: tuple[str, ...], **scope) -> dict:
    """The Overview's report as its JSON."""
    return to_json(report(store, models, **scope))


def test_the_cancelling_step_is_picked_from_the_data(tmp_path):
    model = report(build_store(tmp_path, {"m": ladder()}), ("m",))
    out = to_json(model)
    story = out["story"]["m"]
    assert (story["from"], story["to"], story["rescued"], story["harmed"]) == ("16f", "32f", 5, 6)
    assert story["net"] == pytest.approx(-0.01) and story["churn"] == pytest.approx(0.11)
    assert story["imbalance"] == pytest.approx(1 / 11) and story["eligible"] and story["n_items"] == N
    assert story["mcnemar_p"] == out["models"]["m"]["transitions"][2]["mcnemar_p"]  # the step's own p
    assert story_why(model.story["m"]).endswith("of its 11 flips, 10 cancel out and 1 shows in the curve")
    assert story_text(model.story["m"]) == (
        "16f → 32f: net −1.0 pt = 5 rescued − 6 harmed (p = 1); 11.0% of items changed state"
    )


def test_ties_go_to_the_larger_churn_then_the_costlier_step():
    # equal imbalance (0), unequal churn: the larger churn
    picked = pick([step("8f", "16f", 10, 10), step("16f", "32f", 3, 3)], N)
    assert picked is not None and (picked["from"], picked["rescued"]) == ("8f", 10)
    # equal imbalance and churn: the costlier (later) step
    picked = pick([step("8f", "16f", 4, 4), step("16f", "32f", 4, 4)], N)
    assert picked is not None and picked["from"] == "16f"


def test_a_single_step_is_the_story_and_a_step_without_flips_is_none():
    only = pick([step("8f", "16f", 7, 2)], N)
    assert only is not None and (only["from"], only["to"], only["imbalance"]) == ("8f", "16f", pytest.approx(5 / 9))
    assert pick([step("8f", "16f", 0, 0)], N) is None
    assert pick([], N) is None  # one configuration: no step
    assert story_text(None).startswith("No item changes state")


def test_no_flips_anywhere_gives_no_story(tmp_path):
    flat = {"m": {"8f": [1, 0, 1, 0], "16f": [1, 0, 1, 0], "32f": [1, 0, 1, 0]}}
    assert overview(build_store(tmp_path, flat), ("m",))["story"] == {"m": None}


def test_steps_under_the_churn_floor_give_way_unless_none_reaches_it():
    tiny, big = step("8f", "16f", 1, 1, 1000), step("16f", "32f", 120, 80, 1000)  # 0.2% and 20% churn
    picked = pick([tiny, big], 1000)  # the tiny step cancels exactly, but is under the floor
    assert picked is not None and picked["from"] == "16f" and picked["eligible"]
    quiet = pick([step("8f", "16f", 1, 1, 1000), step("16f", "32f", 3, 1, 1000)], 1000)
    assert quiet is not None and quiet["from"] == "8f" and not quiet["eligible"]
    assert story_text(flattest_step([step("8f", "16f", 1, 1, 1000), step("16f", "32f", 3, 1, 1000)], 1000)).endswith(
        f"(no step changes {100 * MIN_CHURN:.0f}% of the items)"
    )


def test_missing_configurations_leave_items_out_and_the_story_counts_the_matched_ones(tmp_path):
    data = {"m": ladder(), "n": ladder()}
    data["n"]["32f"] = [None] * 3 + data["n"]["32f"][3:]  # n lacks 32f for i0..i2 (two of m's harmed items)
    out = overview(build_store(tmp_path, data), ("m", "n"))
    assert out["n_items"] == N - 3 and out["n_excluded"] == 3
    story = out["story"]["m"]
    assert (story["from"], story["rescued"], story["harmed"], story["n_items"]) == ("16f", 5, 5, N - 3)
    # a grid without the missing configuration: m's story is read from the steps it has
    out = overview(build_store(tmp_path / "b", data), ("m", "n"), grid=("text", "8f", "16f"))
    assert out["story"]["m"]["from"] == "8f"


def test_metrics_prints_the_story_first_and_carries_it_in_json(tmp_path, capsys):
    root = tmp_path / "s"
    build_store(root, {"m": ladder()})
    assert main(["metrics", "--store", str(root), "--models", "m", "--bootstrap", "0"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "story m: 16f → 32f: net −1.0 pt = 5 rescued − 6 harmed (p = 1); 11.0% of items changed state"
    assert main(["metrics", "--store", str(root), "--models", "m", "--bootstrap", "0", "--json"]) == 0
    story = json.loads(capsys.readouterr().out)["story"]["m"]
    assert (story["from"], story["to"], story["rescued"], story["harmed"]) == ("16f", "32f", 5, 6)


@pytest.mark.usefixtures("app_env")
def test_the_overview_opens_on_the_focus_models_story_step(demo_store: Path, monkeypatch):
    """The first element under the page's title states the step with its counts, as ``metrics --json`` has it."""
    pytest.importorskip("streamlit.testing.v1", reason="streamlit's AppTest runs the page")
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRAJAUDIT_STORE", str(demo_store))
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    models, focus = ("synthetic-A-7B", "synthetic-B-13B"), "synthetic-B-13B"
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.query_params.update({"bench": "synthetic-videomme", "models": ",".join(models), "model": focus})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    store = Store(demo_store)
    expected = to_json(
        views.overview(
            open_view(store, Scope(benchmark="synthetic-videomme", models=models).resolve(store)), bootstrap=0
        )
    )["story"][focus]
    assert expected is not None
    first, second = list(at.main.children.values())[:2]
    assert first.type == "title" and first.value == "Overview"
    said = second.value.replace("\\", "")  # the page escapes data text for Markdown
    assert said.startswith(f"{focus} · {expected['from']} → {expected['to']}: net ")
    assert f"= {expected['rescued']} rescued − {expected['harmed']} harmed" in said
    cards = next(h.value for h in at.html if "ta-cards" in h.value)
    assert all(f'data-key="{k}"' in cards for k in ("best_fixed", "oracle_headroom", "visual_confusion_rate"))


def test_the_curve_shades_the_story_step_and_labels_each_step_with_net_and_churn(tmp_path):
    from backend.present import charts

    out = Curve.of(report(build_store(tmp_path, {"m": ladder(), "n": ladder()}), ("m", "n")))
    top, bottom = charts.curve_and_flows(out, {"m": "#1f77b4", "n": "#ff7f0e"}, labelled="n", step=("16f", "32f"))
    for spec in (top, bottom):
        band = spec["layer"][0]
        assert band["mark"]["type"] == "rect" and band["data"]["values"] == [{"x0": 2, "x1": 3}]  # 16f -> 32f
    texts = [layer for layer in bottom["layer"] if layer["mark"]["type"] == "text"]
    assert [t["encoding"]["text"]["field"] for t in texts] == ["net", "churn"]
    assert all({"filter": {"field": "model", "equal": "n"}} in t["transform"] for t in texts)
    assert bottom["title"] == "n: items flipping (bars); net (pp) above, churn (pp) below"
    assert (
        charts.curve_and_flows(out, {"m": "#1f77b4", "n": "#ff7f0e"}, step=("8f", "32f"))[0]["layer"][0]["mark"]["type"]
        == "area"
    )  # not a step of the grid: nothing shaded
