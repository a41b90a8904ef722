"""The transformers 5.x traps of INFERENCE.md, each pinned on the real processors and tiny models.

Every trap test shows both sides where it can: what the adapter feeds, and what the library does
when the workaround is left out (so a library upgrade that removes the trap shows up here too).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from backend.runtime.inference.base import InferenceRequest
from backend.runtime.inference.scoring import letter_token_ids
from backend.runtime.inference.tiny_tokenizers import bytelevel_tokenizer, metaspace_tokenizer
from store.errors import UserError
from tests.tiny_models import FPS, OPTIONS, TOTAL, frames, request, tiny  # noqa: F401  (tiny is a fixture)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
QWEN = ["qwen2_5_vl", "qwen3_vl"]


def _clip_request(k: int, total: int, fps: float = 10.0, **kw) -> InferenceRequest:
    """``k`` frames spaced evenly over a ``total``-frame clip at ``fps``."""
    return InferenceRequest(
        question="What is on the table?",
        options=OPTIONS,
        frames=frames(k),
        frame_indices=(np.arange(k) * total // k).tolist(),
        native_fps=fps,
        total_frames=total,
        pixels=None,
        **kw,
    )


def _meta(indices) -> dict:
    return {"total_num_frames": TOTAL, "fps": FPS, "frames_indices": [int(i) for i in indices]}


def _call_processor(adapter, prompt: str, clip: np.ndarray, **kwargs):
    return adapter.processor(text=[prompt], videos=[clip], return_tensors="pt", cap_pixels_per_frame=True, **kwargs)


# -- 1. own frames: metadata, do_sample_frames=False, every key forwarded -------------------------
@pytest.mark.parametrize("family", QWEN)
def test_own_frames_are_not_resampled(tiny, family):
    prepared = tiny.adapter(family).prepare(request(8))
    assert prepared.inputs["video_grid_thw"][0, 0].item() == 4  # 8 frames -> 4 temporal steps


def test_qwen2_5_time_step_comes_from_the_metadata(tiny):
    prepared = tiny.adapter("qwen2_5_vl").prepare(request(8))
    sampled_fps = 8 / TOTAL * FPS  # 0.8 frames per second were kept
    assert prepared.inputs["second_per_grid_ts"].tolist() == pytest.approx([2 / sampled_fps])


def test_qwen2_5_without_metadata_assumes_24_fps_and_time_collapses(tiny):
    """The trap: with no metadata the processor assumes 24 fps, and 4 temporal steps share one position."""
    adapter = tiny.adapter("qwen2_5_vl")
    prompt = adapter.render_prompt(request(8))
    bare = _call_processor(adapter, prompt, frames(8), do_sample_frames=False)
    assert bare["second_per_grid_ts"].tolist() == pytest.approx([2 / 24])
    inputs = dict(bare)
    video = inputs["mm_token_type_ids"][0] == 2
    collapsed = adapter.position_ids(inputs)[0, 0, video]
    ours = adapter.prepare(request(8)).position_ids[0, 0, video]
    assert collapsed.unique().numel() == 1 and ours.unique().numel() == 4


def test_qwen3_timestamps_come_from_the_metadata(tiny):
    adapter = tiny.adapter("qwen3_vl")
    prepared = adapter.prepare(request(8))
    text = adapter.tokenizer.decode(prepared.inputs["input_ids"][0])
    indices = np.arange(8) * TOTAL // 8  # 0, 12, 25, ... -> pairs averaged, in seconds
    expected = [f"<{(a + b) / 2 / FPS:.1f} seconds>" for a, b in indices.reshape(-1, 2)]
    assert re.findall(r"<[\d.]+ seconds>", text) == expected


def test_qwen3_without_do_sample_frames_resamples(tiny):
    """The trap: Qwen3-VL's processor re-samples at 2 fps unless told not to."""
    adapter = tiny.adapter("qwen3_vl")
    prompt = adapter.render_prompt(request(8))
    meta = _meta(np.arange(8) * TOTAL // 8)
    with pytest.raises(IndexError):  # with metadata: 20 indices into our 8 frames
        _call_processor(adapter, prompt, frames(8), video_metadata=[meta])
    silent = _call_processor(adapter, prompt, frames(8))  # without: frames silently dropped
    assert silent["video_grid_thw"][0, 0].item() == 2
    kept = _call_processor(adapter, prompt, frames(8), video_metadata=[meta], do_sample_frames=False)
    assert kept["video_grid_thw"][0, 0].item() == 4


@pytest.mark.parametrize("family", QWEN)
def test_every_processor_key_reaches_the_model(tiny, family, monkeypatch):
    adapter = tiny.adapter(family)
    processor_keys = set(adapter.prepare(request(4)).inputs)
    expected = {"input_ids", "attention_mask", "mm_token_type_ids", "pixel_values_videos", "video_grid_thw"}
    if family == "qwen2_5_vl":
        expected.add("second_per_grid_ts")
    assert expected <= processor_keys
    seen: dict[str, set[str]] = {}
    forward, encode = adapter.model.forward, adapter.model.model.get_video_features

    def spy_forward(*args, **kwargs):
        seen["forward"] = set(kwargs)
        return forward(*args, **kwargs)

    def spy_encode(*args, **kwargs):
        seen["vision"] = set(kwargs)
        return encode(*args, **kwargs)

    monkeypatch.setattr(adapter.model, "forward", spy_forward)
    monkeypatch.setattr(adapter.model.model, "get_video_features", spy_encode)
    adapter.answer(request(4))
    assert processor_keys <= seen["forward"] | seen["vision"]
    assert "mm_token_type_ids" in seen["forward"] and "position_ids" in seen["forward"]
    assert "pixel_values_videos" in seen["vision"]


# -- 2. per-frame vs total resolution budget -----------------------------------------------------
@pytest.mark.parametrize("family", QWEN)
def test_pixel_budget_is_per_frame_whatever_the_frame_count(tiny, family):
    adapter = tiny.adapter(family)
    budget = 64 * 64
    prepared = [adapter.prepare(request(k, side=112, pixels=budget)) for k in (8, 16)]
    grids = [p.inputs["video_grid_thw"][0, 1:].tolist() for p in prepared]
    results = [adapter.answer(request(k, side=112, pixels=budget)).resolution for k in (8, 16)]
    assert grids[0] == grids[1] and results[0] == results[1]
    height, width = results[0]
    assert height * width <= budget and height == width


@pytest.mark.parametrize(
    ("family", "size", "grids"),
    [
        # Qwen3-VL: longest_edge is a budget over all frames, so 16 frames get a coarser grid (the trap)
        ("qwen3_vl", {"shortest_edge": 32 * 32, "longest_edge": 8 * 64 * 64}, [[4, 4], [2, 2]]),
        # Qwen2.5-VL: longest_edge is per frame
        ("qwen2_5_vl", {"shortest_edge": 28 * 28, "longest_edge": 64 * 64}, [[4, 4], [4, 4]]),
    ],
)
def test_processor_size_semantics(tiny, family, size, grids):
    adapter = tiny.adapter(family)
    found = []
    for k in (8, 16):
        prompt, meta = adapter.render_prompt(request(k)), [_meta(range(k))]
        out = _call_processor(
            adapter, prompt, frames(k, side=112), video_metadata=meta, do_sample_frames=False, size=size
        )
        found.append(out["video_grid_thw"][0, 1:].tolist())
    assert found == grids


# -- 3. Qwen2.5-VL reference rope positions ----------------------------------------------------
def test_qwen2_5_positions_restart_after_the_last_vision_position(tiny):
    """8 frames at 2 frames/s: 4 time steps 1 s apart, 2 positions per second, a 2 x 2 token grid."""
    adapter = tiny.adapter("qwen2_5_vl")
    req = _clip_request(8, total=40)  # 8 of 40 frames at 10 fps: 2 frames/s -> second_per_grid_t = 1.0
    prepared = adapter.prepare(req)
    assert prepared.inputs["second_per_grid_ts"].tolist() == [1.0]
    types = prepared.inputs["mm_token_type_ids"][0]
    length = types.numel()
    start = int((types == 2).nonzero()[0])  # first video token
    after = length - start - 16  # 4 steps x 2 x 2 tokens
    t = np.repeat([0, 2, 4, 6], 4)  # time step x tokens_per_second(2) x 1 s
    h = np.tile([0, 0, 1, 1], 4)
    w = np.tile([0, 1, 0, 1], 4)
    vision = np.stack([t, h, w]) + start
    expected = np.concatenate(
        [
            np.tile(np.arange(start), (3, 1)),
            vision,
            np.tile(np.arange(after) + start + 7, (3, 1)),  # max vision position (start + 6) + 1
        ],
        axis=1,
    )
    np.testing.assert_array_equal(prepared.position_ids[:, 0].numpy(), expected)

    library, _ = adapter.model.model.get_rope_index(
        prepared.inputs["input_ids"],
        prepared.inputs["mm_token_type_ids"],
        video_grid_thw=prepared.inputs["video_grid_thw"],
        second_per_grid_ts=prepared.inputs["second_per_grid_ts"],
    )
    np.testing.assert_array_equal(library[:, 0, : start + 16].numpy(), expected[:, : start + 16])
    # 5.x restarts the text at start + max(h, w) / merge = start + 2: on top of the video's time steps
    assert library[0, 0, start + 16].item() == start + 2 != expected[0, start + 16]

    with torch.inference_mode():
        encoded = adapter.encode_vision(prepared.inputs)
        ours = adapter.forward(prepared, encoded, use_cache=False).logits
        theirs = adapter.model(**prepared.inputs, logits_to_keep=1).logits
    assert not torch.allclose(ours, theirs)


@pytest.mark.parametrize("family", QWEN)
@pytest.mark.parametrize("k", [4, None])
def test_qwen_positions_continue_while_generating(tiny, monkeypatch, family, k):
    """Every generated token gets an explicit position after the prompt's last one (no rope_deltas state)."""
    adapter = tiny.adapter(family)
    prepared = adapter.prepare(request(k, answer_type="open"))
    steps = []
    forward = adapter.model.forward

    def spy(*args, **kwargs):
        steps.append(kwargs["position_ids"])
        return forward(*args, **kwargs)

    monkeypatch.setattr(adapter.model, "forward", spy)
    with torch.inference_mode():
        first = adapter.forward(prepared, adapter.encode_vision(prepared.inputs), use_cache=True)
        adapter.greedy(first, prepared, max_new_tokens=3)
    top = int(prepared.position_ids.max())
    decoded = [step[:, 0, 0].tolist() for step in steps[1:]]
    assert decoded == [[top + i] * 3 for i in range(1, len(decoded) + 1)]


# -- 4. Qwen3-VL nested vision markers ---------------------------------------------------------
def test_qwen3_one_vision_block_per_time_step(tiny):
    adapter = tiny.adapter("qwen3_vl")
    start_id, end_id = adapter.processor.vision_start_token_id, adapter.processor.vision_end_token_id
    prepared = adapter.prepare(request(8))
    ids = prepared.inputs["input_ids"][0].tolist()
    steps = prepared.inputs["video_grid_thw"][0, 0].item()
    assert ids.count(start_id) == ids.count(end_id) == steps
    opened = np.cumsum([1 if i == start_id else -1 if i == end_id else 0 for i in ids])
    assert opened.max() == 1  # never nested

    raw_prompt = super(type(adapter), adapter).render_prompt(request(8))  # the template left alone
    nested = _call_processor(adapter, raw_prompt, frames(8), video_metadata=[_meta(range(8))], do_sample_frames=False)
    assert nested["input_ids"][0].tolist().count(start_id) == steps + 1


# -- 5. letter token ids per tokenizer ---------------------------------------------------------
def test_letter_ids_byte_level_after_a_newline_are_bare_letters():
    specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
    tok = bytelevel_tokenizer(specials, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    prompt = "<|im_start|>user\nWhich?<|im_end|>\n<|im_start|>assistant\n"
    ids = letter_token_ids(tok, prompt, list("ABCD"))
    assert tok.convert_ids_to_tokens(ids) == list("ABCD")
    # the literal " A" rule would score "ĠA", a token the model does not emit after a newline
    naive = tok(prompt + " A", add_special_tokens=False)["input_ids"][-1]
    assert tok.convert_ids_to_tokens(naive) == "ĠA" and naive != ids[0]
    after_colon = letter_token_ids(tok, "Answer:", list("AB"))
    assert tok.convert_ids_to_tokens(after_colon) == ["ĠA", "ĠB"]


def test_letter_ids_sentencepiece_after_a_colon_carry_the_space_marker():
    tok = metaspace_tokenizer(["<video>"])
    ids = letter_token_ids(tok, "USER: <video>\nWhich? ASSISTANT:", list("ABCD"))
    assert tok.convert_ids_to_tokens(ids) == ["▁A", "▁B", "▁C", "▁D"]
    bare = letter_token_ids(tok, "Which?\n", list("AB"))
    assert tok.convert_ids_to_tokens(bare) == ["A", "B"]


@pytest.mark.parametrize(("family", "first"), [("qwen3_vl", "A"), ("internvl", "A"), ("llava_next_video", "▁A")])
def test_adapters_score_the_token_their_model_would_emit(tiny, family, first):
    adapter = tiny.adapter(family)
    prompt = adapter.prepare(request(None)).prompt
    ids = letter_token_ids(adapter.tokenizer, prompt, list("ABCD"))
    assert adapter.tokenizer.convert_ids_to_tokens(ids)[0] == first


def test_letter_scoring_refuses_a_letter_split_in_two():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {s: i for i, s in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=backend)
    with pytest.raises(UserError, match="not one token"):
        letter_token_ids(tok, "Answer:", list("AB"))


# -- 6. odd frame counts -------------------------------------------------------------------------
def _last_step_halves(adapter, prepared) -> tuple[torch.Tensor, torch.Tensor]:
    """The two temporal halves of the last time step's patches (fused frames)."""
    t, h, w = prepared.inputs["video_grid_thw"][0].tolist()
    video = adapter.processor.video_processor
    patches = prepared.inputs["pixel_values_videos"][(t - 1) * h * w :]
    patches = patches.view(-1, 3, video.temporal_patch_size, video.patch_size, video.patch_size)
    return patches[:, :, 0], patches[:, :, 1]


@pytest.mark.parametrize("family", QWEN)
def test_odd_frame_count_repeats_the_last_frame(tiny, family):
    adapter = tiny.adapter(family)
    prepared = adapter.prepare(request(5))
    assert prepared.inputs["video_grid_thw"][0, 0].item() == 3
    first, second = _last_step_halves(adapter, prepared)
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    even = adapter.prepare(request(6))
    first, second = _last_step_halves(adapter, even)
    assert not torch.equal(first, second)


def test_qwen2_5_takes_a_single_frame_twice(tiny):
    adapter = tiny.adapter("qwen2_5_vl")
    prepared = adapter.prepare(request(1))
    assert prepared.inputs["video_grid_thw"][0, 0].item() == 1
    assert adapter.answer(request(1)).answer in "ABCD"


def test_qwen3_refuses_a_single_frame_clearly(tiny):
    adapter = tiny.adapter("qwen3_vl")
    with pytest.raises(UserError, match="at least 2 frames"):
        adapter.answer(request(1))
    prompt = adapter.render_prompt(request(1))
    with pytest.raises(ValueError, match="must be larger than temporal_factor"):  # the library's own refusal
        _call_processor(adapter, prompt, frames(1), video_metadata=[_meta([0])], do_sample_frames=False)


@pytest.mark.parametrize("family", ["llava_next_video", "internvl"])
def test_frame_by_frame_encoders_take_odd_counts(tiny, family):
    adapter = tiny.adapter(family)
    five, four = adapter.answer(request(5)), adapter.answer(request(4))
    assert five.token_counts["visual"] * 4 == four.token_counts["visual"] * 5
