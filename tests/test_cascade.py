"""Confidence cascade: hand-checked costs with and without sharing, the frontier, missing confidences."""

from __future__ import annotations

import json

import numpy as np
import pytest

from backend import views
from backend.analysis import cascade
from backend.cli import main
from store.errors import UserError
from tests import policy_fixtures as fx

LADDER = ["16f", "32f", "64f", "128f"]
# Four items; at t = 0.8 they stop at 16f, 32f, 64f and 128f respectively.
CORRECT = [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 1], [0, 0, 1, 1]]
CONF = [[0.9, 0.2, 0.2, 0.2], [0.5, 0.85, 0.7, 0.6], [0.3, 0.4, 0.95, 0.2], [0.1, 0.2, 0.3, 0.6]]


@pytest.fixture
def hand_store(store):
    return fx.build(store, fx.responses("m", LADDER, CORRECT, CONF))


def _ladder(hand_store):
    return views.model_ladder(hand_store, "m", LADDER)


def test_one_threshold_by_hand(hand_store):
    out = cascade.evaluate(_ladder(hand_store), 0.8, bootstrap=0)
    assert out.n_items == 4 and out.ladder == LADDER
    assert out.accuracy == 3 / 4  # right, right, wrong (64f), right
    assert out.mean_frames_shared == (16 + 32 + 64 + 128) / 4
    assert out.mean_frames_unshared == (16 + (16 + 32) + (16 + 32 + 64) + (16 + 32 + 64 + 128)) / 4
    assert out.cost_vs_top_shared == 60 / 128
    stops = cascade.item_stops(_ladder(hand_store), 0.8)
    assert stops.stop.tolist() == LADDER and stops.frames_unshared.tolist() == [16, 48, 112, 240]


def test_sweep_finds_the_cheapest_threshold_matching_the_top(hand_store):
    out = cascade.sweep(_ladder(hand_store), bootstrap=200)
    assert out.top_accuracy == 3 / 4
    assert [p.threshold for p in out.frontier] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.85, 0.9, 0.95]
    by_t = {p.threshold: p for p in out.frontier}
    assert by_t[0.1].accuracy == 2 / 4 and by_t[0.1].mean_frames_shared == 16  # all stop at 16f
    assert by_t[0.3].accuracy == 3 / 4 and by_t[0.3].mean_frames_shared == (16 + 16 + 16 + 64) / 4
    m = out.matching
    assert m.threshold == 0.3 and m.saving == 1 - 28 / 128
    lo, hi = m.accuracy_ci
    assert 0 <= lo <= m.accuracy <= hi <= 1
    assert [f.accuracy for f in out.fixed] == [0.5, 0.5, 0.5, 0.75]


def test_frontier_cost_is_monotone_in_threshold_and_equals_brute_force():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, (300, 4)).astype(np.int8)
    conf = rng.random((300, 4)).astype(np.float32).round(2)
    frames = np.array([8, 16, 32, 64])
    t = cascade.frontier_thresholds(conf, 50)
    totals = cascade.curve(y, conf, frames, t)
    assert np.all(np.diff(totals["frames_shared"]) >= 0) and np.all(np.diff(totals["frames_unshared"]) >= 0)
    for k in (0, len(t) // 2, len(t) - 1):
        stops = cascade.stop_rungs(conf, t[k])
        assert totals["n_correct"][k] == y[np.arange(300), stops].sum()
        assert totals["frames_shared"][k] == frames[stops].sum()
        assert totals["frames_unshared"][k] == np.cumsum(frames)[stops].sum()


def test_items_without_confidence_are_left_out_and_counted(store):
    conf = np.array(CONF)
    conf[1, 2] = np.nan
    fx.build(store, fx.responses("m", LADDER, CORRECT, conf))
    out = cascade.evaluate(views.model_ladder(store, "m", LADDER), 0.8, bootstrap=0)
    assert out.n_items == 3 and out.n_without_confidence == 1


def test_missing_confidences_are_reported_not_invented(store):
    fx.build(store, fx.responses("m", LADDER, CORRECT))
    with pytest.raises(UserError, match="no confidences stored for model 'm' at 16f, 32f, 64f, 128f"):
        cascade.sweep(views.model_ladder(store, "m", LADDER))


def test_ladder_must_increase_in_cost():
    with pytest.raises(UserError, match="'64f' is not cheaper than '32f'"):
        cascade.check_ladder(["16f", "64f", "32f"])
    with pytest.raises(UserError, match="at least two"):
        cascade.check_ladder(["16f"])


def test_cli_json_matches_the_backend(hand_store, capsys):
    root = str(hand_store.root)
    assert (
        main(
            [
                "cascade",
                "--store",
                root,
                "--model",
                "m",
                "--ladder",
                ",".join(LADDER),
                "--threshold",
                "0.8",
                "--bootstrap",
                "0",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {
        k: out[k]
        for k in (
            "threshold",
            "n_items",
            "accuracy",
            "mean_frames_shared",
            "mean_frames_unshared",
            "cost_vs_top_shared",
        )
    } == {
        "threshold": 0.8,
        "n_items": 4,
        "accuracy": 0.75,
        "mean_frames_shared": 60.0,
        "mean_frames_unshared": 104.0,
        "cost_vs_top_shared": 60 / 128,
    }
    assert main(["cascade", "--store", root, "--model", "m", "--ladder", "16f,32f,64f,128f", "--sweep", "--json"]) == 0
    swept = json.loads(capsys.readouterr().out)
    assert swept["matching"]["threshold"] == 0.3 and len(swept["frontier"]) == 9
    assert main(["cascade", "--store", root, "--model", "m", "--ladder", "32f,16f", "--sweep"]) == 2
    assert "not cheaper" in capsys.readouterr().err


def test_every_policy_shares_the_cascade_denominator(store, capsys):
    """A fifth item answered at every budget but with no confidence (wrong at 128f): on all five items 128f reads
    3/5, on the cascade's four 3/4. The fixed points, the oracle, the predictor and the cascade are all on the
    four, so the point "matching 128f" sits at 128f's accuracy, and the CLI twins state that denominator."""
    correct = [*CORRECT, [1, 0, 1, 0]]
    conf = [*CONF, [np.nan] * 4]
    item_rows = fx.items(5, question=["what colour", "how many", "what colour", "how many", "why"])
    fx.build(store, fx.responses("m", LADDER, correct, conf), item_rows=item_rows)
    ladder = views.model_ladder(store, "m", LADDER)
    assert len(ladder.items) == 5
    swept = cascade.sweep(ladder, bootstrap=0)
    refs = views.fixed_budgets(ladder)
    fixed_top = next(r for r in refs if r.policy == "fixed" and r.label == "128f")
    assert swept.n_items == 4 and {r.n_items for r in refs} == {4}
    assert fixed_top.accuracy == swept.top_accuracy == 3 / 4
    assert swept.matching.accuracy == fixed_top.accuracy
    from backend.analysis import predictor

    report = predictor.report(ladder, n_folds=2)
    assert {r.n_items for r in report.frontier} == {4} and report.n_without_confidence == 1
    said = "on 4 items, those with a confidence at every budget of 16f, 32f, 64f, 128f (1 of the 5"
    assert swept.denominator == report.denominator == views.policy_denominator(ladder)
    assert swept.denominator.startswith(said)
    flags = ["--store", str(store.root), "--model", "m", "--ladder", ",".join(LADDER)]
    for argv in (["cascade", *flags, "--sweep", "--bootstrap", "0"], ["predictor", *flags, "--folds", "2"]):
        assert main(argv) == 0
        assert said in capsys.readouterr().out
        assert main([*argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["denominator"].startswith(said)


def test_without_any_confidence_the_denominator_is_every_answered_item(store):
    fx.build(store, fx.responses("m", LADDER, CORRECT))
    ladder = views.model_ladder(store, "m", LADDER)
    assert views.policy_denominator(ladder) == "on 4 items, the items answered at every budget of 16f, 32f, 64f, 128f"
    assert {r.n_items for r in views.fixed_budgets(ladder)} == {4}
