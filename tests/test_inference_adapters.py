"""Every family: build offline, reload through the Auto classes, answer MCQA and open-ended items."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from backend.runtime.inference.base import (
    FAMILIES,
    InferenceRequest,
    checkpoint_fingerprint,
    detect_family,
    load_adapter,
    read_marker,
)
from store.errors import UserError
from tests.tiny_models import OPTIONS, request, tiny  # noqa: F401  (tiny is a fixture)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_checkpoint_reloads_through_auto_classes(tiny, family):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    path = tiny.dir(family)
    assert read_marker(path) == {"family": family, "random_weights": True, "label": "random weights: pipeline demo"}
    assert detect_family(path) == family
    model = AutoModelForImageTextToText.from_pretrained(path, local_files_only=True)
    processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    assert model.config.model_type == family
    messages = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": "Which?"}]}]
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert processor.video_token in prompt and "Which?" in prompt


def test_build_is_deterministic(tiny, tmp_path):
    from safetensors.torch import load_file

    from backend.runtime.inference.tiny import build_tiny

    again = build_tiny("qwen2_5_vl", tmp_path / "again")
    first = load_file(tiny.dir("qwen2_5_vl") / "model.safetensors")
    second = load_file(again / "model.safetensors")
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert checkpoint_fingerprint(again) == checkpoint_fingerprint(tiny.dir("qwen2_5_vl"))


def _check_mcqa(result):
    assert result.answer in "ABCD" and set(result.option_probs) == set("ABCD")
    assert sum(result.option_probs.values()) == pytest.approx(1.0, abs=1e-6)
    assert result.confidence == pytest.approx(max(result.option_probs.values()))
    assert result.option_probs[result.answer] == result.confidence
    assert 0 < result.letter_mass <= 1
    assert result.score is None and isinstance(result.raw_output, str)
    assert set(result.timings) == {"preprocess", "vision", "prefill", "generate"}
    assert all(v >= 0 for v in result.timings.values()) and result.timings["prefill"] > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_mcqa_with_frames(tiny, family):
    result = tiny.adapter(family).answer(request(4))
    _check_mcqa(result)
    assert result.timings["vision"] > 0 and result.timings["generate"] == 0
    assert result.token_counts["visual"] > 0 and result.token_counts["generated"] == 0
    assert result.token_counts["prompt"] > result.token_counts["visual"]
    assert result.resolution is not None and all(side > 0 for side in result.resolution)


@pytest.mark.parametrize("family", FAMILIES)
def test_mcqa_text_only(tiny, family):
    result = tiny.adapter(family).answer(request(None))
    _check_mcqa(result)
    assert result.resolution is None and result.timings["vision"] == 0
    assert result.token_counts["visual"] == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_open_ended_generation_is_scored(tiny, family):
    result = tiny.adapter(family).answer(request(4, answer_type="open", references=["a red apple"], max_new_tokens=3))
    assert 0.0 <= result.score <= 1.0
    assert 1 <= result.token_counts["generated"] <= 3
    assert result.timings["generate"] > 0
    assert result.option_probs == {} and result.confidence is None and result.letter_mass is None
    assert result.answer == (result.raw_output.strip() or None)


def test_answers_are_reproducible(tiny):
    adapter = tiny.adapter("qwen3_vl")
    first, second = adapter.answer(request(4)), adapter.answer(request(4))
    assert first.option_probs == second.option_probs and first.raw_output == second.raw_output


@pytest.mark.parametrize("family", FAMILIES)
def test_separate_vision_pass_matches_one_forward(tiny, family):
    """Timing the encoder on its own (mm_encoder_outputs) must not change the logits."""
    adapter = tiny.adapter(family)
    prepared = adapter.prepare(request(4))
    with torch.inference_mode():
        split = adapter.forward(prepared, adapter.encode_vision(prepared.inputs), use_cache=False).logits
        whole = adapter.model(**prepared.inputs, position_ids=prepared.position_ids, logits_to_keep=1).logits
    torch.testing.assert_close(split, whole, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["qwen3_vl", "internvl", "llava_next_video"])
def test_greedy_loop_matches_generate(tiny, family):
    """Where transformers' positions are the right ones, our KV-cache loop equals ``generate``."""
    adapter = tiny.adapter(family)
    prepared = adapter.prepare(request(4, answer_type="open"))
    with torch.inference_mode():
        first = adapter.forward(prepared, adapter.encode_vision(prepared.inputs), use_cache=True)
        ours = adapter.greedy(first, prepared, max_new_tokens=6)
        theirs = adapter.model.generate(**prepared.inputs, max_new_tokens=len(ours), do_sample=False)
    assert ours == theirs[0, prepared.inputs["input_ids"].shape[1] :].tolist()


def test_fingerprint_tracks_config_and_weights(tiny, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tiny.dir("internvl"), copy)
    base = checkpoint_fingerprint(copy)
    assert len(base) == 16 and base == checkpoint_fingerprint(tiny.dir("internvl"))
    config = json.loads((copy / "config.json").read_text())
    config["note"] = "edited"
    (copy / "config.json").write_text(json.dumps(config))
    assert checkpoint_fingerprint(copy) != base
    (copy / "extra.safetensors").write_bytes(b"0")
    assert len({base, checkpoint_fingerprint(copy)}) == 2


def test_load_adapter_refuses_bad_input(tiny, tmp_path):
    with pytest.raises(UserError, match="unknown model family 'gpt'"):
        load_adapter("gpt", tiny.dir("internvl"))
    with pytest.raises(UserError, match="is a internvl model, not qwen3_vl"):
        load_adapter("qwen3_vl", tiny.dir("internvl"))
    with pytest.raises(UserError, match="no config.json"):
        load_adapter("internvl", tmp_path)
    with pytest.raises(UserError, match="unknown dtype"):
        load_adapter("internvl", tiny.dir("internvl"), dtype="int8")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"answer_type": "essay"}, "answer_type 'essay'"),
        ({"options": ["A. only"]}, "2 to 8 options"),
        ({"frames": np.zeros((2, 8, 8, 3), dtype=np.float32)}, "uint8"),
        ({"frames": np.zeros((8, 8, 3), dtype=np.uint8)}, r"\[K, H, W, 3\]"),
        ({"frame_indices": [0]}, "4 frames but 1 frame_indices"),
        ({"pixels": 0}, "must be positive"),
    ],
)
def test_request_validation(changes, message):
    fields = dict(
        question="q",
        options=OPTIONS,
        frames=np.zeros((4, 8, 8, 3), dtype=np.uint8),
        frame_indices=[0, 1, 2, 3],
        native_fps=1.0,
        total_frames=4,
        pixels=None,
    )
    with pytest.raises(UserError, match=message):
        InferenceRequest(**(fields | changes))


def test_qwen_needs_frame_metadata(tiny):
    bare = request(4)
    bare.native_fps = None
    with pytest.raises(UserError, match="needs native_fps"):
        tiny.adapter("qwen2_5_vl").answer(bare)


@pytest.mark.parametrize("family", ["llava_next_video", "internvl"])
def test_fixed_resolution_encoders_take_a_budget_as_information(tiny, family):
    """A budget downsizes the frames first; the encoder still sees its own input size."""
    adapter = tiny.adapter(family)
    full = adapter.prepare(request(4, side=112))
    budget = adapter.prepare(request(4, side=112, pixels=28 * 28))
    assert full.resolution == budget.resolution == (56, 56)
    assert not torch.equal(full.inputs[adapter.pixel_key], budget.inputs[adapter.pixel_key])


def test_bfloat16_weights_keep_float32_scores(tiny):
    adapter = load_adapter("qwen2_5_vl", tiny.dir("qwen2_5_vl"), dtype="bfloat16")
    assert adapter.dtype == torch.bfloat16
    prepared = adapter.prepare(request(8))
    assert prepared.inputs["pixel_values_videos"].dtype == torch.bfloat16
    assert prepared.inputs["second_per_grid_ts"].dtype == torch.float32
    _check_mcqa(adapter.answer(request(8)))
