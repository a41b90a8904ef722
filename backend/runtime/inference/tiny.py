"""Tiny randomly initialised models of every family, built fully offline.

Why: tests must exercise the real transformers loading, processor and forward code without any
weights, and the demo store must be able to re-run an item on a CPU-only machine. Each build is
seeded (same weights every time), takes well under a second, and is saved with ``save_pretrained``
so it reloads through ``AutoProcessor`` / ``AutoModelForImageTextToText`` exactly like a checkpoint.
A ``trajaudit.json`` marker says the weights are random, so nothing shown from them passes for a
model's behaviour.

Sizes: frames are encoded at 56 x 56 (LLaVA-NeXT-Video, InternVL) or up to a small per-frame / total
budget (Qwen), the language models have 2 layers of width 64; the configs follow INFERENCE.md.
``scale`` widens every layer and ``vision_layers`` / ``text_layers`` deepen the encoder and the
language model (benchmarks that need a real model's phase proportions: a real vision tower is 24-32
layers deep, so its patch embedding and the pruning signal are a sliver of its time, not the fifth
they are of a 2-layer one); the default builds are unchanged by them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import torch
from transformers import (
    GotOcr2ImageProcessor,
    InternVLConfig,
    InternVLForConditionalGeneration,
    InternVLProcessor,
    InternVLVideoProcessor,
    LlavaNextImageProcessor,
    LlavaNextVideoConfig,
    LlavaNextVideoForConditionalGeneration,
    LlavaNextVideoProcessor,
    LlavaNextVideoVideoProcessor,
    PretrainedConfig,
    PreTrainedModel,
    ProcessorMixin,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2_5_VLProcessor,
    Qwen2VLImageProcessor,
    Qwen2VLVideoProcessor,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
    Qwen3VLVideoProcessor,
)

from backend.runtime.inference.base import FAMILIES, MARKER_FILE
from backend.runtime.inference.tiny_tokenizers import bytelevel_tokenizer, metaspace_tokenizer
from store.errors import UserError

SEED = 0
# The demo model's weight matrices are 8 times the initialiser's (std 0.16 instead of 0.02). Why: at the
# default scale a 2-layer model's letter logits hardly move with its input (every demo item answered D at
# 0.29-0.30 whatever the frames), so a re-run under another budget drew a flat line. Scaled, attention is
# sharp enough that the frames fed move the answer: on the demo's clips about half the items answer
# differently at 8, 16 and 32 frames or under another sampling policy (tests/test_demo_model.py). The
# weights stay random and labelled so.
DEMO_INIT_SCALE = 8.0
SIDE = 56  # frame side the fixed-resolution families encode at
TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
QWEN_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

# ChatML with the vision markup of each family; the Qwen ones wrap the pad token in
# <|vision_start|>...<|vision_end|> as the published templates do (the Qwen3-VL nesting trap).
_CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}{% if c['type'] == 'video' %}VIDEO_MARKUP"
    "{% elif c['type'] == 'image' %}IMAGE_MARKUP{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN_TEMPLATE = _CHATML.replace("VIDEO_MARKUP", "<|vision_start|><|video_pad|><|vision_end|>").replace(
    "IMAGE_MARKUP", "<|vision_start|><|image_pad|><|vision_end|>"
)
INTERNVL_TEMPLATE = _CHATML.replace("VIDEO_MARKUP", "<video>\n").replace("IMAGE_MARKUP", "<image>\n")
# LLaVA-NeXT-Video's template: "USER: <video>\n<text> ASSISTANT:".
LLAVA_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() + ': ' }}"
    "{% if message['content'] is string %}{{ message['content'] + ' ' }}{% else %}"
    "{% for c in message['content'] %}{% if c['type'] == 'video' %}<video>\n"
    "{% elif c['type'] == 'image' %}<image>\n{% endif %}{% endfor %}"
    "{% for c in message['content'] %}{% if c['type'] == 'text' %}{{ c['text'] + ' ' }}{% endif %}{% endfor %}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def _qwen_tokenizer():
    return bytelevel_tokenizer(QWEN_SPECIALS, eos_token="<|im_end|>", pad_token="<|endoftext|>")


class _QwenIds(TypedDict):
    """The special-token ids a Qwen VL config names (typed, so ``**`` into the config is checked per key)."""

    image_token_id: int
    video_token_id: int
    vision_start_token_id: int
    vision_end_token_id: int


def _qwen_ids(tok) -> _QwenIds:
    ids = dict(zip(QWEN_SPECIALS, tok.convert_tokens_to_ids(QWEN_SPECIALS)))
    return {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }


def _text_config(tok, scale: int = 1, layers: int = 2, **extra) -> dict:
    return dict(
        TEXT,
        num_hidden_layers=layers,
        hidden_size=TEXT["hidden_size"] * scale,
        intermediate_size=TEXT["intermediate_size"] * scale,
        vocab_size=len(tok),
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        **extra,
    )


_Config = TypeVar("_Config", bound=PretrainedConfig)


def _qwen_config(
    config_class: Callable[..., _Config],
    tok,
    s: int,
    vision: int,
    text: int,
    *,
    rope: dict[str, Any],
    text_fields: dict[str, Any],
    vision_fields: dict[str, Any],
) -> _Config:
    """A tiny config of either Qwen family: the parts both share (widths that grow with the scale ``s``, the
    M-RoPE sections, the vision tokens' ids) with one family's own rope, text and vision fields."""
    return config_class(
        text_config=_text_config(
            tok,
            s,
            text,
            rope_parameters={"rope_type": "default", "mrope_section": [2 * s, 3 * s, 3 * s], "rope_theta": 1e4, **rope},
            **text_fields,
        ),
        vision_config=dict(
            depth=vision,
            hidden_size=32 * s,
            intermediate_size=64 * s,
            num_heads=2,
            out_hidden_size=64 * s,
            spatial_merge_size=2,
            temporal_patch_size=2,
            **vision_fields,
        ),
        **_qwen_ids(tok),
    )


def _qwen2_5_vl(s: int = 1, vision: int = 2, text: int = 2) -> tuple[PreTrainedModel, ProcessorMixin]:
    tok = _qwen_tokenizer()
    vision_fields = dict(
        patch_size=14,
        tokens_per_second=2,  # as in the published Qwen2.5-VL configs
        window_size=112,
        # every fourth block attends over the whole frame, as the published 32-block encoder's 7, 15, 23, 31
        fullatt_block_indexes=list(range(3, vision, 4)) or [vision - 1],
    )
    config = _qwen_config(Qwen2_5_VLConfig, tok, s, vision, text, rope={}, text_fields={}, vision_fields=vision_fields)
    size = {"shortest_edge": 28 * 28, "longest_edge": 112 * 112}  # per frame
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=size),
        tokenizer=tok,
        video_processor=Qwen2VLVideoProcessor(size=size),
        chat_template=QWEN_TEMPLATE,
    )
    return Qwen2_5_VLForConditionalGeneration(config), processor


def _qwen3_vl(s: int = 1, vision: int = 2, text: int = 2) -> tuple[PreTrainedModel, ProcessorMixin]:
    tok = _qwen_tokenizer()
    config = _qwen_config(
        Qwen3VLConfig,
        tok,
        s,
        vision,
        text,
        rope={"mrope_interleaved": True},
        text_fields={"head_dim": 16 * s},
        vision_fields={"patch_size": 16, "num_position_embeddings": 16, "deepstack_visual_indexes": [1]},
    )
    processor = Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(
            size={"shortest_edge": 32 * 32, "longest_edge": 128 * 128}, patch_size=16
        ),
        tokenizer=tok,
        # longest_edge is a budget over all frames of a video (the Qwen3-VL resolution trap)
        video_processor=Qwen3VLVideoProcessor(size={"shortest_edge": 32 * 32, "longest_edge": 16 * 64 * 64}),
        chat_template=QWEN_TEMPLATE,
    )
    return Qwen3VLForConditionalGeneration(config), processor


def _vit(s: int, layers: int, **family: Any) -> dict:
    """The tiny fixed-resolution ViT of LLaVA-NeXT-Video (CLIP) and InternVL (InternViT): 14 px patches over
    a square side that, like every width, grows with the scale ``s``; ``family``: one encoder's own fields."""
    return dict(
        hidden_size=32 * s,
        intermediate_size=64 * s,
        num_hidden_layers=layers,
        num_attention_heads=2,
        image_size=SIDE * s,
        patch_size=14,
        **family,
    )


def _llava_next_video(s: int = 1, vision: int = 2, text: int = 2) -> tuple[PreTrainedModel, ProcessorMixin]:
    tok = metaspace_tokenizer(["<video>", "<image>"], named_tokens={"video_token": "<video>", "image_token": "<image>"})
    side = SIDE * s
    pinpoints = [[side, 2 * side], [2 * side, side], [2 * side, 2 * side]]
    config = LlavaNextVideoConfig(
        vision_config=_vit(s, vision, model_type="clip_vision_model", projection_dim=32 * s),
        text_config=_text_config(tok, s, text, model_type="llama"),
        image_token_index=tok.image_token_id,
        video_token_index=tok.video_token_id,
        image_grid_pinpoints=pinpoints,
        image_seq_length=(side // 14) ** 2,
        video_seq_length=(side // 14) ** 2 // 4,
    )
    crop = {"height": side, "width": side}
    processor = LlavaNextVideoProcessor(
        video_processor=LlavaNextVideoVideoProcessor(size={"shortest_edge": side}, crop_size=crop),
        image_processor=LlavaNextImageProcessor(
            size={"shortest_edge": side}, crop_size=crop, image_grid_pinpoints=pinpoints
        ),
        tokenizer=tok,
        patch_size=14,
        vision_feature_select_strategy="default",
        chat_template=LLAVA_TEMPLATE,
    )
    return LlavaNextVideoForConditionalGeneration(config), processor


def _internvl(s: int = 1, vision: int = 2, text: int = 2) -> tuple[PreTrainedModel, ProcessorMixin]:
    named = {
        "start_image_token": "<img>",
        "end_image_token": "</img>",
        "context_image_token": "<IMG_CONTEXT>",
        "video_token": "<video>",
    }
    tok = bytelevel_tokenizer(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *named.values(), "<image>"],
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        named_tokens=named,
    )
    side = SIDE * s
    seq_len = (side // 14) ** 2 // 4  # patches per frame after the 0.5 pixel shuffle
    config = InternVLConfig(
        vision_config=_vit(s, vision),
        text_config=_text_config(tok, s, text, model_type="qwen2"),
        image_token_id=tok.context_image_token_id,
        image_seq_length=seq_len,
        downsample_ratio=0.5,
    )
    square = {"height": side, "width": side}
    processor = InternVLProcessor(
        image_processor=GotOcr2ImageProcessor(size=square, crop_to_patches=False),
        tokenizer=tok,
        video_processor=InternVLVideoProcessor(size=square),
        image_seq_length=seq_len,
        chat_template=INTERNVL_TEMPLATE,
    )
    return InternVLForConditionalGeneration(config), processor


_BUILDERS: dict[str, Callable[[int, int, int], tuple[PreTrainedModel, ProcessorMixin]]] = {
    "qwen2_5_vl": _qwen2_5_vl,
    "qwen3_vl": _qwen3_vl,
    "llava_next_video": _llava_next_video,
    "internvl": _internvl,
}


def build_tiny(
    family: str,
    out_dir: Path,
    scale: int = 1,
    vision_layers: int = 2,
    text_layers: int = 2,
    init_scale: float = 1.0,
) -> Path:
    """Build, seed and save a tiny random model of ``family`` (model + processor + marker) into ``out_dir``.

    ``scale`` multiplies every width (language model and vision encoder; heads stay) and the input side
    of the fixed-resolution encoders (LLaVA-NeXT-Video, InternVL); ``vision_layers`` and ``text_layers``
    set the depths (2 each by default), for benchmarks that need the phases of a real model in proportion
    rather than the smallest model. ``init_scale`` multiplies every weight matrix (embeddings, linear and
    patch-embedding weights; norms and biases stay) after the seeded initialisation: see ``DEMO_INIT_SCALE``.
    """
    for name, value in (("scale", scale), ("vision_layers", vision_layers), ("text_layers", text_layers)):
        if not isinstance(value, int) or value < 1:
            raise UserError(f"tiny model {name} must be a positive integer, got {value!r}")
    if family not in _BUILDERS:
        raise UserError(f"unknown model family {family!r}; expected one of {', '.join(FAMILIES)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model, processor = _BUILDERS[family](scale, vision_layers, text_layers)
    if init_scale != 1.0:
        with torch.no_grad():
            for weight in model.parameters():
                if weight.dim() >= 2:
                    weight.mul_(init_scale)
    model.eval()
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    marker = {"family": family, "random_weights": True, "label": "random weights: pipeline demo"}
    if scale != 1:
        marker["scale"] = scale
    if (vision_layers, text_layers) != (2, 2):
        marker |= {"vision_layers": vision_layers, "text_layers": text_layers}
    if init_scale != 1.0:
        marker["init_scale"] = init_scale
    (out_dir / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n")
    return out_dir
