"""The continuous-score summaries on a hand-checked matrix (Token-F1 itself: tests/test_token_f1.py)."""

from __future__ import annotations

import pytest

from backend.analysis.continuous import continuous_metrics
from backend.contracts.base import to_json
from backend.scope.loader import load_matrix
from tests.matrix_fixtures import build_store


def test_continuous_metrics_by_hand(tmp_path):
    # scores       8f   16f   32f
    #   i0        0.2  0.6   0.4
    #   i1        0.5  0.5   0.9
    #   i2        1.0  0.0   0.5
    # means: 8f 1.7/3, 16f 1.1/3, 32f 1.8/3; oracle mean (0.6+0.9+1.0)/3 = 2.5/3; gap 0.7/3.
    # 8f->16f drops: i2 (1/3); 16f->32f drops: i0 (1/3).
    scores = {"m": {"8f": [0.2, 0.5, 1.0], "16f": [0.6, 0.5, 0.0], "32f": [0.4, 0.9, 0.5]}}
    correct = {"m": {c: [0, 0, 0] for c in scores["m"]}}
    mx = load_matrix(build_store(tmp_path / "s", correct, score=scores), ["m"])
    out = to_json(continuous_metrics(mx, "m", bootstrap=200, seed=1))
    assert out["n_items"] == 3 and out["n_unscored"] == 0
    assert out["mean_score"] == pytest.approx({"8f": 1.7 / 3, "16f": 1.1 / 3, "32f": 1.8 / 3}, abs=1e-6)
    assert out["best_fixed"]["config"] == "32f"
    assert out["oracle_gap"] == pytest.approx(0.7 / 3, abs=1e-6)
    assert [t["regression_rate"] for t in out["transitions"]] == pytest.approx([1 / 3, 1 / 3])
    lo, hi = out["ci"]["oracle_gap"]
    assert lo <= out["oracle_gap"] + 1e-6 <= hi + 2e-6
    assert set(out["ci"]) == {"mean_score", "oracle_gap", "regression_rate", "improvement_rate"}
    assert list(out["ci"]["mean_score"]) == ["8f", "16f", "32f"]  # keyed by config
    assert len(out["ci"]["regression_rate"]) == len(out["transitions"])  # one per transition, in order
    for (lo, hi), value in zip(out["ci"]["mean_score"].values(), out["mean_score"].values(), strict=True):
        assert lo <= value + 1e-6 <= hi + 2e-6


def test_no_scores_means_not_available(tmp_path):
    mx = load_matrix(build_store(tmp_path / "s", {"m": {"8f": [1, 0]}}), ["m"])
    assert to_json(continuous_metrics(mx, "m")) is None
