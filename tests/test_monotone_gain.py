"""Issue 11, point 6: ``monotone-gain`` needs a gain (METRICS.md), and the tag and the Items
heatmap's trajectory class follow one rule, on hand-written matrices."""

from __future__ import annotations

import numpy as np

from backend.analysis.flows import CLASSES, trajectory_classes
from backend.scope.tags import monotone_gain, tag_masks
from store.configs import lower_matrix

GRID = ["text", "8f", "16f", "32f"]

#   trajectory    monotone-gain   why
HAND = [
    ([0, 0, 0, 0], False),  # stable-wrong: no gain
    ([1, 1, 1, 1], False),  # stable-correct: no gain
    ([0, 0, 0, 1], True),  # gains at the last step
    ([0, 1, 1, 1], True),  # gains at the first step
    ([0, 1, 0, 1], False),  # a drop in between
    ([1, 0, 0, 0], False),  # only a drop
    ([1, 0, 1, 1], False),  # correct-then-wrong before the gain
]


def test_monotone_gain_by_hand():
    y = np.array([t for t, _ in HAND], dtype=bool)
    assert monotone_gain(y).tolist() == [want for _, want in HAND]
    assert tag_masks(y, GRID, lower_matrix(GRID))["monotone-gain"].tolist() == [want for _, want in HAND]


def test_stable_wrong_never_carries_monotone_gain():
    y = np.zeros((5, 4), dtype=bool)
    masks = tag_masks(y, GRID, lower_matrix(GRID))
    assert masks["stable-wrong"].all() and not masks["monotone-gain"].any()


def test_tag_and_heatmap_class_agree_on_every_trajectory():
    # All 16 trajectories over four configurations, for two models (leading axis).
    codes = np.arange(16)
    y = ((codes[:, None] >> np.arange(3, -1, -1)) & 1).astype(bool)
    tag = tag_masks(np.stack([y, y]), GRID, lower_matrix(GRID))["monotone-gain"]
    cls = np.array(CLASSES)[trajectory_classes(y)]
    assert ((cls == "monotone-gain") == tag[0]).all() and (tag[0] == tag[1]).all()
    # 0001, 0011, 0111: the three one-step gains of a four-config grid.
    assert [int("".join(map(str, r.astype(int))), 2) for r in y[tag[0]]] == [0b0001, 0b0011, 0b0111]
