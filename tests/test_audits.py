"""Protocol audits on hand-checked stores: recovery, kappa, iso-compute, noise-aware flips, cross-model flows."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from backend import views
from backend.analysis import interventions, isocompute, noise
from backend.cli import main
from backend.contracts.base import to_json
from backend.runtime import rerun
from backend.scope.loader import load_matrix
from backend.scope.resolve import Resolved, Scope
from store.errors import UserError
from tests import policy_fixtures as fx

GRID = ["16f", "32f", "64f"]


def focus(store, model: str, grid: list[str] | None = None) -> Resolved:
    """The one-model scope of ``model`` the audit commands and the Audits page build (``views.single_scope``)."""
    return views.single_scope(Scope(None, (model,)), tuple(grid or ())).resolve(store)


#            16f 32f 64f | 64f/random-s1
BASE = [[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 1, 1], [0, 0, 1]]
RANDOM_TOP = [[1], [0], [1], [1], [0], [1]]


@pytest.fixture
def protocol_store(store):
    return fx.build(
        store,
        fx.responses("m", GRID, BASE),
        fx.responses("m", ["64f/random-s1"], RANDOM_TOP),
        fx.responses("m", ["32f/dense-start"], [[0], [1], [1], [0], [0], [0]]),
    )


def test_cohen_kappa_known_values():
    assert interventions.cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert interventions.cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0)
    assert interventions.cohen_kappa([1, 0], [0, 1]) == pytest.approx(-1.0)
    assert np.isnan(interventions.cohen_kappa([1, 1, 1], [1, 1, 1]))  # chance agreement is total
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    assert interventions.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_one_cohen_kappa_serves_audits_and_explain_and_is_nan_without_items():
    """The audits' kappa is the one "Why these items?" uses; with no items it is undefined (NaN), silently."""
    from backend.analysis import explain

    assert explain.cohen_kappa is interventions.cohen_kappa
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" on the way
        assert np.isnan(interventions.cohen_kappa(np.array([], bool), np.array([], bool)))
        empty = explain.agreement({"x": np.array([], bool), "y": np.array([], bool)})
    assert np.isnan(empty["pairs"][0].kappa) and empty["pairs"][0].jaccard is None


def test_recovery_rate_by_hand(protocol_store):
    rec = to_json(views.protocol_recovery(protocol_store, "m", GRID, "64f/random-s1", bootstrap=200))
    # Terminal regressions under uniform 64f: q0, q1, q2; random-s1 gets q0 and q2 right.
    assert (rec["n_terminal"], rec["n_recovered"]) == (3, 2) and rec["recovery_rate"] == pytest.approx(2 / 3)
    assert rec["harm_rate"] == pytest.approx(1 / 2)  # right at 64f: q4 (lost), q5 (kept)
    assert rec["kappa_top"] == pytest.approx(-0.2)  # p_o = 2/6, p_e = 4/9
    lo, hi = rec["recovery_ci"]
    assert 0 <= lo <= hi <= 1
    with pytest.raises(UserError, match="not another protocol at the top budget '64f'"):
        views.protocol_recovery(protocol_store, "m", GRID, "32f/dense-start")


def test_audit_lists_each_protocol_with_agreement_and_tag_changes(protocol_store):
    out = to_json(views.interventions_view(protocol_store, focus(protocol_store, "m", GRID), bootstrap=0))
    assert out["top"] == "64f" and [p["protocol"] for p in out["protocols"]] == ["dense-start", "random-s1"]
    dense, rand = out["protocols"]
    assert dense["recovery"] is None and dense["grid"] == ["16f", "32f/dense-start", "64f"]
    (row,) = dense["per_config"]
    assert (
        row["config"] == "32f"
        and row["agreement"] == pytest.approx(5 / 6)
        and (row["rescued"], row["harmed"]) == (0, 1)
    )
    terminal = rand["tag_changes"]["terminal-regression"]
    assert terminal == {"base": 3, "protocol": 2, "both": 1, "gained": 1, "lost": 2}  # base q0,q1,q2 -> q1,q4
    assert rand["recovery"]["n_recovered"] == 2
    with pytest.raises(UserError, match="no config under protocol.*fps-1"):
        to_json(views.interventions_view(protocol_store, focus(protocol_store, "m", GRID), protocols=["fps-1"]))


def test_intervention_requests_are_the_terminal_regressions(protocol_store):
    matrix = load_matrix(protocol_store, ["m"], grid=GRID)
    reqs = interventions.intervention_requests(matrix, "m", "64f/random-s2")
    assert [r.item_id for r in reqs] == ["q0", "q1", "q2"] and {r.config for r in reqs} == {"64f/random-s2"}
    with pytest.raises(UserError, match="not another protocol"):
        interventions.intervention_requests(matrix, "m", "32f/random-s2")
    with pytest.raises(UserError, match="no re-run could be queued: unknown model 'm'"):
        to_json(rerun.submit_many(protocol_store.root, reqs))  # nothing registered: refused before queueing


def test_isocompute_grouping():
    labels = ["text", "16f", "32f@302k", "64f@151k", "128f@75k", "64f@50k", "32f/random-s1", "64f@160k", "64f@300k"]
    assert isocompute.iso_groups(labels) == [["128f@75k", "32f@302k", "64f@151k", "64f@160k"]]
    with_default = isocompute.iso_groups(labels, default_pixels=200_000)  # 16f = 3.2M px, as 64f@50k
    assert with_default[0] == ["16f", "64f@50k"] and len(with_default) == 2
    assert isocompute.iso_groups(labels, tolerance=0.01) == [["128f@75k", "32f@302k", "64f@151k"]]


def test_isocompute_winners_and_complementarity_by_hand(store):
    y = [[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]]
    fx.build(store, fx.responses("m", ["32f@302k", "128f@75k"], y))
    out = to_json(views.isocompute_view(store, focus(store, "m"), bootstrap=100))
    (g,) = out["groups"]
    acc = {c["config"]: (c["accuracy"], c["unique_wins"]) for c in g["configs"]}
    assert acc == {"128f@75k": (0.4, 1), "32f@302k": (0.6, 2)}
    assert g["oracle_accuracy"] == pytest.approx(0.8) and g["complementarity"] == pytest.approx(0.2)
    assert g["patterns"] == {"32f@302k": 2, "128f@75k": 1, "all": 1, "none": 1}
    assert g["best_single"]["config"] == "32f@302k"


@pytest.fixture
def noise_store(store):
    main_rows = fx.responses("m", ["16f", "32f"], [[0, 1], [1, 0], [0, 1], [1, 1], [0, 1]])
    rep16 = fx.responses("m", ["16f"], [[1], [1], [0]], item_ids=["q0", "q1", "q4"], run="r2")
    rep16b = fx.responses("m", ["16f"], [[1]], item_ids=["q4"], run="r3")
    rand32 = fx.responses("m", ["32f/random-s1"], [[0], [0]], item_ids=["q1", "q3"])
    return fx.build(store, main_rows, rep16, rep16b, rand32)


def test_noise_split_by_hand(noise_store):
    matrix = load_matrix(noise_store, ["m"], grid=["16f", "32f"])
    prof = views.noise_profile(noise_store, matrix)
    assert prof.n_repeats[0, :, 0].tolist() == [2, 2, 1, 1, 3]  # 16f: main + r2 (+ r3)
    assert prof.n_repeats[0, :, 1].tolist() == [1, 2, 1, 2, 1]  # 32f: main + random-s1
    np.testing.assert_allclose(prof.flip_rate[0, :, 0], [1, 0, np.nan, np.nan, 2 / 3])
    kinds = noise.flip_classes(matrix, prof, "m", "16f", "32f")
    assert kinds.tolist() == ["within", "beyond", "unmeasured", "stable", "within"]
    assert noise.within_noise(matrix, prof, "m", "16f", "32f").tolist() == [True, False, False, False, True]
    t = to_json(noise.split_transition(matrix, prof, "m", "16f", "32f"))
    assert (t["rescued"], t["harmed"]) == (3, 1)
    assert (t["rescued_within"], t["rescued_beyond"], t["rescued_unmeasured"]) == (2, 0, 1)
    assert (t["harmed_within"], t["harmed_beyond"], t["harmed_unmeasured"]) == (0, 1, 0)
    s = to_json(noise.summary(matrix, prof, "m"))
    assert s["n_items_with_repeats"] == 4 and s["n_items_noisy"] == 3
    assert [c["n_items_measured"] for c in s["per_config"]] == [3, 2]


def test_cross_model_flows_by_hand(store):
    items = fx.items(5, task_type=["count", "count", "ocr", "ocr", "ocr"])
    items["benchmark"] = ["img", "img", "vid", "vid", "vid"]
    a = fx.responses("base", ["16f"], [[1], [1], [0], [0], [1]]).assign(benchmark=items["benchmark"])
    b = fx.responses("tuned", ["16f"], [[0], [1], [1], [0], [0]]).assign(benchmark=items["benchmark"])
    fx.build(store, a, b, item_rows=items)
    # a command without --benchmark takes the largest (3 items to 2)
    assert focus(store, "base").scope.benchmark == "vid"
    pooled = Resolved(views.single_scope(Scope(None, ("base",))), "default")  # a scope built without a store
    out = to_json(views.crossmodel_view(store, pooled, ("base", "tuned"), "16f"))
    assert (out["rescued"], out["harmed"], out["n_items"]) == (1, 2, 5)
    assert out["harmed_items"] == [{"benchmark": "img", "item_id": "q0"}, {"benchmark": "vid", "item_id": "q4"}]
    by_bench = {r["benchmark"]: (r["n"], r["rescued"], r["harmed"]) for r in out["by_benchmark"]}
    assert by_bench == {"img": (2, 0, 1), "vid": (3, 1, 1)}
    assert out["accuracy_from"] == pytest.approx(0.6) and out["accuracy_to"] == pytest.approx(0.4)
    with pytest.raises(UserError, match="two different models"):
        to_json(views.crossmodel_view(store, focus(store, "base"), ("base", "base"), "16f"))


def test_audit_cli_commands(protocol_store, capsys):
    root = str(protocol_store.root)
    assert main(["audit", "interventions", "--store", root, "--model", "m", "--bootstrap", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["grid"] == GRID and out["protocols"][1]["recovery"]["recovery_rate"] == pytest.approx(2 / 3)
    assert main(["audit", "noise", "--store", root, "--model", "m", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_items_with_repeats"] == 6  # 32f and 64f have a second protocol
    assert main(["audit", "isocompute", "--store", root, "--model", "m", "--json"]) == 0
    assert "--default-pixels" in json.loads(capsys.readouterr().out)["note"]
    assert main(["audit", "crossmodel", "--store", root, "--models", "m", "--config", "16f"]) == 2
    assert "exactly two models" in capsys.readouterr().err
    assert (
        main(
            [
                "audit",
                "crossmodel",
                "--store",
                root,
                "--models",
                "m,m",
                "--config",
                "16f",
                "--config-b",
                "64f",
                "--json",
            ]
        )
        == 0
    )
    flows = json.loads(capsys.readouterr().out)
    assert (flows["rescued"], flows["harmed"]) == (1, 2)  # 16f -> 64f: q5 rescued, q0 and q2 harmed
    pd.testing.assert_index_equal(pd.Index([r["benchmark"] for r in flows["by_benchmark"]]), pd.Index(["bench"]))


def test_submit_many_queues_what_it_can_and_reports_the_rest(tmp_path):
    from store.queue import JobQueue
    from store.rerun_request import RerunRequest
    from tests.rerun_fixtures import build_store

    root = build_store(tmp_path / "s")
    reqs = [RerunRequest("m", "bench", q, "16f/random-s2") for q in ("q1", "q2")]
    out = to_json(rerun.submit_many(root, reqs))
    assert (out["requested"], out["queued"], out["from_store"]) == (2, 1, 0)
    assert [e["item_id"] for e in out["errors"]] == ["q2"]  # its video path escapes the video root
    (job,) = JobQueue(root).list_jobs()
    assert (job.item_id, job.config, job.id) == ("q1", "16f/random-s2", out["job_ids"][0])
