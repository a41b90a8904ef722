"""C-VISION pruning: exact at keep 1.0, drops exactly the static units, keeps positions, stores ``~prune`` labels.

Every family has a pruned vision path. "Exact" is checked as equality of the option probabilities
(the pruned path at keep 1.0 runs the same kernels on the same rows; observed difference 0.0).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from backend.runtime.inference.pruned import drop_tokens, unit_mask, unit_scores
from backend.runtime.inference.pruning import PruneSpec, keep_mask
from backend.runtime.inference.reuse import answer_group
from store.errors import UserError
from tests.tiny_models import request, tiny  # noqa: F401  (tiny is a fixture)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
PRUNING = ("llava_next_video", "qwen2_5_vl", "qwen3_vl", "internvl")
FIXED_SIZE = ("llava_next_video", "internvl")  # the processor resizes; no pixel budget


def moving_square(k: int = 4, side: int = 64, unit: int = 32) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Grey frames with a white square in one unit per frame, visiting the units clockwise."""
    path = [(0, 0), (0, 1), (1, 1), (1, 0)]
    frames = np.full((k, side, side, 3), 90, dtype=np.uint8)
    for f in range(k):
        r, c = path[f % 4]
        frames[f, r * unit + 4 : r * unit + 20, c * unit + 4 : c * unit + 20] = 250
    return frames, [path[f % 4] for f in range(k)]


def test_spec_parsing_and_selection_rule():
    assert PruneSpec.parse("prune:keep=0.85") == PruneSpec(0.85)
    assert PruneSpec.parse("prune:keep=0.5,threshold=8") == PruneSpec(0.5, 8.0)
    assert PruneSpec.parse("prune:keep=0.85", threshold=3) == PruneSpec(0.85, 3.0)
    for bad in ("prune:keep=1.0", "prune:rate=0.5", "drop:keep=0.5", "prune:keep=0.001"):
        with pytest.raises(UserError):
            PruneSpec.parse(bad)
    scores = np.array([[np.inf, np.inf], [5.0, 0.0], [1.0, 9.0]])
    assert keep_mask(scores, PruneSpec(1.0)).all()
    assert keep_mask(scores, PruneSpec(0.5)).tolist() == [[True, True], [False, False], [False, True]]
    assert keep_mask(scores, PruneSpec(0.5, threshold=0.5)).tolist() == [[True, True], [True, False], [True, True]]
    assert keep_mask(scores, PruneSpec(0.01)).sum() == 2  # the first frame has no previous frame: always kept


def test_scores_are_max_abs_difference_against_the_previous_frame():
    frames, path = moving_square()
    import torch

    rgb = torch.from_numpy(frames.transpose(0, 3, 1, 2).astype(np.float32))
    std = np.full(3, 1 / 255)  # pixels already on the RGB scale
    scores = unit_scores(rgb, std, 32)
    assert np.isinf(scores[0]).all()
    for f in range(1, len(frames)):
        moved = {path[f], path[f - 1]}
        for r in range(2):
            for c in range(2):
                assert scores[f, r, c] == (160.0 if (r, c) in moved else 0.0)
    pairs = unit_scores(rgb, std, 32, frames_per_step=2)  # Qwen's frame pairs: the max over the pair
    assert pairs.shape == (2, 2, 2) and np.isinf(pairs[0]).all() and (pairs[1] == 160.0).sum() == 3


@pytest.mark.parametrize("family", PRUNING)
def test_keep_one_and_threshold_zero_on_noise_equal_the_exact_path(tiny, family):
    adapter = tiny.adapter(family)
    exact = adapter.answer(request(4))
    for spec in (PruneSpec(1.0), PruneSpec(0.5, threshold=0.0)):  # noise frames: no unit is exactly static
        pruned = adapter.answer(dataclasses.replace(request(4), prune=spec))
        assert pruned.option_probs == exact.option_probs
        assert pruned.token_counts == exact.token_counts


@pytest.mark.parametrize("family", PRUNING)
def test_the_pruned_encoder_with_every_unit_kept_is_the_exact_one(tiny, family):
    """``encode_kept`` with nothing dropped gives the exact encoder's features (to float tolerance: the
    Qwen encoders then get their bookkeeping precomputed), so the pruned path differs only in what it drops."""
    import torch

    adapter = tiny.adapter(family)
    inputs = adapter.prepare(request(4)).inputs
    with torch.inference_mode():
        mask = np.ones(adapter.unit_scores(inputs).shape, dtype=bool)
        kind = adapter.vision_kind
        kept, exact = adapter.encode_kept(inputs, mask)[kind], adapter.encode_vision(inputs)[kind]
    pairs = [(kept.pooler_output, exact.pooler_output)]
    pairs += list(
        zip(getattr(kept, "deepstack_features", None) or [], getattr(exact, "deepstack_features", None) or [])
    )
    for a, b in pairs:
        a, b = ((torch.cat(x) if isinstance(x, tuple | list) else x).reshape(-1, _width(x)) for x in (a, b))
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5, rtol=0)


def _width(x) -> int:
    """The feature width of encoder outputs (a tensor, or a tuple of per-video tensors)."""
    return (x[0] if isinstance(x, tuple | list) else x).shape[-1]


@pytest.mark.parametrize("family", PRUNING)
def test_dropped_units_are_exactly_the_static_ones(tiny, family):
    adapter = tiny.adapter(family)
    unit = 28 if family != "qwen3_vl" else 32
    frames, path = moving_square(k=4, side=2 * unit, unit=unit)
    req = dataclasses.replace(request(4), frames=frames, pixels=None if family in FIXED_SIZE else (2 * unit) ** 2)
    prepared = adapter.prepare(req)
    mask = unit_mask(adapter, prepared, PruneSpec(0.01, threshold=1.0))
    if family in FIXED_SIZE:  # one step per frame
        expected = np.ones((4, 2, 2), dtype=bool)
        for f in range(1, 4):
            expected[f] = False
            for r, c in {path[f], path[f - 1]}:
                expected[f, r, c] = True
    else:  # frame pairs (0, 1) and (2, 3): the second step changes where frames 1, 2, 3 have the square
        expected = np.ones((2, 2, 2), dtype=bool)
        expected[1] = False
        for r, c in {path[1], path[2], path[3]}:
            expected[1, r, c] = True
    assert mask.tolist() == expected.tolist()


@pytest.mark.parametrize("family", PRUNING)
def test_pruned_positions_are_the_full_prompts_at_the_kept_tokens(tiny, family):
    adapter = tiny.adapter(family)
    prepared = adapter.prepare(request(4))
    mask = unit_mask(adapter, prepared, PruneSpec(0.5))
    pruned = drop_tokens(adapter, prepared, mask)
    ids = prepared.inputs["input_ids"][0]
    visual = np.isin(ids.numpy(), adapter.visual_token_ids)
    keep = ~visual
    keep[visual] = mask.reshape(-1)
    full = prepared.position_ids
    full = np.arange(len(ids))[None] if full is None else full.numpy()
    assert (pruned.position_ids.numpy() == full[..., keep]).all()
    assert int(np.isin(pruned.inputs["input_ids"][0].numpy(), adapter.visual_token_ids).sum()) == mask.sum()
    # the text after the video starts where it starts in the exact prompt
    assert (pruned.position_ids[..., -1].numpy() == full[..., -1]).all()


@pytest.mark.parametrize("family", PRUNING)
def test_shared_prefix_with_pruning_matches_the_cold_pruned_answers(tiny, family):
    adapter = tiny.adapter(family)
    spec = PruneSpec(0.5)
    reqs = [dataclasses.replace(request(4), question=q, prune=spec) for q in ("Which fruit?", "How many?", "Why?")]
    cold = [adapter.answer(r) for r in reqs]
    shared = answer_group(adapter, reqs, share_prefix=True)
    for a, b in zip(shared, cold, strict=True):
        assert a.answer == b.answer
        assert max(abs(a.option_probs[x] - b.option_probs[x]) for x in a.option_probs) < 1e-5
        assert a.token_counts == b.token_counts


def test_an_approximate_sweep_stores_prune_labels_and_is_verified_against_the_exact_twin(tiny, tmp_path):
    from backend.runtime.sweep.plan import approximate, expand_grid
    from backend.runtime.sweep.runner import SweepRequest, run_sweep
    from store.store import Store
    from tests.test_sweep import build_sweep_store

    root = build_sweep_store(tmp_path, ["llava_next_video"], tiny)
    assert approximate(expand_grid(["text", "4f", "8f"]), "~prune85") == ["4f~prune85", "8f~prune85"]  # no text
    configs = approximate(expand_grid(["text", "4f", "8f"]), PruneSpec(0.85, threshold=40.0).suffix)
    assert configs == ["4f~prune85t40", "8f~prune85t40"]  # the threshold is part of the label
    summary = run_sweep(
        SweepRequest(
            str(root),
            "llava_next_video",
            "bench",
            configs,
            verify=100,
            progress=False,
            item_ids=["v1-1", "v1-2", "v2-1"],
        )
    )
    stored = Store(root).query("SELECT DISTINCT config FROM responses WHERE model = 'llava_next_video'")
    assert sorted(stored["config"]) == configs
    verify = summary.verify
    assert summary.approximate and not summary.withdrawn and verify is not None and verify.cells == 6
    assert {"choice_drift", "correctness_drift", "pathological", "pathological_cold"} <= set(verify.__struct_fields__)
    assert [row.reuse for row in verify.reuse_ceilings][-1] == "prune"


def test_llava_exact_vision_is_transformers_own_and_padding_changes_nothing(tiny, monkeypatch):
    """The exact LLaVA path runs the pruned code with every unit kept (and without the unused last CLIP
    layer): equal to ``get_video_features``; padded buckets equal unpadded ones to float tolerance."""
    import torch

    from backend.runtime.inference import kept_patches

    adapter = tiny.adapter("llava_next_video")
    inputs = adapter.prepare(request(4)).inputs
    with torch.inference_mode():
        ours = adapter.encode_vision(inputs)["video"].pooler_output
        theirs = adapter.model.model.get_video_features(inputs[adapter.pixel_key], return_dict=True).pooler_output
        assert torch.allclose(ours.reshape(theirs.shape), theirs, atol=1e-6)
        mask = unit_mask(adapter, adapter.prepare(request(4)), PruneSpec(0.5))
        kept = adapter._encode(inputs[adapter.pixel_key][0], mask)
        monkeypatch.setattr(kept_patches, "buckets", lambda counts, slack: [torch.arange(len(counts))])  # one batch
        padded = adapter._encode(inputs[adapter.pixel_key][0], mask)
    assert torch.allclose(kept, padded, atol=1e-5)


def test_a_threshold_is_part_of_the_label_and_of_what_a_rerun_runs(tiny, tmp_path):
    """``~prune50t8`` and ``~prune50`` are two protocols with two labels; re-runs answer through ``answer_cold``,
    so a stored label re-runs as itself: ``~prune50`` keeps half the vision tokens of its twin."""
    import json

    from backend.runtime.inference.cell import answer_cold, prune_spec
    from backend.runtime.sweep.plan import expand_grid
    from store.configs import parse
    from tests.rerun_fixtures import write_video

    assert prune_spec(parse("32f~prune50t08.0")) == PruneSpec(0.5, 8.0)
    assert prune_spec(parse("32f~prune50")) == PruneSpec(0.5)
    assert parse("32f~prune50t08.0").label == "32f~prune50t8" and parse("32f~prune50t8").exact_label == "32f"
    assert PruneSpec.parse("prune:keep=0.5", threshold=2.5).suffix == "~prune50t2.5"
    assert expand_grid(["8f~prune85t8"], ["uniform", "random:1"]) == ["8f~prune85t8", "8f/random-s1~prune85t8"]
    write_video(tmp_path / "a.mp4")
    item = {
        "item_id": "i",
        "question": "What colour?",
        "video": "a.mp4",
        "options": json.dumps(["A. Red.", "B. Green.", "C. Blue.", "D. Black."]),
        "references": None,
        "answer_type": "mcqa",
    }
    adapter = tiny.adapter("qwen2_5_vl")

    def visual(label: str) -> int:
        return answer_cold(adapter, item, parse(label), tmp_path, None, None).result.token_counts["visual"]

    exact, rate_only = visual("4f"), visual("4f~prune50")
    assert rate_only == exact // 2
    assert visual("4f~prune50t255") == rate_only  # every unit is a candidate: the rate alone decides
    assert rate_only <= visual("4f~prune50t0") <= exact  # only units that did not change at all may go


def test_approximate_labels_never_enter_a_default_grid():
    """Fully covered ``~prune`` labels (rate-only or with a threshold) stay off the default grid."""
    from backend.scope.resolve import default_grid
    from tests.matrix_fixtures import store_contents

    labels = ["text", "8f", "32f", "8f~prune85", "32f~prune85", "32f~prune85t8", "32f~prune50t0"]
    info = store_contents(coverage={"m": {"b": dict.fromkeys(labels, 10)}}, model_items={"m": {"b": 10}})
    assert default_grid(info, ["m"], "b") == ["text", "8f", "32f"]
