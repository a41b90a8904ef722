"""The reuse path inside the adapters (``backend.runtime.inference.reuse``), checked against cold ``answer`` calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from backend.runtime.inference import packed_attention as packed_attention_module
from backend.runtime.inference.base import FAMILIES, InferenceRequest
from backend.runtime.inference.kv_prefill import last_layer_kv_only, last_layer_rows
from backend.runtime.inference.normalise import fused_mean_std, normalise_channels_last
from backend.runtime.inference.packed_attention import packed_attention
from backend.runtime.inference.reuse import (
    FrameFeatures,
    ReuseCounters,
    _padded_suffixes,
    answer_group,
    compose,
    prefill_prefix,
    run_suffix,
    run_suffixes,
)
from tests.tiny_models import FPS, OPTIONS, TOTAL, frames, tiny  # noqa: F401  (tiny is a fixture)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
QUESTIONS = ["What is on the table?", "How many dogs are there?", "Which colour is the car at the end?"]
CLIP = frames(16, side=64)


def requests(k: int, pixels: int | None = None, answer_types=("mcqa", "mcqa", "mcqa")) -> list[InferenceRequest]:
    """The three questions on the first ``k`` of 16 nested-uniform frames of one clip."""
    rows = np.arange(k) * 16 // k
    return [
        InferenceRequest(
            question=q,
            options=OPTIONS,
            frames=CLIP[rows],
            frame_indices=(rows * (TOTAL // 16)).tolist(),
            native_fps=FPS,
            total_frames=TOTAL,
            pixels=pixels,
            answer_type=t,
            references=["a red car"],
            max_new_tokens=4,
        )
        for q, t in zip(QUESTIONS, answer_types, strict=True)
    ]


def assert_same_answers(got, cold, tolerance: float = 1e-5) -> None:
    for g, c in zip(got, cold, strict=True):
        assert (g.answer, g.raw_output, g.token_counts) == (c.answer, c.raw_output, c.token_counts)
        assert g.option_probs.keys() == c.option_probs.keys()
        assert all(abs(g.option_probs[x] - c.option_probs[x]) <= tolerance for x in g.option_probs)


@pytest.mark.parametrize("family", FAMILIES)
def test_composed_inputs_are_the_processors_own(tiny, family):
    """One processor call serves three questions: every input and every position as the processor gives them."""
    adapter = tiny.adapter(family)
    batch = requests(8)
    prepared, calls = compose(adapter, batch)
    assert calls == 1
    for request, mine in zip(batch, prepared, strict=True):
        theirs = adapter.prepare(request)
        assert mine.prompt == theirs.prompt and mine.inputs.keys() == theirs.inputs.keys()
        for key, value in theirs.inputs.items():
            assert torch.equal(mine.inputs[key], value), key
        if theirs.position_ids is not None:
            assert torch.equal(mine.position_ids, theirs.position_ids)


@pytest.mark.parametrize("family", FAMILIES)
def test_prefix_reuse_matches_cold_for_mcqa_and_generation(tiny, family):
    adapter = tiny.adapter(family)
    batch = requests(8, answer_types=("mcqa", "open", "mcqa"))
    counters = ReuseCounters()
    got = answer_group(adapter, batch, share_prefix=True, counters=counters)
    assert_same_answers(got, [adapter.answer(r) for r in batch])
    assert counters.prefixes == 1 and counters.processor_calls == 1 and counters.frames_encoded == 8
    assert counters.prefill_tokens < counters.prefill_tokens_cold
    # the cache is rolled back after each question: the order of the questions changes nothing (but the
    # last float bit: packed suffixes sum their attention in another order)
    again = answer_group(adapter, batch[::-1], share_prefix=True)[::-1]
    assert_same_answers(again, got, tolerance=1e-6)


def test_question_before_the_video_falls_back_to_separate_prefixes(tiny, monkeypatch):
    """A template that puts the question first leaves no shared prefix: each question gets its own processor call
    and its own prefix, and the answers are still the cold ones."""
    adapter = tiny.adapter("qwen2_5_vl")

    def question_first(request):
        content = [{"type": "text", "text": request.question}, {"type": "video"}]
        return adapter.processor.apply_chat_template(
            [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
        )

    monkeypatch.setattr(adapter, "render_prompt", question_first)
    monkeypatch.setattr(adapter, "_prompts", {})  # prompts remembered from the real template are not this one's
    batch = requests(4)
    counters = ReuseCounters()
    got = answer_group(adapter, batch, share_prefix=True, counters=counters)
    assert counters.processor_calls == 3 and counters.prefixes == 3 and counters.composed == 0
    assert_same_answers(got, [adapter.answer(r) for r in batch])


@pytest.mark.parametrize("family", ["llava_next_video", "internvl"])
def test_per_frame_features_carry_across_budgets(tiny, family):
    adapter = tiny.adapter(family)
    features, counters = FrameFeatures(), ReuseCounters()
    for k, fresh in ((4, 4), (8, 4), (16, 8), (8, 0)):
        before = counters.frames_encoded
        batch = requests(k)
        got = answer_group(adapter, batch, share_prefix=False, features=features, counters=counters)
        assert counters.frames_encoded - before == fresh  # only frames no smaller budget encoded
        assert_same_answers(got, [adapter.answer(r) for r in batch])
    assert len(features) == 16
    budgeted = answer_group(
        adapter, requests(8, pixels=32 * 32), share_prefix=True, features=features, counters=counters
    )
    assert len(features) == 24  # another pixel budget is another key
    assert_same_answers(budgeted, [adapter.answer(r) for r in requests(8, pixels=32 * 32)])


def test_qwen_never_reuses_frames_across_budgets(tiny):
    adapter = tiny.adapter("qwen3_vl")
    features, counters = FrameFeatures(), ReuseCounters()
    for k in (4, 8):
        answer_group(adapter, requests(k), share_prefix=True, features=features, counters=counters)
    assert len(features) == 0 and counters.frames_encoded == 4 + 8


def test_baseline_switches_are_plain_answer_calls(tiny, monkeypatch):
    adapter = tiny.adapter("internvl")
    calls, answer = [], adapter.answer
    monkeypatch.setattr(adapter, "answer", lambda r: calls.append(r) or answer(r))
    batch, counters = requests(4), ReuseCounters()
    got = answer_group(adapter, batch, share_prefix=False, features=None, counters=counters)
    assert calls == batch and counters.prefixes == 0
    assert counters.processor_calls == counters.processor_calls_cold == 3
    assert_same_answers(got, [answer(r) for r in batch], tolerance=0.0)


def test_frames_processed_once_per_budget_give_the_processors_own_inputs(tiny):
    """LLaVA-NeXT-Video's processor treats frames alone: a frame processed for 4 frames serves 8 and 16."""
    adapter = tiny.adapter("llava_next_video")
    features = FrameFeatures()
    for k in (4, 8, 16):
        for pixels in (None, 48 * 48):
            request = requests(k, pixels)[1]
            got, want = features.prepare(adapter, request), adapter.prepare(request)
            assert got.inputs.keys() == want.inputs.keys()
            for key, value in want.inputs.items():
                assert torch.equal(got.inputs[key], value), key
    assert len(features._pixels) == 2 * 16


def test_prompts_and_letter_ids_are_remembered_per_question(tiny, monkeypatch):
    """A question asked at several budgets renders its template once; the remembered prompt is the template's."""
    adapter = tiny.adapter("qwen3_vl")
    monkeypatch.setattr(adapter, "_prompts", {})
    calls = []
    render = adapter.render_prompt
    monkeypatch.setattr(adapter, "render_prompt", lambda r: calls.append(r) or render(r))
    asked = [*requests(4), *requests(8), *requests(4, answer_types=("open", "mcqa", "mcqa"))]
    text = [InferenceRequest(**{**vars(r), "frames": None, "frame_indices": []}) for r in requests(4)]
    for r in [*asked, *text]:
        assert adapter.prompt(r) == render(r)
    assert len(calls) == 3 + 1 + 3  # three questions; one asked open-ended; three without frames
    letters = [adapter.letters(r, adapter.prompt(r)) for r in requests(8)]
    assert letters == [adapter.letters(r, adapter.prompt(r)) for r in requests(4)]
    assert all(ids and len(ids) == len(OPTIONS) for _, ids in letters)


@pytest.mark.parametrize("layout", ["channels_last", "planes"])
def test_normalising_here_gives_the_processors_bits_and_layout(tiny, layout):
    """The fast rescale-and-normalise equals the processor's own, value for value and stride for stride."""
    video = tiny.adapter("llava_next_video").processor.video_processor
    pixels = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (5, 37, 29, 3), dtype=np.uint8))
    frames = pixels.permute(0, 3, 1, 2) if layout == "channels_last" else pixels.permute(0, 3, 1, 2).contiguous()
    theirs = video.rescale_and_normalize(
        frames, video.do_rescale, video.rescale_factor, video.do_normalize, video.image_mean, video.image_std
    )
    mine = normalise_channels_last(frames, *fused_mean_std(video, frames.device))
    assert torch.equal(mine, theirs) and mine.dtype == theirs.dtype == torch.float32
    assert mine.is_contiguous(memory_format=torch.channels_last)


def test_a_processor_without_per_channel_statistics_normalises_its_own_frames(tiny, monkeypatch):
    """One scalar mean and std (no RGB triple): the processor keeps its own normalisation, same inputs as before."""
    adapter = tiny.adapter("llava_next_video")
    video = adapter.processor.video_processor
    monkeypatch.setattr(video, "image_mean", 0.5)
    monkeypatch.setattr(video, "image_std", 0.25)
    assert fused_mean_std(video, torch.device("cpu")) is None
    request = requests(4)[0]
    got, want = FrameFeatures().prepare(adapter, request), adapter.prepare(request)
    assert torch.equal(got.inputs["pixel_values_videos"], want.inputs["pixel_values_videos"])


@pytest.mark.parametrize("family", FAMILIES)
def test_last_layer_computes_only_what_is_read(tiny, family):
    """The prefix pass (last layer: keys and values only) and a suffix pass (last layer: every key and value,
    the last query only) leave the cache a full forward leaves and the same last-position logits."""
    adapter = tiny.adapter(family)
    with torch.inference_mode():
        (prepared,), _ = compose(adapter, requests(4)[:1])
        encoded = adapter.encode_vision(prepared.inputs)
        split = adapter.prefix_end(prepared.inputs["input_ids"])
        for shortcut in (last_layer_kv_only, last_layer_rows):
            with shortcut(adapter.model) as applied:
                assert applied  # every family's last layer takes the shortcut
        full = adapter.model(
            **{k: v for k, v in prepared.inputs.items() if k != adapter.pixel_key},
            position_ids=prepared.position_ids,
            mm_encoder_outputs=encoded,
            use_cache=True,
            logits_to_keep=1,
        )
        cache = prefill_prefix(adapter, prepared, encoded, split)
        out = run_suffix(adapter, prepared, cache, split)
    assert torch.allclose(out.logits, full.logits, atol=1e-5, rtol=0)
    assert cache.get_seq_length() == full.cache.get_seq_length() == prepared.inputs["input_ids"].shape[-1]
    for mine, theirs in zip(cache.layers, full.cache.layers, strict=True):
        assert torch.allclose(mine.keys, theirs.keys, atol=1e-5, rtol=0)
        assert torch.allclose(mine.values, theirs.values, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_packed_suffixes_equal_the_padded_batch(tiny, family):
    """Three questions packed into one pass on one prefix cache (each seeing the prefix and itself) score
    as the padded batch, the back end used where a custom mask is not taken, does."""
    adapter = tiny.adapter(family)
    with torch.inference_mode():
        prepared, _ = compose(adapter, requests(4))
        encoded = adapter.encode_vision(prepared[0].inputs)
        split = adapter.prefix_end(prepared[0].inputs["input_ids"])
        assert len({p.inputs["input_ids"].shape[-1] for p in prepared}) > 1  # the suffixes differ in length
        packed = run_suffixes(adapter, prepared, prefill_prefix(adapter, prepared[0], encoded, split), split)
        padded = _padded_suffixes(adapter, prepared, prefill_prefix(adapter, prepared[0], encoded, split), split)
    for a, b in zip(packed, padded, strict=True):
        assert a.logits.shape == b.logits.shape == (1, 1, adapter.model.config.get_text_config().vocab_size)
        assert torch.allclose(a.logits, b.logits, atol=1e-5, rtol=0)
    with packed_attention(adapter.model, split) as applied:
        assert applied  # the packed pass above attended the prefix without its mask in every family
    assert adapter.model.model.language_model.config._attn_implementation == "sdpa"  # and put SDPA back


@pytest.mark.parametrize(
    "heads, groups, dtype, tolerance",
    [
        (4, 2, torch.float32, 1e-6),
        (4, 4, torch.float32, 1e-6),
        (6, 1, torch.float32, 1e-6),
        (4, 2, torch.bfloat16, 2e-2),
    ],
)
def test_prefix_and_own_block_merge_to_the_masked_attention(heads, groups, dtype, tolerance):
    """The two flash attentions merged by log-sum-exp equal one SDPA over every key under the packed mask,
    with grouped keys and values (the reference repeats them per query head), in the model's dtype."""
    generator = torch.Generator().manual_seed(0)
    split, lengths, d = 37, torch.tensor([5, 9, 4]), 16
    t = int(lengths.sum())
    query = torch.randn(1, t, heads, d, generator=generator).to(dtype).transpose(1, 2)  # as the layers hand it over
    key, value = (torch.randn(1, groups, split + t, d, generator=generator).to(dtype) for _ in range(2))
    block = torch.repeat_interleave(torch.arange(3), lengths)
    step = torch.arange(t)
    mask = torch.zeros(1, 1, t, split + t, dtype=dtype)
    unseen = (block[:, None] != block[None, :]) | (step[None, :] > step[:, None])
    mask[0, 0, :, split:].masked_fill_(unseen, torch.finfo(dtype).min)
    token = packed_attention_module._SPLIT.set(split)
    try:
        mine, _ = packed_attention_module._attention(None, query, key, value, mask, scaling=0.3)
    finally:
        packed_attention_module._SPLIT.reset(token)
    n = heads // groups
    theirs = torch.nn.functional.scaled_dot_product_attention(
        query, key.repeat_interleave(n, 1), value.repeat_interleave(n, 1), attn_mask=mask, scale=0.3
    ).transpose(1, 2)
    assert mine.shape == theirs.shape == (1, t, heads, d) and mine.dtype == dtype
    assert torch.allclose(mine.float(), theirs.float(), atol=tolerance, rtol=0)


def test_a_request_whose_frames_are_all_encoded_carries_no_pixels(tiny):
    """Largest budget first: 16 frames encoded, then 8 of them need no pixels copied, and answer as cold."""
    adapter = tiny.adapter("llava_next_video")
    features = FrameFeatures()
    with torch.inference_mode():
        answer_group(adapter, requests(16), share_prefix=True, features=features)
        prepared = features.prepare(adapter, requests(8)[0])
    assert prepared.inputs[adapter.pixel_key].shape[:2] == (1, 0)
    assert torch.equal(prepared.inputs["input_ids"], adapter.prepare(requests(8)[0]).inputs["input_ids"])
    got = answer_group(adapter, requests(8), share_prefix=True, features=features)
    assert_same_answers(got, [adapter.answer(r) for r in requests(8)])


@pytest.mark.parametrize("family", FAMILIES)
def test_text_only_questions_share_the_start_of_their_prompts(tiny, family):
    adapter = tiny.adapter(family)
    batch = [
        InferenceRequest(
            q, OPTIONS, None, None, None, None, None, answer_type=t, references=["a car"], max_new_tokens=4
        )
        for q, t in zip(QUESTIONS, ("mcqa", "open", "mcqa"), strict=True)
    ]
    counters = ReuseCounters()
    got = answer_group(adapter, batch, share_prefix=True, counters=counters)
    assert_same_answers(got, [adapter.answer(r) for r in batch])
    assert counters.prefixes == 1 and counters.prefill_tokens < counters.prefill_tokens_cold
