"""One scope, one truth: the default grid, re-runs as an overlay, and page/CLI parity.

The overlay test appends live re-runs (one at a configuration no main run has, one at an existing
configuration with the opposite answer) and checks that every view's default JSON is byte-identical
before and after. The parity tests open each page as a link would, take the CLI twin the page shows,
run it, and compare its JSON with the dict the page drew.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest

from backend.cli import main
from backend.scope.resolve import Scope
from store.store import Store

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
        "items-page": ["items", *s, "--model", MODEL, *models, "--sort", "changes", "--desc", "--page", "1"],
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
    out = json.loads(cli_json(capsys, "metrics", "--store", str(overlay_store), "--benchmark", BENCH, "--models", MODEL,
                              "--grid", "8f,24f", "--include-reruns", "--bootstrap", "0", "--json"))  # fmt: skip
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

    scope = Scope(BENCH, (MODEL, OTHER), ("text", "8f"), ItemFilter(task_types=("counting",), search="red ball"),
                  tag="confused", tag_model=OTHER, beyond_noise=True, include_reruns=True)  # fmt: skip
    args = build_parser().parse_args(["metrics", *scope.to_argv()])
    assert Scope.from_args(args) == scope


# ---- parity: the dict each page draws equals its CLI twin's --json --------------------------------------

from streamlit.testing.v1 import AppTest  # noqa: E402

from backend.cli.common import print_json  # noqa: E402
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


PAGES = {
    "pages/overview.py": lambda scope: data.overview(scope),
    "pages/flows.py": lambda scope: data.flows_view(scope, scope.focus, None),
    "pages/compare.py": lambda scope: data.compare_view(scope, 50),
    "pages/items.py": lambda scope: data.item_page(scope, scope.focus, "item", False, 1, 50),
}


@pytest.mark.usefixtures("app_env")
@pytest.mark.parametrize("page", list(PAGES))
def test_each_page_draws_what_its_cli_twin_prints(demo_store, page, monkeypatch, capsys):
    at = _open(
        page, monkeypatch, demo_store, bench=BENCH, models=f"{MODEL},{OTHER}", task="Counting Problem,OCR Problems"
    )
    scope = at.session_state["scope"]
    drawn = _as_printed(PAGES[page](scope), capsys)
    argv = _twin(at)
    assert "--grid" not in argv, " ".join(argv)  # the default grid: the twin resolves it the same way
    printed = json.loads(cli_json(capsys, *argv))
    assert printed == drawn
    assert printed["scope"]["grid_source"] == "default" and printed["scope"]["item_filter"]["task_types"] == [
        "Counting Problem",
        "OCR Problems",
    ]


@pytest.mark.usefixtures("app_env")
def test_overview_parity_on_the_real_scale_grid_store(realdata, tmp_path, monkeypatch, capsys):
    root = tmp_path / "sg"
    assert main(["ingest", str(realdata / "LLaVA-NeXT-Video-7B_V1_short_predictions_wide.csv"), "--answers",
                 str(realdata / "videomme_answers.csv"), "--store", str(root)]) == 0  # fmt: skip
    at = _open("pages/overview.py", monkeypatch, root)
    drawn = _as_printed(data.overview(at.session_state["scope"]), capsys)
    printed = json.loads(cli_json(capsys, *_twin(at)))
    assert printed == drawn
    assert printed["grid"] == ["text", "8f@151k", "16f@151k", "32f@151k"] and printed["n_items"] == 786
