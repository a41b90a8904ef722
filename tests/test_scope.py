"""One scope, one truth: the default grid, re-runs as an overlay, and page/CLI parity.

The overlay test appends live re-runs (one at a configuration no main run has, one at an existing
configuration with the opposite answer) and checks that every view's default JSON is byte-identical
before and after. The parity tests open each page as a link would, take the CLI twin the page shows,
run it, and compare its JSON with the dict the page drew.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import msgspec
import pandas as pd
import pytest

from backend.cli import main
from backend.contracts.base import to_json
from backend.contracts.views import BinaryView
from backend.scope.resolve import Scope, default_benchmark
from store.store import Store
from tests.matrix_fixtures import store_contents

BENCH = "synthetic-videomme"
MODEL = "synthetic-A-7B"
OTHER = "synthetic-B-13B"
FAST = ["--bootstrap", "20"]


def without_exclusions(text: str) -> dict:
    """A view's JSON less the list of configurations left out of the grid (a re-run adds one there)."""
    out = json.loads(text)
    if isinstance(out, dict) and "scope" in out:
        out["scope"] = {k: v for k, v in out["scope"].items() if not k.startswith("grid_excluded")}
    return out


def cli_json(capsys, *argv: str) -> str:
    """The command's stdout (its JSON, as text: compared byte for byte)."""
    capsys.readouterr()
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def default_views(root: Path) -> dict[str, list[str]]:
    """Every view's CLI twin with its defaults (no --grid): what a fresh page shows."""
    s = ["--store", str(root), "--benchmark", BENCH]
    models = ["--models", f"{MODEL},{OTHER}"]
    return {
        "metrics": ["metrics", *s, *models, *FAST, "--json"],
        "flows": ["flows", *s, "--model", MODEL, *models, "--json"],
        "flows-pair": ["flows", *s, "--model", MODEL, "--from", "8f", "--to", "64f", "--kind", "harmed", "--json"],
        "items": ["items", *s, "--model", MODEL, "--format", "json"],
        "items-page": ["items", *s, "--model", MODEL, *models, "--sort", "changes", "--desc", "--page", "1", "--json"],
        "compare": ["compare", *s, *models, *FAST, "--json"],
        "cascade": ["cascade", *s, "--model", MODEL, "--sweep", *FAST, "--json"],
        "predictor": ["predictor", *s, "--model", MODEL, "--folds", "3", "--json"],
        "noise": ["audit", "noise", *s, "--model", MODEL, "--json"],
    }


def append_reruns(root: Path) -> None:
    """Two live re-runs of one item: at 24f (no main run has it) and at 32f with the answer flipped."""
    store = Store(root)
    base = store.query(
        "SELECT * FROM responses WHERE model = ? AND benchmark = ? AND config = '32f' AND run = 'main' ORDER BY item_id LIMIT 1",
        [MODEL, BENCH],
    )
    new = pd.concat(
        [base.assign(config="24f"), base.assign(correct=(1 - base["correct"]).astype("int8"))], ignore_index=True
    )
    new = new.assign(run=["rerun-t1", "rerun-t2"], run_id=["rerun-t1", "rerun-t2"], origin="rerun")
    store.append({"responses": new})


@pytest.fixture(scope="module")
def overlay_store(tmp_path_factory) -> Path:
    from backend.demo.synthetic import build_demo

    root = tmp_path_factory.mktemp("overlay") / "store"
    build_demo(root, n_items=60, seed=0)
    return root


@pytest.mark.slow
def test_a_rerun_leaves_every_default_number_byte_identical(overlay_store, capsys):
    views = default_views(overlay_store)
    before = {name: cli_json(capsys, *argv) for name, argv in views.items()}
    info_before = json.loads(cli_json(capsys, "info", "--store", str(overlay_store), "--json"))
    append_reruns(overlay_store)
    after = {name: cli_json(capsys, *argv) for name, argv in views.items()}
    for name in views:  # byte-identical numbers; only the list of left-out configurations gains 24f
        assert after[name] == before[name] or without_exclusions(after[name]) == without_exclusions(before[name]), name
        assert len(after[name]) == len(before[name]) or '"24f"' in after[name], name
    info = json.loads(cli_json(capsys, "info", "--store", str(overlay_store), "--json"))
    assert info["configs"] == info_before["configs"] and "24f" not in info["configs"][MODEL][BENCH]
    assert info["reruns"][MODEL][BENCH] == {"24f": 1, "32f": 1}  # listed apart
    assert info["n_rerun_responses"] == 2 and info["n_responses"] == info_before["n_responses"]
    metrics = json.loads(after["metrics"])
    assert metrics["scope"]["grid_excluded"]["24f"] == 1
    assert metrics["scope"]["grid_excluded_why"]["24f"] == "re-runs only"
    # Asked for explicitly, the re-runs do count.
    out = json.loads(
        cli_json(
            capsys,
            "metrics",
            "--store",
            str(overlay_store),
            "--benchmark",
            BENCH,
            "--models",
            MODEL,
            "--grid",
            "8f,24f",
            "--include-reruns",
            "--bootstrap",
            "0",
            "--json",
        )
    )
    assert out["n_items"] == 1 and out["scope"]["include_reruns"] is True


def test_default_grid_is_stated_with_what_it_leaves_out(overlay_store, capsys):
    out = json.loads(cli_json(capsys, *default_views(overlay_store)["metrics"]))
    scope = out["scope"]
    assert scope["grid_source"] == "default" and scope["grid"] == out["grid"] == [
        "text",
        "8f",
        "16f",
        "32f",
        "64f",
        "128f",
    ]
    assert set(scope["grid_excluded"]) >= {"32f@50k", "32f@200k", "64f/dense-start", "64f/random-s1"}
    assert all("under 90%" in why for label, why in scope["grid_excluded_why"].items() if label != "24f")


def test_unknown_model_or_benchmark_is_named(overlay_store, capsys):
    assert main(["metrics", "--store", str(overlay_store), "--models", "nope", "--benchmark", BENCH, "--json"]) == 2
    assert "model 'nope' has no responses on 'synthetic-videomme'" in capsys.readouterr().err
    assert main(["metrics", "--store", str(overlay_store), "--models", MODEL, "--benchmark", "nope", "--json"]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err


def test_scope_round_trips_through_its_flags():
    from backend.cli import build_parser
    from backend.scope.filters import ItemFilter

    scope = Scope(
        BENCH,
        (MODEL, OTHER),
        ("text", "8f"),
        ItemFilter(task_types=("counting",), search="red ball"),
        tag="confused",
        tag_model=OTHER,
        beyond_noise=True,
        include_reruns=True,
    )
    args = build_parser().parse_args(["metrics", *scope.to_argv()])
    assert Scope.from_args(args) == scope


# ---- parity: the dict each page draws equals its CLI twin's --json --------------------------------------

from streamlit.testing.v1 import AppTest  # noqa: E402

from backend import views  # noqa: E402
from backend.cli.common import print_json  # noqa: E402
from backend.scope.view import View  # noqa: E402
from pages.common import data  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _as_printed(obj, capsys) -> dict:
    capsys.readouterr()
    print_json(obj)
    return json.loads(capsys.readouterr().out)


def _twin(at: AppTest) -> list[str]:
    at.session_state["cli-twin"] = True  # the twin is drawn once its expander is opened (pages.common.ui.show_twin)
    at.run()
    (line,) = [c.value for c in at.code if c.value.startswith("trajaudit ")]
    return shlex.split(line)[1:]


def _inline_twins(at: AppTest) -> list[list[str]]:
    """The command lines a page shows in its captions (``pages.common.ui.code`` spans), as argv."""
    texts = [c.value for c in at.caption]
    return [shlex.split(line)[1:] for text in texts for _, line in re.findall(r"(`+) (trajaudit .+?) \1", text)]


def _one(lines: list[list[str]], *words: str) -> list[str]:
    """The one shown line holding every word of ``words``."""
    (argv,) = [argv for argv in lines if all(w in argv for w in words)]
    return argv


def _open(page: str, monkeypatch, root: Path, **params: str) -> AppTest:
    monkeypatch.setenv("TRAJAUDIT_STORE", str(root))
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.query_params.update(params)
    at.run()
    if page != "pages/overview.py":
        at.switch_page(page).run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    return at


def _policies(at: AppTest, view: View) -> list[tuple[dict, list[str]]]:
    """Policies: the cascade frontier, the cascade at the slider's threshold and the predictor, each with its line."""
    resolved, lines = data.single(view), _inline_twins(at)
    key = (view.root, view.version, resolved, tuple(at.session_state["s_ladder"]))
    threshold, folds, seed = at.session_state["s_thr"], at.session_state["s_folds"], at.session_state["s_pseed"]
    return [
        (data.cascade_view(*key, None), _one(lines, "cascade", "--sweep")),
        (data.cascade_view(*key, float(threshold)), _one(lines, "cascade", "--threshold")),
        (data.predictor_view(*key, int(folds), int(seed)), _one(lines, "predictor")),
    ]


def _audits(at: AppTest, view: View) -> list[tuple[dict, list[str]]]:
    """Audits, noise tab: ``audit noise`` on the focus model alone over the sidebar's grid."""
    noise_view = data.view(view.root, view.version, data.single(view, view.scope.grid))
    return [(data.noise_audit(noise_view)[0], _one(_inline_twins(at), "audit", "noise"))]


def _audit_tab(at: AppTest, view: View) -> list[tuple[dict, list[str]]]:
    """The Audits page's other tabs: each draws one ``views`` function on the focus model's scope, which
    its ``audit ...`` line prints (the cross-model lists carry the question on the page: ids compared)."""
    tab, lines, single = at.session_state["s_atab"], _inline_twins(at), data.single(view)
    if tab == "intervention":
        grid = views.grid_up_to(list(view.scope.grid), at.session_state["s_atop"])
        shown = [argv for argv in lines if "--enqueue" not in argv]  # the run button's line queues re-runs
        return [(views.interventions_view(view.store, data.single(view, tuple(grid))), _one(shown, "interventions"))]
    if tab == "isocompute":
        pixels = int(at.session_state["s_pix"]) or None
        tolerance = float(at.session_state["s_tol"])
        return [(views.isocompute_view(view.store, single, tolerance, pixels), _one(lines, "isocompute"))]
    models = (at.session_state["s_xa"], at.session_state["s_xb"])
    configs = (at.session_state["s_xca"], at.session_state["s_xcb"])
    drawn = views.crossmodel_view(view.store, single, models, *configs, limit=500)
    return [(drawn, _one(lines, "crossmodel"))]


def _inspector(at: AppTest, view: View) -> list[tuple[dict, list[str]]]:
    """Inspector: the item and every stored response the page draws (its frame plan is the video's, not a number)."""
    detail = data.item_detail(view.root, view.version, view.scope.benchmark, at.session_state["s_item"])
    drawn = {"item": detail.item, "responses": [{c: r[c] for c in PAGE_RESPONSE_COLUMNS} for r in detail.responses]}
    assert drawn["responses"]  # the demo item has responses to compare
    return [(drawn, _twin(at))]


PAGE_RESPONSE_COLUMNS = ["model", "config", "run", "answer", "correct", "confidence"]
PAGES = {
    "pages/overview.py": lambda at, v: [(data.overview(v), _twin(at))],
    "pages/flows.py": lambda at, v: [(data.flows_view(v, v.scope.focus, None), _twin(at))],
    "pages/compare.py": lambda at, v: [(data.compare_view(v, 50), _twin(at))],
    "pages/items.py": lambda at, v: [(data.item_page(v, v.scope.focus, "item", False, 1, 50), _twin(at))],
    "pages/inspector.py": _inspector,
    "pages/policies.py": _policies,
    "pages/audits.py": _audits,
}  # and the Workers page: test_workers_page_draws_what_jobs_prints
OPENED_AS = {"pages/audits.py": {"atab": "noise"}}  # the tab whose numbers are compared


def _printed(capsys, argv: list[str], page: str) -> dict:
    printed = json.loads(cli_json(capsys, *argv))
    if "harmed_items" in printed:  # the cross-model lists: the page adds each item's question
        printed = printed | {k: [r["item_id"] for r in printed[k]] for k in ("harmed_items", "rescued_items")}
    if page == "pages/inspector.py":  # `inspect` adds the video and its frame plan; the page draws them as pictures
        printed["responses"] = [{c: r[c] for c in PAGE_RESPONSE_COLUMNS} for r in printed["responses"]]
        printed = {"item": printed["item"], "responses": printed["responses"]}
    return printed


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
@pytest.mark.parametrize("page", list(PAGES))
def test_each_page_draws_what_its_cli_twin_prints(demo_store, page, monkeypatch, capsys):
    """Every number a page draws is its twin's ``--json``: the twin line is read off the page and run."""
    at = _open(
        page,
        monkeypatch,
        demo_store,
        bench=BENCH,
        models=f"{MODEL},{OTHER}",
        task="Counting Problem,OCR Problems",
        **OPENED_AS.get(page, {}),
    )
    view = at.session_state["view"]
    pairs = PAGES[page](at, view)
    assert pairs
    for drawn, argv in pairs:
        assert "--grid" not in argv or page == "pages/audits.py", " ".join(argv)  # the default grid stays default
        printed = _printed(capsys, argv, page)
        assert printed == _as_printed(drawn, capsys), " ".join(argv)
        if "scope" in printed:
            assert printed["scope"]["item_filter"]["task_types"] == ["Counting Problem", "OCR Problems"]


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
@pytest.mark.parametrize("tab", ["intervention", "isocompute", "crossmodel"])
def test_each_audit_tab_draws_what_its_cli_twin_prints(demo_store, tab, monkeypatch, capsys):
    # iso-compute groups need items answered at every allocation: the demo's two task types have none
    task = {} if tab == "isocompute" else {"task": "Counting Problem,OCR Problems"}
    at = _open(
        "pages/audits.py",
        monkeypatch,
        demo_store,
        bench=BENCH,
        models=f"{MODEL},{OTHER}",
        atab=tab,
        pix="100000",
        **task,
    )
    for report, argv in _audit_tab(at, at.session_state["view"]):
        drawn = to_json(report)  # the typed report the tab draws, as its JSON
        printed = _printed(capsys, argv, "pages/audits.py")
        if "harmed_items" in drawn:
            drawn = drawn | {k: [r["item_id"] for r in drawn[k]] for k in ("harmed_items", "rescued_items")}
        assert printed == _as_printed(drawn, capsys), " ".join(argv)
        assert ("--task-type" in argv) == bool(task) and "--benchmark" in argv
        assert any(drawn.get(k) for k in ("n_items", "groups", "protocols"))  # numbers, not an empty report


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_workers_page_draws_what_jobs_prints(demo_store, monkeypatch, capsys):
    """The Workers page's counts per state and its recent jobs are ``trajaudit jobs --json``'s (its line, run)."""
    from store.queue import JobQueue
    from store.rerun_request import RerunRequest

    JobQueue(demo_store).enqueue(RerunRequest(MODEL, BENCH, "001-1", "24f"))
    at = _open("pages/workers.py", monkeypatch, demo_store, bench=BENCH)
    printed = json.loads(cli_json(capsys, *_one(_inline_twins(at), "jobs")))
    assert {m.label: m.value for m in at.metric} == {k.capitalize(): f"{n:,}" for k, n in printed["counts"].items()}
    assert printed["counts"]["queued"] >= 1
    assert at.dataframe[-1].value["id"].tolist() == [j["id"] for j in printed["jobs"]]


@pytest.mark.usefixtures("app_env")
def test_overview_parity_on_the_real_scale_grid_store(realdata, tmp_path, monkeypatch, capsys):
    root = tmp_path / "sg"
    assert (
        main(
            [
                "ingest",
                str(realdata / "LLaVA-NeXT-Video-7B_V1_short_predictions_wide.csv"),
                "--answers",
                str(realdata / "videomme_answers.csv"),
                "--store",
                str(root),
            ]
        )
        == 0
    )
    at = _open("pages/overview.py", monkeypatch, root)
    drawn = _as_printed(data.overview(at.session_state["view"]), capsys)
    printed = json.loads(cli_json(capsys, *_twin(at)))
    assert printed == drawn
    assert printed["grid"] == ["text", "8f@151k", "16f@151k", "32f@151k"] and printed["n_items"] == 786


# ---- parity of the score sections: the demo's open-ended items (synthetic-mlvu) ----------------------------

SCORED = "synthetic-mlvu"


@pytest.mark.usefixtures("app_env")
@pytest.mark.parametrize("page", ["pages/overview.py", "pages/compare.py"])
@pytest.mark.parametrize("cut", ["stored", "0.3"])
def test_score_sections_draw_what_their_cli_twin_prints(demo_store, page, cut, monkeypatch, capsys):
    at = _open(page, monkeypatch, demo_store, bench=SCORED, models=f"{MODEL},{OTHER}", cut=cut)
    view = at.session_state["view"]
    assert view.scope.score_cutoff == cut
    ((report, argv),) = PAGES[page](at, view)
    drawn = _as_printed(report, capsys)
    assert ("--score-cutoff" in argv) == (cut != "stored"), " ".join(argv)
    printed = json.loads(cli_json(capsys, *argv))
    assert printed == drawn
    per_model = printed["models"] if page == "pages/overview.py" else printed["metrics"]
    assert {m: "continuous" in rec for m, rec in per_model.items()} == {MODEL: True, OTHER: True}
    assert printed["binary"]["n_scored_items"] > 0 and printed["scope"]["score_cutoff"] == (
        cut if cut == "stored" else 0.3
    )
    if page == "pages/overview.py":  # the scope line says how the scored items enter accuracy
        from backend.scope.binary import describe

        binary = msgspec.convert(printed["binary"], BinaryView)
        assert any(describe(binary) in c.value.replace("\\", "") for c in at.caption)


@pytest.mark.usefixtures("app_env")
def test_flows_score_section_draws_what_its_cli_twin_prints(demo_store, monkeypatch, capsys):
    from pages.common import score_data

    at = _open("pages/flows.py", monkeypatch, demo_store, bench=SCORED, models=MODEL, stol="0.05")
    view = at.session_state["view"]
    drawn = _as_printed(score_data.score_flows(view, view.scope.focus, None, None, 0.05), capsys)
    at.session_state["cli-twin-scores"] = True
    at.run()
    (line,) = [c.value for c in at.code if c.value.startswith("trajaudit ") and "--scores" in c.value]
    printed = json.loads(cli_json(capsys, *shlex.split(line)[1:]))
    assert printed == drawn and printed["tolerance"] == 0.05
    assert sum(t["improved"] + t["regressed"] + t["unchanged"] for t in printed["transitions"]) == printed[
        "n_items"
    ] * len(printed["transitions"])


# ---- no --benchmark: the benchmark the dashboard opens on, never the pooled store --------------------------


@pytest.mark.usefixtures("app_env")
def test_metrics_without_benchmark_is_the_overviews_default_scope(demo_store, monkeypatch, capsys):
    """A fresh Overview (no link parameters) on a two-benchmark store, and ``metrics`` with its models and no
    ``--benchmark``: the same numbers on the same one benchmark, and the command names it on standard error."""
    benchmarks = json.loads(cli_json(capsys, "info", "--store", str(demo_store), "--json"))["benchmarks"]
    assert len(benchmarks) == 2
    at = _open("pages/overview.py", monkeypatch, demo_store)
    view = at.session_state["view"]
    capsys.readouterr()
    assert main(["metrics", "--store", str(demo_store), "--models", ",".join(view.scope.models), "--json"]) == 0
    out, err = capsys.readouterr()
    printed, drawn = json.loads(out), _as_printed(data.overview(view), capsys)
    assert (printed["scope"].pop("benchmark_source"), drawn["scope"].pop("benchmark_source")) == ("default", "given")
    assert printed == drawn  # the page's sidebar names the benchmark it opened on: the rest is equal
    sizes = Store(demo_store).query("SELECT benchmark, count(*) n FROM items GROUP BY benchmark ORDER BY n DESC")
    largest = sizes.benchmark[0]
    assert largest == "synthetic-videomme" and sizes.n[0] > sizes.n[1]  # the demo's multiple-choice benchmark
    other = next(b for b in benchmarks if b != largest)
    assert printed["scope"]["benchmark"] == largest
    assert f"benchmark {largest} " in err and f"also in the store: {other}" in err, err


@pytest.mark.usefixtures("app_env")
def test_commands_without_models_print_the_first_screen(demo_store, monkeypatch, capsys):
    """``metrics`` with no ``--models`` and no ``--benchmark`` takes the models and benchmark a fresh Overview
    opens with, and ``flows`` with no ``--model`` the page's focus model: the same numbers as the commands naming
    them, each choice said on standard error."""
    at = _open("pages/overview.py", monkeypatch, demo_store)
    scope = at.session_state["view"].scope
    capsys.readouterr()
    root = ["--store", str(demo_store), *FAST, "--json"]
    assert main(["metrics", *root]) == 0
    bare, err = capsys.readouterr()
    assert main(["metrics", *root, "--models", ",".join(scope.models)]) == 0
    assert json.loads(bare) == json.loads(capsys.readouterr().out)
    assert f"models {', '.join(scope.models)} (as the dashboard opens" in err, err
    assert main(["flows", "--store", str(demo_store), "--json"]) == 0
    bare, err = capsys.readouterr()
    assert main(["flows", "--store", str(demo_store), "--model", scope.focus, "--json"]) == 0
    assert json.loads(bare) == json.loads(capsys.readouterr().out)
    assert f"model {scope.focus} (the dashboard's focus model" in err, err


def test_cascade_without_a_threshold_prints_the_policies_page_as_it_opens(demo_store, monkeypatch, capsys):
    """``cascade`` with neither ``--threshold`` nor ``--sweep`` takes the threshold the Policies page's slider opens
    at: the same numbers as the command naming it, the choice said on standard error."""
    at = _open("pages/policies.py", monkeypatch, demo_store)
    opened = at.slider(key="w_thr").value
    capsys.readouterr()
    root = ["cascade", "--store", str(demo_store), "--bootstrap", "0", "--json"]
    assert main(root) == 0
    bare, err = capsys.readouterr()
    assert main([*root, "--threshold", f"{opened:g}"]) == 0
    assert json.loads(bare) == json.loads(capsys.readouterr().out)
    assert json.loads(bare)["threshold"] == opened
    assert f"threshold {opened:g} (where the Policies page opens" in err, err


def test_commands_without_models_on_an_empty_store_say_so(tmp_path, capsys):
    """No model to default to: one line, exit 2, for the list and the one-model commands alike."""
    for argv in (["metrics"], ["flows"], ["cascade", "--sweep"]):
        assert main([*argv, "--store", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(f"error: the store at {tmp_path} holds no responses: ingest some first (trajaudit ingest)")
        assert "\n" not in err


def test_default_benchmark_is_the_largest_every_model_has():
    """Of the benchmarks every model shares, the one with the most items any model answered (ties: the store's
    order); of all of them when they share none (the scope check then names what is missing); None on an
    empty store."""
    info = store_contents(
        benchmarks=["a", "b", "c"],
        configs={"M": {"b": [], "c": []}, "N": {"a": [], "c": []}},
        model_items={"M": {"b": 30, "c": 20}, "N": {"a": 50, "c": 30}},
    )
    assert default_benchmark(info, ("M",)) == "b"  # b and c tie at 30 (N answered 30 of c): the first
    assert default_benchmark(info, ("M", "N")) == "c"  # the only shared one
    assert default_benchmark(info, ("M", "X")) == "a"  # none shared: the largest of all
    assert default_benchmark(info) == "a"
    assert default_benchmark(store_contents()) is None


def test_a_given_benchmark_is_not_noted(demo_store, capsys):
    """``--benchmark`` named: no note, and the header says it was given."""
    capsys.readouterr()
    assert main(["metrics", "--store", str(demo_store), "--models", MODEL, "--benchmark", BENCH, *FAST, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["scope"]["benchmark_source"] == "given" and "benchmark" not in err
