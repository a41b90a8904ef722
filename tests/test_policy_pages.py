"""The Policies and Audits pages, the noise toggle and the annotation panel, run with Streamlit's AppTest.

Every number checked here is read off the page (metric text, chart traces, tables) and compared
with the ``--json`` output of the CLI command the page names, on the same small demo store.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from backend.cli import main
from backend.present.text import count, p_value, pp, signed_pp
from backend.runtime import registry
from backend.scope import annotations
from backend.scope.resolve import Scope
from backend.scope.view import open_view
from pages.common import ui
from store.errors import UserError
from store.queue import JobQueue
from store.store import Store
from tests import policy_fixtures as fx
from tests.page_tables import html_rows

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 180
BENCH = "synthetic-videomme"
MODEL = "synthetic-A-7B"
LADDER = "16f,32f,64f,128f"
GRID = "8f,16f,32f,64f,128f"


@pytest.fixture(scope="module")
def demo(demo_store) -> Path:
    return demo_store


@pytest.fixture(autouse=True)
def quiet_env(app_env, monkeypatch):
    monkeypatch.setenv("TRAJAUDIT_AUTHOR", "tester")
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    monkeypatch.setenv("TRAJAUDIT_STORE", "")  # each test's store is set below; restored afterwards


def serve(store: Path | Store) -> None:
    """The store the dashboard is launched on (``$TRAJAUDIT_STORE``: links cannot choose folders)."""
    os.environ["TRAJAUDIT_STORE"] = str(store.root if isinstance(store, Store) else store)


def open_page(store: Path, page: str, bench: str = BENCH, **params: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT_S)
    serve(store)
    at.query_params.update({"bench": bench, "models": f"{MODEL},synthetic-B-13B", **params})
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def cli(capsys, *args: str) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def flows_cli(capsys, store: Path, *args: str) -> dict:
    """``trajaudit flows --json`` on the page's scope (MODEL against synthetic-B-13B over GRID)."""
    base = ["--store", str(store), "--model", MODEL, "--models", "synthetic-B-13B", "--benchmark", BENCH]
    return cli(capsys, "flows", *base, "--grid", GRID, *args, "--json")


CARD = re.compile(
    r'<div class="ta-label">(.*?)</div><div class="ta-value">(.*?) <span class="ta-ci">(.*?)</span>', re.S
)


def metrics(at: AppTest) -> list[tuple[str, str, str]]:
    """The numbers the page drew as cards (``pages.common.ui.cards``), in page order: (label, value, note)."""
    return [
        tuple(html.unescape(part) for part in card)
        for block in at.html
        if "ta-cards" in block.value
        for card in CARD.findall(block.value)
    ]


def chart(at: AppTest) -> tuple[pd.DataFrame, dict]:
    """The page's one Vega-Lite chart: its data (Streamlit sends a spec's values as an Arrow table) and its spec."""
    (drawn,) = at.get("vega_lite_chart")
    return pa.ipc.open_stream(drawn.proto.data.data).read_pandas(), json.loads(drawn.proto.spec)


def traces(at: AppTest) -> dict[str, dict]:
    """The chart's points by series (``pages.common.charts_audits``' ``series`` column), each column as a list."""
    data, _ = chart(at)
    return {name: {c: rows[c].tolist() for c in rows.columns} for name, rows in data.groupby("series", sort=False)}


def test_policies_numbers_equal_the_cli(demo, capsys):
    at = open_page(demo, "pages/policies.py", ladder=LADDER, thr="0.6")
    assert at.title[0].value == "Policies"
    base = ["--store", str(demo), "--model", MODEL, "--benchmark", BENCH, "--ladder", LADDER]
    point = cli(capsys, "cascade", *base, "--threshold", "0.6", "--json")
    sweep = cli(capsys, "cascade", *base, "--sweep", "--json")
    shown = metrics(at)
    assert ("Accuracy", ui.pct(point["accuracy"]), ui.ci_text(point["accuracy_ci"])) == shown[0]
    assert shown[1][1] == f"{point['mean_frames_shared']:.1f}" and shown[2][1] == f"{point['mean_frames_unshared']:.1f}"
    assert shown[1][2] == f"{100 * point['cost_vs_top_shared']:.1f}% of 128f"
    assert shown[3][1] == str(point["n_items"])
    match = sweep["matching"]
    assert shown[4] == ("Threshold", f"{match['threshold']:.3f}", "")
    assert shown[6][1:] == (ui.pct(match["saving"]), ui.ci_text(match["saving_ci"]))

    lines = traces(at)
    front = pd.DataFrame(sweep["frontier"]).sort_values(["mean_frames_shared", "threshold"])
    cascade = lines["cascade (frames shared)"]
    assert cascade["x"] == pytest.approx(front["mean_frames_shared"].tolist())
    assert cascade["y"] == pytest.approx((100 * front["accuracy"]).tolist())
    assert lines["threshold 0.6"]["x"] == pytest.approx([point["mean_frames_shared"]])
    assert lines[f"matches {sweep['ladder'][-1]}"]["y"] == pytest.approx([100 * match["accuracy"]])
    fixed = lines["fixed budgets"]
    assert fixed["label"] == LADDER.split(",") and fixed["y"] == pytest.approx(
        [100 * f["accuracy"] for f in sweep["fixed"]]
    )

    report = cli(capsys, "predictor", *base, "--folds", "5", "--seed", "0", "--json")
    rows = pd.DataFrame(report["frontier"])
    oracle = rows[rows["policy"] == "oracle"].iloc[0]
    assert lines["oracle (cheapest correct)"]["x"] == pytest.approx([oracle["mean_frames"]])
    levels = rows[(rows["policy"] == "predictor") & (rows["label"] != "argmax")].sort_values("mean_frames")
    assert lines["budget predictor (levels q)"]["y"] == pytest.approx((100 * levels["accuracy"]).tolist())
    assert ("Target hit rate", ui.pct(report["target_hit_rate"])) == shown[9][:2]
    # one denominator: every point of the chart on the items its title states, the CLI twins' own
    assert report["denominator"] == sweep["denominator"]
    spec = chart(at)[1]
    assert spec["title"]["subtitle"] == f"every point {sweep['denominator']}"
    shape = next(layer["encoding"]["shape"]["scale"] for layer in spec["layer"] if "shape" in layer.get("encoding", {}))
    legend = dict(zip(shape["domain"], shape["range"], strict=True))  # what the legend tells apart (it draws no size)
    assert legend["budget predictor (levels q)"] != legend["budget predictor (argmax)"]
    assert fixed["y"][-1] == pytest.approx(100 * sweep["top_accuracy"])  # "matches 128f" is read against this point
    assert set(rows["n_items"]) == {sweep["n_items"]}


def test_policies_says_why_without_confidences(tmp_path):
    store = Store(tmp_path / "s")
    y = [[0, 1], [1, 1], [0, 0], [1, 0], [0, 1], [1, 1]]
    fx.build(
        store, fx.responses("m", ["16f", "32f"], y), item_rows=fx.items(6, question=[f"how many {k}" for k in range(6)])
    )
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT_S)
    serve(store)
    at.query_params.update({"bench": "bench", "models": "m", "chartn": "1"})  # 6 items: drawn at a minimum of 1
    at.run()
    at.switch_page("pages/policies.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("no confidences stored for model 'm'" in i.value for i in at.info)
    names = set(traces(at))
    assert {
        "fixed budgets",
        "oracle (cheapest correct)",
        "budget predictor (argmax)",
    } <= names  # the predictor needs none
    assert not any(n.startswith("cascade") for n in names)


def test_a_predictor_that_fails_says_why_and_runs_anew_when_asked_again(tmp_path, monkeypatch):
    """The predictor runs as a background job (``data.predictor_job``) whose failure the page shows; a failed job is
    not kept, so the next run asks again (here the first attempt fails, the second succeeds)."""
    from backend import views

    store = Store(tmp_path / "s")
    y = [[0, 1], [1, 1], [0, 0], [1, 0], [0, 1], [1, 1]]
    fx.build(
        store,
        fx.responses("m", ["16f", "32f"], y, [[0.5, 0.9]] * 6),
        item_rows=fx.items(6, question=[f"how many {k}" for k in range(6)]),
    )
    real, attempts = views.predictor_view, []

    def flaky(*args, **kwargs):
        attempts.append(args[2:4])
        if len(attempts) == 1:
            raise UserError("the first attempt fails")
        return real(*args, **kwargs)

    monkeypatch.setattr(views, "predictor_view", flaky)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT_S)
    serve(store)
    at.query_params.update({"bench": "bench", "models": "m", "folds": "3"})
    at.run()
    at.switch_page("pages/policies.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("the first attempt fails" in w.value for w in at.warning), [w.value for w in at.warning]
    at.run()
    assert not at.exception and not any("No budget predictor" in w.value for w in at.warning)
    assert [card[0] for card in metrics(at)][-4:] == [
        "Argmax accuracy",
        "Target hit rate",
        "Never correct",
        "Video groups",
    ]
    assert attempts == [(3, 0), (3, 0)]  # (folds, seed): asked twice, then kept


@pytest.mark.parametrize("tab", ["intervention", "isocompute", "noise", "crossmodel"])
def test_audit_tabs_equal_the_cli(demo, capsys, tab):
    at = open_page(demo, "pages/audits.py", atab=tab, grid=GRID, pix="100000", chartn="1")  # every chart drawn
    assert at.title[0].value == "Audits"
    base = ["--store", str(demo), "--benchmark", BENCH]
    if tab == "intervention":
        out = cli(capsys, "audit", "interventions", *base, "--model", MODEL, "--grid", "8f,16f,32f,64f", "--json")
        table = at.dataframe[0].value
        recovered = {r["protocol"]: r["recovery"] for r in out["protocols"]}
        assert table["protocol"].tolist() == list(recovered)
        assert table["n_terminal"].tolist() == [r["n_terminal"] for r in recovered.values()]
        assert table["recovery_rate"].tolist() == pytest.approx(
            [r["recovery_rate"] for r in recovered.values()], nan_ok=True
        )
        assert any(b.label.startswith("Run the intervention: ") for b in at.button)
    elif tab == "isocompute":
        out = cli(capsys, "audit", "isocompute", *base, "--model", MODEL, "--default-pixels", "100000", "--json")
        assert len(out["groups"]) == 2
        shown = [v for label, v, _ in metrics(at) if label == "Complementarity"]
        assert shown == [ui.pct(g["complementarity"]) for g in out["groups"]]
        drawn = [pa.ipc.open_stream(c.proto.data.data).read_pandas() for c in at.get("vega_lite_chart")]
        assert len(drawn) == 2 * len(out["groups"])  # per group: accuracy per allocation, items per pattern
        for group, acc in zip(out["groups"], drawn[::2], strict=True):
            expected = [100 * c["accuracy"] for c in group["configs"]] + [100 * group["oracle_accuracy"]]
            assert acc["value"].tolist() == pytest.approx(expected)
    elif tab == "noise":
        out = cli(capsys, "audit", "noise", *base, "--model", MODEL, "--grid", GRID, "--json")
        shown = dict((label, v) for label, v, _ in metrics(at))
        assert shown["Items with repeats"] == str(out["n_items_with_repeats"])
        assert shown["Mean item flip rate"] == ui.pct(out["mean_item_flip_rate"])
        bars = traces(at)
        assert bars["harmed, within noise"]["items"] == [-t["harmed_within"] for t in out["transitions"]]
    else:
        out = cli(
            capsys, "audit", "crossmodel", *base, "--models", f"{MODEL},synthetic-B-13B", "--config", "128f", "--json"
        )
        shown = dict((label, v) for label, v, _ in metrics(at))
        assert (shown["Rescued"], shown["Harmed"]) == (str(out["rescued"]), str(out["harmed"]))
        harmed = at.dataframe[0].value
        assert harmed[["benchmark", "item_id"]].to_dict("records") == out["harmed_items"]
        bars = traces(at)["rescued (wrong → right)"]
        assert dict(zip(bars["task_type"], bars["items"], strict=True)) == {
            r["task_type"]: r["rescued"] for r in out["by_task_type"]
        }


def test_a_chart_on_too_few_items_is_a_notice_set_in_the_sidebar(demo, capsys):
    """The sampling-intervention chart's recovery rates rest on the terminal regressions at the top budget: a few
    items. Under the sidebar's minimum (default 10) a notice that counts them stands in its place (not "items": the
    table beside it lists each protocol's items, many more); at 1 the chart is drawn."""
    out = cli(
        capsys, "audit", "interventions", "--store", str(demo), "--benchmark", BENCH, "--model", MODEL,
        "--grid", "8f,16f,32f,64f", "--json",
    )  # fmt: skip
    n = max(p["recovery"]["n_terminal"] for p in out["protocols"])
    assert 0 < n < 10
    at = open_page(demo, "pages/audits.py", atab="intervention", grid=GRID)
    assert (
        f"Only {count(n, 'terminal regression')}: too few for a chart (minimum 10, set under the sidebar's Options)."
        in [i.value for i in at.info]
    )
    assert not at.get("vega_lite_chart")
    assert at.sidebar.number_input(key="w_chartn").value == 10
    at.sidebar.number_input(key="w_chartn").set_value(n).run()
    assert at.query_params["chartn"] == str(n)
    recovered = traces(at)["recovered terminal regressions"]
    charted = [p["recovery"] for p in out["protocols"] if p["recovery"]["n_terminal"] >= n]
    assert recovered["label"] == [f"{r['n_recovered']} of {r['n_terminal']}" for r in charted]
    assert not any("too few for a chart" in i.value for i in at.info)


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("pages/policies.py", {"ladder": LADDER}),
        ("pages/audits.py", {"atab": "intervention"}),
        ("pages/audits.py", {"atab": "isocompute", "pix": "100000"}),
        ("pages/audits.py", {"atab": "noise"}),
        ("pages/audits.py", {"atab": "crossmodel"}),
        ("pages/compare.py", {}),
        ("pages/items.py", {}),
        ("pages/flows.py", {"from": "8f", "to": "16f", "kind": "rescued"}),  # the opened flow's items too
    ],
)
def test_tables_read_in_plain_words_and_never_none(demo, page, params):
    """Every table of the page: headers in plain words (sentence case, no snake_case; a model's name as it is,
    never capitalised), and no missing value left for the grid to draw as "None"."""
    assert_plain_tables(open_page(demo, page, grid=GRID, chartn="1", **params))


def test_a_batch_rerun_comparison_reads_in_plain_words(demo, tmp_path):
    """A finished batch re-run's items table (Flows; Items' picked and filtered items draw the same panel): headers
    in plain words ("Item", "Correct at 16f"), a dash where an item has no answer. At a logged configuration the
    batch is answered from the store, so the comparison is drawn at once (no worker: the registered model's
    checkpoint is never loaded)."""
    root = tmp_path / "store"
    shutil.copytree(demo, root, ignore=shutil.ignore_patterns(".cache"))
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    registry.add(root, registry.ModelSpec(MODEL, "qwen2_5_vl", str(ckpt), max_frames=128))
    # the page alone (AppTest drops a click's trigger when the multipage app re-resolves its page)
    at = AppTest.from_file(str(REPO / "pages" / "flows.py"), default_timeout=TIMEOUT_S)
    serve(root)
    for key, value in {"from": "8f", "to": "16f", "kind": "rescued"}.items():  # the link's flow (pages.common.state)
        at.session_state[f"s_{key}"] = value
    at.session_state["view"] = open_view(
        Store(root), Scope(BENCH, (MODEL, "synthetic-B-13B"), tuple(GRID.split(","))).resolve(Store(root))
    )
    at.run()
    (frames,) = [n for n in at.number_input if n.label == "Frames" and str(n.key).startswith("batch-")]
    frames.set_value(16).run()
    (run,) = [b for b in at.button if b.label.startswith("Re-run ") and b.label.endswith(" items")]
    run.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value.startswith("Of the ") for s in at.success), [s.value for s in at.success]
    (batch,) = [df for df in at.dataframe if "run" in df.value.columns]  # the comparison's items
    labels = [json.loads(batch.proto.columns)[c]["label"] for c in batch.value.columns]
    assert labels == ["Item", "Correct at 16f", "Correct at 16f (re-run)", "Answer", "Run"], labels
    assert_plain_tables(at)


def assert_plain_tables(at: AppTest) -> None:
    models = {MODEL, "synthetic-B-13B"}
    assert at.dataframe
    for df in at.dataframe:
        config = json.loads(df.proto.columns)
        buttons = {c for c, v in config.items() if v.get("type_config", {}).get("type") == "button"}
        assert buttons <= {"open"} and all(set(df.value[c]) == {"Open"} for c in buttons)  # a row's Open button
        labels = [config.get(str(col), {}).get("label") or str(col) for col in df.value.columns if col not in buttons]
        for label in labels:
            assert label in models or ("_" not in label and not label[0].islower()), labels
            assert label.lower() not in {m.lower() for m in models} or label in models, label  # data as written
        assert not df.value.isna().any().any(), df.value.columns[df.value.isna().any()].tolist()


@pytest.mark.slow
def test_run_intervention_queues_the_terminal_regressions(tmp_path):
    """The page alone (AppTest drops a click's trigger when the multipage app re-resolves its page)."""
    from backend.demo.synthetic import build_demo

    root = tmp_path / "s"
    build_demo(root, n_items=60, seed=0)  # enough items for terminal regressions at 64f
    ckpt = root / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(root, registry.ModelSpec(MODEL, "qwen2_5_vl", str(ckpt), max_frames=128))
    at = AppTest.from_file(str(REPO / "pages" / "audits.py"), default_timeout=TIMEOUT_S)
    at.session_state["view"] = open_view(
        Store(root), Scope(BENCH, (MODEL,), tuple(GRID.split(","))).resolve(Store(root))
    )
    at.session_state["s_apolicy"] = "64f/random-s2"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (button,) = [b for b in at.button if b.label.startswith("Run the intervention: ")]
    n_terminal = int(button.label.split(": ")[1].split()[0])
    assert n_terminal > 0
    button.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(s.value.startswith(f"Queued {n_terminal} re-runs") for s in at.success)
    jobs = JobQueue(root).list_jobs()
    assert len(jobs) == n_terminal and {j.config for j in jobs} == {"64f/random-s2"}


def test_noise_toggle_hides_the_flips_the_cli_hides(demo, capsys):
    budgets = GRID.split(",")
    hiding = [
        (a, b)
        for a, b in zip(budgets, budgets[1:])
        if flows_cli(capsys, demo, "--from", a, "--to", b, "--beyond-noise")["n_hidden"]
    ]
    assert hiding  # the demo's repeats hide some step's flips
    a, b = hiding[0]
    at = open_page(
        demo, "pages/flows.py", grid=GRID, noise="1", flowview="pair", **{"from": a, "to": b, "kind": "harmed"}
    )
    assert at.sidebar.toggle(key="w_noise").value is True
    out = flows_cli(capsys, demo, "--from", a, "--to", b, "--kind", "harmed", "--beyond-noise")
    plain = flows_cli(capsys, demo, "--from", a, "--to", b)
    assert out["n_hidden"] > 0
    link = out["links"][0]  # the pair's rescued, harmed, net, churn and McNemar p, once: the steps' one row
    assert html_rows(at, "transitions") == [
        [
            MODEL,
            f"{a} → {b}",
            f"{link['rescued']:,}",
            f"{link['harmed']:,}",
            signed_pp(link["net"]),
            pp(link["churn"]),
            p_value(link["mcnemar_p"]),
        ]
    ]
    flows = at.dataframe[1].value.set_index("kind")["count"].to_dict()  # after the items beside the Sankey
    assert flows == {link["kind"]: link["count"] for link in out["links"] if link["count"] > 0}
    assert sum(lk["count"] for lk in plain["links"]) - sum(lk["count"] for lk in out["links"]) == out["n_hidden"]
    assert at.dataframe[0].value["item_id"].tolist() == [r["item_id"] for r in out["items"]]

    overview = open_page(demo, "pages/overview.py", grid=GRID, noise="1")
    overview.session_state["transitions"] = True  # the table is drawn once its expander is opened
    overview.run()
    rows = [row for row in html_rows(overview, "transitions") if row[0] == MODEL]
    assert all(len(row) == 9 for row in rows)  # with how many within-noise flips each side left out
    cli_pairs = flows_cli(capsys, demo, "--beyond-noise")
    harmed = {f"{lk['from']} → {lk['to']}": f"{lk['count']:,}" for lk in cli_pairs["links"] if lk["kind"] == "harmed"}
    assert {row[1]: row[3] for row in rows} == harmed


def _panel_app(root: str) -> None:
    from pages.common.annotations import annotation_panel

    annotation_panel(root, "synthetic-videomme", "001-1", ["synthetic-A-7B", "synthetic-B-13B"])


def test_annotation_panel_adds_filters_exports_and_deletes(tmp_path, capsys):
    from backend.demo.synthetic import build_demo

    root = tmp_path / "s"
    build_demo(root, n_items=24, seed=0)
    at = AppTest.from_function(_panel_app, args=(str(root),), default_timeout=TIMEOUT_S).run()
    assert any(c.value == "No annotation on this item yet." for c in at.caption)
    form = "ann-synthetic-videomme-001-1"
    assert at.text_input(key=f"{form}-author").value == "tester"  # $TRAJAUDIT_AUTHOR
    at.selectbox(key=f"{form}-tag").set_value("counting")
    at.selectbox(key=f"{form}-model").set_value(MODEL)
    at.text_area(key=f"{form}-note").input("counts the red balls")
    next(b for b in at.button if b.label == "Add annotation").click().run()
    assert not at.exception, [e.value for e in at.exception]
    live = annotations.annotations_for(Store(root), BENCH, "001-1")
    assert live[["tag", "note", "author", "model"]].to_dict("records") == [
        {"tag": "counting", "note": "counts the red balls", "author": "tester", "model": MODEL}
    ]
    assert any("counts the red balls" in m.value for m in at.markdown)
    assert at.text_area(key=f"{form}-note").value == ""  # cleared for the next one

    items = open_page(root, "pages/items.py", atag="counting")
    assert any("1 matched items" in c.value for c in items.caption)
    assert (
        main(
            [
                "items",
                "--store",
                str(root),
                "--model",
                MODEL,
                "--benchmark",
                BENCH,
                "--grid",
                GRID,
                "--annotations",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    export = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("item_id")
    assert (export.loc["001-1", "annotation_tags"], export.loc["001-1", "n_annotations"]) == ("counting", 1)
    assert export.loc["001-1", "annotation_notes"] == "tester: counts the red balls"
    assert (export["n_annotations"] == 0).sum() == len(export) - 1

    (delete,) = [b for b in at.button if b.key and b.key.startswith("ann-del-")]
    delete.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert annotations.annotations_for(Store(root), BENCH, "001-1").empty
    assert any(c.value == "No annotation on this item yet." for c in at.caption)
