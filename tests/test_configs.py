"""Config labels as METRICS.md spells them, the scale-grid mapping, and the cost partial order."""

import numpy as np
import pytest

from store import configs
from store.configs import ConfigLabelError


@pytest.mark.parametrize(
    "label, frames, pixels, policy",
    [
        ("text", 0, None, "uniform"),
        ("16f", 16, None, "uniform"),
        ("64f@151k", 64, 151_000, "uniform"),
        ("8f@224px", 8, 224 * 224, "uniform"),
        ("32f/random-s1", 32, None, "random-s1"),
        ("64f@151k/dense-start", 64, 151_000, "dense-start"),
        ("128f_input224", 128, 224 * 224, "uniform"),
        ("128f_fallback", 128, None, "uniform"),
    ],
)
def test_parse(label, frames, pixels, policy):
    c = configs.parse(label)
    assert (c.frames, c.pixels, c.policy, c.label) == (frames, pixels, policy, label)


@pytest.mark.parametrize("bad", ["", "0f", "16", "f16", "16f@", "16f@151", "16F", "text/uniform", "16f/Random"])
def test_parse_rejects_with_the_label_named(bad):
    with pytest.raises(ConfigLabelError) as err:
        configs.parse(bad)
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize(
    "name, label",
    [
        ("textonly", "text"),
        ("64f_151k", "64f@151k"),
        ("8f_151k", "8f@151k"),
        ("128f_input224", "128f_input224"),
        ("128f_fallback", "128f_fallback"),
        ("16f", "16f"),
    ],
)
def test_from_scalegrid(name, label):
    assert configs.from_scalegrid(name) == label


def test_cost_and_order():
    assert configs.parse("text").cost == 0
    assert configs.parse("16f").cost is None  # default resolution: comparable only by frames
    assert configs.parse("4f@10k").cost == 40_000
    assert configs.order(["64f", "text", "8f", "16f", "8f"]) == ["text", "8f", "16f", "64f"]
    assert configs.make_label(64, 151, "random-s1") == "64f@151k/random-s1"
    assert configs.make_label(0) == "text"


def test_lower_matrix_is_a_partial_order_by_cost():
    labels = ["text", "8f", "16f", "32f@50k", "16f@100k", "16f/random-s1", "8f@200k"]
    L = configs.lower_matrix(labels)
    ix = {lab: i for i, lab in enumerate(labels)}
    assert L[ix["text"], 1:].all() and not L[:, ix["text"]].any()
    assert L[ix["8f"], ix["16f"]] and not L[ix["16f"], ix["8f"]]
    # equal cost (32 x 50k = 16 x 100k = 8 x 200k): not ordered either way
    for a in ("32f@50k", "16f@100k", "8f@200k"):
        for b in ("32f@50k", "16f@100k", "8f@200k"):
            assert not L[ix[a], ix[b]]
    # same frames, different policy: equal cost, not ordered
    assert not L[ix["16f"], ix["16f/random-s1"]] and not L[ix["16f/random-s1"], ix["16f"]]
    # default resolution vs a stated one: unknown, not ordered
    assert not L[ix["8f"], ix["32f@50k"]] and not L[ix["32f@50k"], ix["8f"]]
    assert not np.any(L & L.T)  # antisymmetric


@pytest.mark.parametrize(
    "spelling, label",
    [
        ("08f", "8f"),
        ("16f/uniform", "16f"),
        ("64f@151.0k", "64f@151k"),
        ("64f@0151k/random-s1", "64f@151k/random-s1"),
        ("32f~prune85", "32f~prune85"),
        ("064f@151k~prune050", "64f@151k~prune50"),
    ],
)
def test_one_canonical_spelling_per_configuration(spelling, label):
    assert configs.canonical(spelling) == label
    assert configs.parse(spelling).label == label


@pytest.mark.parametrize(
    "bad, says",
    [
        ("8f@0k", "pixels per frame"),
        ("8f@0px", "pixels per frame"),
        ("9999999999f", "at most 16,384 frames"),
        ("8f@99999px", "pixels per frame"),
        ("32f~prune0", "keeps 1..99"),
        ("32f~prune100", "keeps 1..99"),
    ],
)
def test_out_of_range_labels_are_refused_with_the_bound(bad, says):
    with pytest.raises(ConfigLabelError) as err:
        configs.parse(bad)
    assert repr(bad) in str(err.value) and says in str(err.value)


def test_prune_suffix_names_its_exact_twin():
    c = configs.parse("32f@151k/random-s1~prune85")
    assert (c.keep, c.is_exact, c.exact_label, c.frames, c.pixels) == (85, False, "32f@151k/random-s1", 32, 151_000)
    assert configs.parse("32f").is_exact
    assert configs.make_label(32, None, None, keep=85) == "32f~prune85"
    assert configs.order(["32f~prune85", "32f", "16f"]) == ["16f", "32f", "32f~prune85"]


@pytest.mark.parametrize(
    "label, step, protocol",
    [
        ("16f", True, "uniform"),
        ("32f@151k", True, "uniform"),
        ("text", False, "uniform"),
        ("64f/random-s1", False, "random-s1"),
        ("64f/dense-start", False, "dense-start"),
        ("32f~prune85", False, "uniform"),  # approximate processing: off the ladder, same sampling
        ("128f_fallback", False, "fallback"),
        ("128f_input224", False, "uniform"),  # an input-size tag is a resolution, not a protocol
    ],
)
def test_budget_step_and_protocol(label, step, protocol):
    c = configs.parse(label)
    assert (c.is_budget_step, c.protocol) == (step, protocol)


def test_ladder_key_is_everything_but_frames():
    assert configs.parse("16f@50k").ladder_key == configs.parse("64f@50k").ladder_key
    assert configs.parse("16f@50k").ladder_key != configs.parse("16f@200k").ladder_key
    assert configs.parse("64f").ladder_key != configs.parse("64f/random-s1").ladder_key
    assert configs.visual(["text", "8f", "64f/random-s1"]) == ["8f", "64f/random-s1"]
