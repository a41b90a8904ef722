"""Sampling policies: the formulas each harness uses, nesting, reproducibility, clamping, errors."""

from __future__ import annotations

import numpy as np
import pytest

from backend.runtime.sampling import (
    NAMES,
    POLICIES,
    config_indices,
    frame_indices,
    label_policy,
    policy_name,
    spell,
)
from backend.videos.decode import timestamps
from store.configs import takes_seed
from store.errors import UserError


def test_uniform_is_nested_for_powers_of_two():
    n = 1234
    i16, i32, i64 = (set(frame_indices("uniform", n, 30.0, k).tolist()) for k in (16, 32, 64))
    assert i16 < i32 < i64
    assert len(i16) == 16 and len(i64) == 64


def test_uniform_formula():
    np.testing.assert_array_equal(frame_indices("uniform", 10, 1.0, 4), [0, 2, 5, 7])


def test_midpoint_formula():
    # segment midpoints of 4 segments of 10 frames: 1.25, 3.75, 6.25, 8.75 -> floor
    np.testing.assert_array_equal(frame_indices("midpoint", 10, 1.0, 4), [1, 3, 6, 8])


def test_vlmeval_formula():
    n, k = 300, 8
    expected = [int(i * n / (k + 1)) for i in range(1, k + 1)]
    np.testing.assert_array_equal(frame_indices("vlmeval", n, 30.0, k), expected)


def test_random_is_seeded_sorted_unique():
    a = frame_indices("random-s3", 500, 25.0, 32)
    b = frame_indices("random", 500, 25.0, 32, seed=3)
    c = frame_indices("random-s4", 500, 25.0, 32)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len(np.unique(a)) == 32 and np.all(np.diff(a) > 0)
    assert a.dtype == np.int64


def test_random_seed_conflict_is_refused():
    with pytest.raises(UserError, match="seed 3"):
        frame_indices("random-s3", 500, 25.0, 32, seed=5)


def test_dense_start_stays_in_first_quarter():
    idx = frame_indices("dense-start", 400, 25.0, 16)
    assert idx.max() < 100 and len(idx) == 16
    # the budget covers the quarter: the first K consecutive frames
    np.testing.assert_array_equal(frame_indices("dense-start", 40, 25.0, 12), np.arange(12))


def test_fps_policy_rate_and_cap():
    # 10 s at 30 fps, 1 frame per second -> t = 0..9 s
    np.testing.assert_array_equal(frame_indices("fps-1", 300, 30.0, 64), np.arange(10) * 30)
    capped = frame_indices("fps-1", 300, 30.0, 4)
    assert len(capped) == 4 and set(capped.tolist()) <= set((np.arange(10) * 30).tolist())
    assert len(frame_indices("fps-0.5", 300, 30.0, 64)) == 5


@pytest.mark.parametrize("policy", ["uniform", "midpoint", "vlmeval", "random-s1", "dense-start"])
def test_budget_above_length_returns_every_frame_once(policy):
    np.testing.assert_array_equal(frame_indices(policy, 12, 8.0, 64), np.arange(12))


@pytest.mark.parametrize("policy", ["uniform", "midpoint", "vlmeval", "random-s2", "dense-start", "fps-3"])
def test_indices_sorted_unique_in_range(policy):
    idx = frame_indices(policy, 97, 12.0, 16)
    assert np.all(np.diff(idx) > 0) and idx.min() >= 0 and idx.max() < 97


def test_unknown_policy_names_it_and_lists_known():
    with pytest.raises(UserError) as err:
        frame_indices("zigzag", 100, 25.0, 8)
    msg = str(err.value)
    assert "'zigzag'" in msg and "midpoint" in msg and "random-s<seed>" in msg


def test_bad_budget_and_video_are_user_errors():
    with pytest.raises(UserError, match="budget"):
        frame_indices("uniform", 100, 25.0, 0)
    with pytest.raises(UserError, match="0 frames"):
        frame_indices("uniform", 0, 25.0, 8)


def test_policy_name_parsing():
    assert policy_name("random-s3") == ("random", 3)
    assert policy_name("random") == ("random", None)
    assert policy_name("fps-2") == ("fps", None)
    assert policy_name("dense-start") == ("dense-start", None)
    assert {policy_name(p)[0] for p in ["uniform", "midpoint", "vlmeval", "random-s1", "dense-start", "fps-1"]} == set(
        POLICIES
    )


def test_spellings_round_trip_through_policy_name():
    assert NAMES == tuple(POLICIES) and "fps" in NAMES
    assert [spell(n, seed=2, rate=0.5) for n in NAMES] == [
        "uniform",
        "midpoint",
        "vlmeval",
        "random-s2",
        "dense-start",
        "fps-0.5",
    ]
    assert spell("random") == "random" and spell("fps", rate=1.0) == "fps-1"
    assert policy_name(spell("random", seed=7)) == ("random", 7)
    with pytest.raises(UserError, match="needs a rate"):
        spell("fps")
    with pytest.raises(UserError, match="unknown sampling policy"):
        spell("sparse")


def test_the_sweep_shorthand_reads_as_the_label_spelling():
    assert label_policy(" random:3 ") == "random-s3"
    assert label_policy("dense-start") == "dense-start"
    with pytest.raises(UserError, match="known policies"):
        label_policy("random:x")


def test_only_a_bare_random_takes_its_seed_from_outside():
    assert takes_seed("random") and not takes_seed("random-s1") and not takes_seed("uniform")


def test_config_label_policy_maps_onto_policies():
    expected = frame_indices("random-s1", 1000, 25.0, 64)
    np.testing.assert_array_equal(config_indices("64f/random-s1", 1000, 25.0), expected)
    np.testing.assert_array_equal(config_indices("16f@200k", 1000, 25.0), frame_indices("uniform", 1000, 25.0, 16))
    assert len(config_indices("text", 1000, 25.0)) == 0
    with pytest.raises(UserError):
        config_indices("sixteen", 1000, 25.0)


def test_timestamps_are_index_over_fps():
    np.testing.assert_allclose(timestamps(np.array([0, 15, 30]), 30.0), [0.0, 0.5, 1.0])


def test_midpoint_is_no_harnesss_rule_and_lmms_eval_samples_a_linspace():
    """The question docs and code once disagreed on: what lmms-eval samples. Its decoders
    (``lmms_eval/models/model_utils/load_video.py``) take ``np.linspace(0, T - 1, N, dtype=int)``, which is
    ``store.samplers``' ``lmms-eval``; InternVL's ``get_index`` (lmms-eval's ``lmms_eval/models/internvl2.py``)
    takes ``int(start + seg / 2 + np.round(seg * k))`` with ``seg = (T - 1 - start) / N``. The ``midpoint``
    policy is neither, as its docstring says."""
    from store.samplers import SAMPLERS

    n, k = 300, 8
    lmms_eval = np.linspace(0, n - 1, k, dtype=int)
    internvl_seg = (n - 1) / k
    internvl = np.array([int(internvl_seg / 2 + np.round(internvl_seg * i)) for i in range(k)])
    np.testing.assert_array_equal(SAMPLERS["lmms-eval"](n, 30.0, k), lmms_eval)
    np.testing.assert_array_equal(lmms_eval, [0, 42, 85, 128, 170, 213, 256, 299])  # ../shared/notes/VIDEOS.md
    midpoint = frame_indices("midpoint", n, 30.0, k)
    np.testing.assert_array_equal(midpoint, [18, 56, 93, 131, 168, 206, 243, 281])
    np.testing.assert_array_equal(internvl, [18, 55, 93, 130, 168, 205, 242, 280])
    assert not np.array_equal(midpoint, lmms_eval) and not np.array_equal(midpoint, internvl)
