"""Item tags exactly as METRICS.md defines them, on the hand-checked five-item matrix."""

from __future__ import annotations

import numpy as np
import pytest

from backend.scope.items import trajectory_table
from backend.scope.loader import load_matrix
from backend.scope.resolve import Scope
from backend.scope.tags import TAGS, changes, item_tags, tag_masks, top_index
from store.configs import lower_matrix
from store.errors import UserError
from tests.matrix_fixtures import BASIC, build_store

#        text 8f 16f 32f   tags
#   i0    1   1   1   1    stable-correct
#   i1    0   1   0   1    confused, oscillating (3 changes)
#   i2    1   0   0   0    confused, text-overwrite, terminal-regression
#   i3    0   0   1   1    monotone-gain
#   i4    0   0   0   0    stable-wrong (no gain, so not monotone-gain: METRICS.md)
EXPECTED = {
    "i0": ["stable-correct"],
    "i1": ["confused", "oscillating"],
    "i2": ["confused", "text-overwrite", "terminal-regression"],
    "i3": ["monotone-gain"],
    "i4": ["stable-wrong"],
}


@pytest.fixture
def matrix(tmp_path):
    return load_matrix(build_store(tmp_path / "s", BASIC), ["m"])


def test_item_tags_by_hand(matrix):
    tags = item_tags(matrix)
    assert list(tags.columns) == ["model", "benchmark", "item_id", *TAGS, "tags"]
    assert dict(zip(tags["item_id"], tags["tags"], strict=True)) == EXPECTED
    for tag in TAGS:  # the boolean columns agree with the lists
        assert tags[tag].tolist() == [tag in t for t in tags["tags"]]


def test_oscillating_needs_two_changes():
    y = np.array([[1, 0, 0, 0], [1, 0, 1, 1], [0, 1, 0, 1]], dtype=bool)
    assert changes(y).tolist() == [1, 2, 3]
    masks = tag_masks(y, ["text", "8f", "16f", "32f"], lower_matrix(["text", "8f", "16f", "32f"]))
    assert masks["oscillating"].tolist() == [False, True, True]


def test_top_is_the_unique_costliest_else_last():
    assert top_index(["64f", "8f", "16f"], lower_matrix(["64f", "8f", "16f"])) == 0
    unordered = ["8f", "16f@100k"]  # default resolution vs stated pixels: not ordered, two maximal
    assert top_index(unordered, lower_matrix(unordered)) == 1


def test_no_text_no_overwrite_tag(tmp_path):
    mx = load_matrix(build_store(tmp_path / "s", {"m": {"8f": [1, 0], "16f": [0, 0]}}), ["m"])
    assert not item_tags(mx)["text-overwrite"].any()


def test_items_table_with_tag_and_trajectories(matrix, tmp_path):
    store = build_store(tmp_path / "t", BASIC)
    table = trajectory_table(Scope(None, ("m",), tag="confused").resolve(store).load(store), "m")
    assert table["item_id"].to_pylist() == ["i1", "i2"]
    assert table["trajectory"].to_pylist() == [
        {"text": 0, "8f": 1, "16f": 0, "32f": 1},
        {"text": 1, "8f": 0, "16f": 0, "32f": 0},
    ]
    assert table["confidence"].to_pylist()[0] == {"text": None, "8f": None, "16f": None, "32f": None}
    assert len(trajectory_table(matrix, "m")) == 5
    with pytest.raises(UserError, match="unknown trajectory tag"):
        Scope(None, ("m",), tag="confusing")
