"""The current selection (backend.scope.selection, backend.analysis.selection) and its batch re-run
(backend.runtime.selection), the ``rerun --flow/--items`` twin, Wilson intervals and budget ladders, checked by
hand against the matched matrix."""

from __future__ import annotations

import json
from math import comb

import msgspec
import numpy as np
import pandas as pd
import pytest

from backend import views
from backend.analysis import selection as analysis_selection
from backend.analysis.stats import wilson_interval
from backend.cli import main
from backend.contracts.base import to_json
from backend.contracts.runs import RerunBatch
from backend.runtime import registry, selection
from backend.scope.filters import ItemFilter
from backend.scope.ladders import ladders
from backend.scope.resolve import Scope
from backend.scope.selection import Selection, read_ids
from backend.scope.view import open_view
from store.errors import UserError
from store.queue import JobQueue
from store.store import Store

MODEL = "synthetic-A-7B"
BENCH = "synthetic-videomme"


def rerun_argv(store: Store, *args: str) -> list[str]:
    """``trajaudit rerun`` for MODEL on BENCH in ``store``, then ``args``."""
    return ["rerun", "--store", str(store.root), "--model", MODEL, "--benchmark", BENCH, *args]


@pytest.fixture(scope="module")
def view(demo_store, tmp_path_factory):
    """The demo store with MODEL registered (a stand-in checkpoint folder: nothing here loads it)."""
    ckpt = tmp_path_factory.mktemp("ckpt")
    registry.add(demo_store, registry.ModelSpec(MODEL, "qwen2_5_vl", str(ckpt), max_frames=128))
    store = Store(demo_store)
    resolved = Scope(benchmark=BENCH, models=(MODEL,), grid=(), item_filter=ItemFilter()).resolve(store)
    return open_view(store, resolved)


def test_selection_parses_describes_and_refuses_bad_specs():
    sel = Selection.flow("text:8f:harmed")
    assert sel.describe() == "text → 8f harmed" and sel.baseline(["text", "8f", "16f"]) == "8f"
    assert Selection.from_url(sel.to_url()) == sel
    assert Selection("state", ("8f", "wrong")).describe() == "wrong at 8f"
    assert Selection("items", ("a", "b")).describe() == "2 picked items"
    assert Selection("filtered").baseline(["text", "8f", "16f"]) == "16f"
    assert Selection.from_url(["flow", "text", "8f", "sideways"]) is None  # a stale link: no walk, no error
    for bad in ("text:8f", "text:8f:sideways", "::harmed"):
        with pytest.raises(UserError, match="FROM:TO:KIND"):
            Selection.flow(bad)
    with pytest.raises(UserError, match="CONFIG:STATE"):
        Selection("state", ("8f", "maybe"))


def test_item_ids_are_the_flows_pages_lists_and_node_counts(view):
    matrix = view.matrix
    out = to_json(views.flows_view(view, MODEL))
    for link in (lk for lk in out["links"] if lk["count"] > 0):
        sel = Selection("flow", (link["from"], link["to"], link["kind"]))
        ids = views.selected_ids(view, MODEL, sel)
        listed = to_json(views.flows_view(view, MODEL, (link["from"], link["to"]), link["kind"], limit=None))["items"]
        assert ids == [r["item_id"] for r in listed] and len(ids) == link["count"]
    for node in out["nodes"]:
        assert (
            len(analysis_selection.item_ids(matrix, MODEL, Selection("state", (node["config"], node["state"]))))
            == node["count"]
        )
    assert analysis_selection.item_ids(matrix, MODEL, Selection("filtered")) == matrix.items["item_id"].tolist()
    assert analysis_selection.item_ids(matrix, MODEL, Selection("items", ("b", "a", "b"))) == ["b", "a"]


def test_compare_counts_rescued_and_harmed_by_hand(view):
    store, matrix = view.store, view.matrix
    ids = matrix.items["item_id"].tolist()[:20]
    out = to_json(views.selection_comparison(store, MODEL, BENCH, ids, "16f", "8f", label="first 20"))
    m = matrix.model_index(MODEL)
    y8 = matrix.correct[m, :20, matrix.config_index("8f")].astype(bool)
    y16 = matrix.correct[m, :20, matrix.config_index("16f")].astype(bool)
    rescued, harmed = int((~y8 & y16).sum()), int((y8 & ~y16).sum())
    assert (out["n_compared"], out["correct_new"], out["correct_baseline"]) == (20, int(y16.sum()), int(y8.sum()))
    assert (out["rescued"], out["harmed"]) == (rescued, harmed)
    n = rescued + harmed  # exact two-sided McNemar: twice the smaller binomial tail at 1/2, written out here
    assert out["mcnemar_p"] == pytest.approx(
        min(1.0, 2 * sum(comb(n, i) for i in range(min(rescued, harmed) + 1)) / 2**n)
    )
    lo, hi = out["accuracy_new"]["ci95"]
    assert lo <= y16.mean() <= hi
    assert out["sentence"].startswith(
        f"Of the 20 items (first 20), {int(y16.sum())} of the 20 answered are correct under 16f"
    )
    missing = to_json(views.selection_comparison(store, MODEL, BENCH, ids, "8f/random-s9", "8f"))
    assert missing["n_compared"] == 0 and missing["n_missing"] == 20 and missing["accuracy_new"]["value"] is None


def test_rerun_flow_twin_answers_stored_configs_from_the_store(view, capsys):
    store, matrix = view.store, view.matrix
    link = next(lk for lk in to_json(views.flows_view(view, MODEL))["links"] if lk["kind"] == "harmed" and lk["count"])
    flow, other = (
        f"{link['from']}:{link['to']}:harmed",
        next(c for c in matrix.grid if c not in (link["from"], link["to"])),
    )
    argv = rerun_argv(store, "--flow", flow, "--config", other, "--wait", "--json")
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    ids = analysis_selection.item_ids(matrix, MODEL, Selection.flow(flow))
    assert out["batch"]["item_ids"] == ids and len(ids) == link["count"]
    assert out["batch"]["from_store"] == len(ids)  # a logged config: answered from the store, nothing queued
    assert out["progress"]["finished"] and out["progress"]["counts"]["done"] == len(ids)
    expected = views.selection_comparison(
        store, MODEL, BENCH, ids, other, link["to"], label=Selection.flow(flow).describe()
    )
    assert out["comparison"] == json.loads(json.dumps(to_json(expected)))
    assert out["comparison"]["correct_baseline"] == 0  # harmed at TO: wrong there by definition
    assert JobQueue(store.root).counts()["queued"] == 0


def test_rerun_items_file_queues_jobs_and_cancel_cancels_them(view, tmp_path, capsys):
    store, matrix = view.store, view.matrix
    ids = matrix.items["item_id"].tolist()[:3]
    path = tmp_path / "items.csv"
    path.write_text("item_id,task_type\n" + "".join(f"{i},x\n" for i in ids))
    assert read_ids(str(path)) == ids
    argv = rerun_argv(store, "--items", str(path), "--config", "8f/random-s7", "--json")
    assert main(argv) == 0
    batch = msgspec.convert(json.loads(capsys.readouterr().out)["batch"], RerunBatch)  # as a page keeps it
    assert batch.item_ids == ids and all(batch.job_ids) and batch.from_store == 0
    assert selection.progress(str(store.root), batch).counts["queued"] == 3
    assert selection.cancel(str(store.root), batch) == 3
    assert to_json(selection.progress(str(store.root), batch)) | {"counts": None} == {
        "n": 3,
        "counts": None,
        "finished": True,
        "failure": None,
    }


def test_bad_batches_are_refused_before_anything_is_queued(view, tmp_path):
    store, matrix = view.store, view.matrix
    before = JobQueue(store.root).counts()
    with pytest.raises(UserError, match="empty"):
        selection.submit(str(store.root), selection.batch_requests(MODEL, BENCH, [], "8f"))
    with pytest.raises(UserError, match="unknown item"):
        ids = [matrix.items["item_id"].iloc[0], "no-such-item"]
        selection.submit(str(store.root), selection.batch_requests(MODEL, BENCH, ids, "8f/random-s3"))
    with pytest.raises(UserError, match="above the ceiling"):
        selection.submit(
            str(store.root), selection.batch_requests(MODEL, BENCH, matrix.items["item_id"].tolist()[:2], "256f")
        )
    assert JobQueue(store.root).counts() == before
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(UserError, match="lists no item id"):
        read_ids(str(empty))
    assert main(rerun_argv(store, "--flow", "text:8f", "--config", "8f")) == 2


def test_wilson_interval_matches_known_values():
    lo, hi = wilson_interval(np.array([0, 13, 5, 0]), np.array([10, 13, 10, 0]))
    assert lo[0] == 0 and hi[0] == pytest.approx(0.2775, abs=1e-4)
    assert lo[1] == pytest.approx(0.7719, abs=1e-4) and hi[1] == pytest.approx(1)
    assert (lo[2], hi[2]) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert np.isnan(lo[3]) and np.isnan(hi[3])


def test_ladders_join_budget_steps_only():
    lines, alone = ladders(
        ["text", "8f", "16f", "32f@50k", "32f@200k", "32f", "64f/dense-start", "64f", "64f/random-s1"]
    )
    assert lines == [["text", "8f", "16f", "32f", "64f"]]
    assert set(alone) == {"32f@50k", "32f@200k", "64f/dense-start", "64f/random-s1"}
    assert ladders(["text", "8f@151k", "16f@151k", "32f@151k"]) == ([["text", "8f@151k", "16f@151k", "32f@151k"]], [])


def test_compare_at_the_baseline_config_keeps_both_columns(view):
    """Re-running at the baseline's own configuration (a noise check) shows the logged and the new answer apart."""
    store, matrix = view.store, view.matrix
    ids = matrix.items["item_id"].tolist()[:5]
    out = to_json(views.selection_comparison(store, MODEL, BENCH, ids, "8f", "8f"))
    row = out["items"][0]
    assert {"correct at 8f", "correct at 8f (re-run)"} <= set(row)
    assert [r["correct at 8f"] for r in out["items"]] == [r["correct at 8f (re-run)"] for r in out["items"]]


def _answers(correct: list[int | None]) -> pd.DataFrame:
    """One answer row per answered item (``selection_answers``' shape); None: the item has no row yet."""
    rows = [(f"q{i}", c, "A", "main") for i, c in enumerate(correct) if c is not None]
    return pd.DataFrame(rows, columns=["item_id", "correct", "answer", "run"]).set_index("item_id")


def test_compare_on_hand_counted_answers():
    """Eight items: 5 rescued, 1 harmed, 1 right at both, 1 unanswered under the new config.

    McNemar exact (two-sided): 2 * P(X <= 1), X ~ Binomial(6, 1/2) = 2 * (1 + 6) / 64 = 0.21875.
    Wilson 95% of 6 of 7 (new) and 2 of 7 (baseline), z = 1.959964: centre (k + z^2/2) / (n + z^2),
    half-width z sqrt(k (n - k) / n + z^2 / 4) / (n + z^2): [0.4869, 0.9743] and [0.0822, 0.6411].
    """
    base = _answers([0, 0, 0, 0, 0, 1, 1, 0])
    new = _answers([1, 1, 1, 1, 1, 0, 1, None])
    ids = base.index.tolist()  # the eight selected items (q7 has no row under the new config)
    out = to_json(analysis_selection.compare(base, new, ids, model="m", benchmark="b", config="16f", baseline="8f"))
    assert (out["n_items"], out["n_compared"], out["n_missing"]) == (8, 7, 1)
    assert (out["rescued"], out["harmed"], out["correct_new"], out["correct_baseline"]) == (5, 1, 6, 2)
    assert out["mcnemar_p"] == pytest.approx(0.21875)
    assert out["accuracy_new"]["ci95"] == pytest.approx([0.4869, 0.9743], abs=1e-4)
    assert out["accuracy_baseline"]["ci95"] == pytest.approx([0.0822, 0.6411], abs=1e-4)
    assert out["items"][7] == {
        "item_id": "q7",
        "correct at 8f": 0.0,
        "correct at 16f": None,
        "answer": None,
        "run": None,
    }
    assert out["agreement"] is None
    logged = to_json(
        analysis_selection.compare(
            base, new, ids, model="m", benchmark="b", config="8f/logged", baseline="8f", logged=("8f", base)
        )
    )["agreement"]
    assert (logged["k"], logged["n"], logged["differing"]) == (7, 7, [])  # same letter "A" wherever both answered
