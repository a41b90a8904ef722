"""Full-size models with random weights, built from their published config numbers (no download).

Why: speed and memory measurements (phase shares, cache reuse) need the real layer sizes, but not
the real weights; a machine without the checkpoints can still measure them. Construct on a GPU for
benchmarks, or on the ``meta`` device to check shapes and parameter counts without allocating.
Never run them for answers: the weights are noise.

Config numbers are those of the checkpoints' ``config.json`` on the Hugging Face Hub:
``Qwen/Qwen2.5-VL-7B-Instruct``, ``Qwen/Qwen3-VL-8B-Instruct``, ``llava-hf/LLaVA-NeXT-Video-7B-hf``
and ``OpenGVLab/InternVL3-8B-hf`` (published parameter counts 8.29B, 8.77B, 7.06B, 7.94B).
Fields not listed keep transformers' defaults, which match those files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import (
    InternVLConfig,
    InternVLForConditionalGeneration,
    LlavaNextVideoConfig,
    LlavaNextVideoForConditionalGeneration,
    PreTrainedModel,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
)

from backend.runtime.inference.hf import TORCH_DTYPES, HFAdapter
from store.errors import UserError

_QWEN_TOKENS = dict(
    image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653
)

# preset -> (family, model class, config class, config kwargs)
PRESETS: dict[str, tuple[str, type[PreTrainedModel], type, dict[str, Any]]] = {
    "qwen2.5-vl-7b": (
        "qwen2_5_vl",
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLConfig,
        dict(
            text_config=dict(
                vocab_size=152064,
                hidden_size=3584,
                intermediate_size=18944,
                num_hidden_layers=28,
                num_attention_heads=28,
                num_key_value_heads=4,
                max_position_embeddings=128000,
                rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1e6},
                bos_token_id=151643,
                eos_token_id=151645,
            ),
            vision_config=dict(
                depth=32,
                hidden_size=1280,
                intermediate_size=3420,
                num_heads=16,
                out_hidden_size=3584,
                patch_size=14,
                spatial_merge_size=2,
                temporal_patch_size=2,
                tokens_per_second=2,
                window_size=112,
                fullatt_block_indexes=[7, 15, 23, 31],
            ),
            **_QWEN_TOKENS,
        ),
    ),
    "qwen3-vl-8b": (
        "qwen3_vl",
        Qwen3VLForConditionalGeneration,
        Qwen3VLConfig,
        dict(
            text_config=dict(
                vocab_size=151936,
                hidden_size=4096,
                intermediate_size=12288,
                num_hidden_layers=36,
                num_attention_heads=32,
                num_key_value_heads=8,
                head_dim=128,
                max_position_embeddings=262144,
                rope_parameters={
                    "rope_type": "default",
                    "mrope_section": [24, 20, 20],
                    "mrope_interleaved": True,
                    "rope_theta": 5e6,
                },
            ),
            vision_config=dict(
                depth=27,
                hidden_size=1152,
                intermediate_size=4304,
                num_heads=16,
                out_hidden_size=4096,
                patch_size=16,
                spatial_merge_size=2,
                temporal_patch_size=2,
                num_position_embeddings=2304,
                deepstack_visual_indexes=[8, 16, 24],
            ),
            **_QWEN_TOKENS,
        ),
    ),
    "llava-next-video-7b": (
        "llava_next_video",
        LlavaNextVideoForConditionalGeneration,
        LlavaNextVideoConfig,
        dict(
            # vision: CLIP ViT-L/14 at 336 px (the config class's own defaults)
            text_config=dict(
                model_type="llama",
                vocab_size=32064,
                hidden_size=4096,
                intermediate_size=11008,
                num_hidden_layers=32,
                num_attention_heads=32,
                num_key_value_heads=32,
                max_position_embeddings=4096,
                rms_norm_eps=1e-5,
            ),
            image_token_index=32001,
            video_token_index=32000,
        ),
    ),
    "internvl3-8b": (
        "internvl",
        InternVLForConditionalGeneration,
        InternVLConfig,
        dict(
            # vision: InternViT-300M-448px (the config class's own defaults)
            text_config=dict(
                model_type="qwen2",
                vocab_size=151674,
                hidden_size=3584,
                intermediate_size=18944,
                num_hidden_layers=28,
                num_attention_heads=28,
                num_key_value_heads=4,
                max_position_embeddings=32768,
                rope_parameters={"rope_type": "default", "rope_theta": 1e6},
            ),
            image_token_id=151667,
            tie_word_embeddings=False,
        ),
    ),
}
DEFAULT_PRESET = {family: name for name, (family, *_rest) in PRESETS.items()}


def build_random_fullsize(
    family: str,
    preset: str | None = None,
    device: str = "meta",
    dtype: str = "bfloat16",
    token_ids: dict[str, int] | None = None,
) -> PreTrainedModel:
    """A randomly initialised ``family`` model at the size of ``preset`` (default: the family's one preset).

    ``token_ids`` replaces the config's special-token ids (``video_token_id``, ...) so that a
    processor with another tokenizer can drive the model (see :func:`load_random_fullsize`).
    """
    preset = preset or DEFAULT_PRESET.get(family)
    if preset not in PRESETS:
        raise UserError(f"unknown preset {preset!r} for family {family!r}; presets: {', '.join(PRESETS)}")
    preset_family, model_class, config_class, kwargs = PRESETS[preset]
    if preset_family != family:
        raise UserError(f"preset {preset!r} is a {preset_family} model, not {family}")
    if dtype not in TORCH_DTYPES:
        raise UserError(f"unknown dtype {dtype!r}; expected one of {', '.join(TORCH_DTYPES)}")
    config = config_class(**{**kwargs, **(token_ids or {})})
    with torch.device(device):
        model = model_class._from_config(config, dtype=TORCH_DTYPES[dtype])
    return model.eval()


def _processor_token_ids(family: str, processor) -> dict[str, int]:
    """The special-token ids of ``processor``'s tokenizer under the config names of ``family``."""
    tok = processor.tokenizer
    if family in ("qwen2_5_vl", "qwen3_vl"):
        names = {"image_token_id": "image_token", "video_token_id": "video_token"}
        names |= {"vision_start_token_id": "vision_start_token", "vision_end_token_id": "vision_end_token"}
    elif family == "llava_next_video":
        names = {"image_token_index": "image_token", "video_token_index": "video_token"}
    else:
        names = {"image_token_id": "image_token"}
    # Qwen2.5-VL's processor has no vision_start/end attributes: the Qwen special tokens themselves
    qwen = {"vision_start_token": "<|vision_start|>", "vision_end_token": "<|vision_end|>"}
    return {key: tok.convert_tokens_to_ids(getattr(processor, attr, qwen.get(attr))) for key, attr in names.items()}


def _fit_processor(family: str, processor, config) -> None:
    """Make a fixed-resolution family's processor feed the full-size encoder its input size."""
    if family not in ("llava_next_video", "internvl"):
        return  # Qwen processors follow the patch grid; the pixel budget sets the size
    vision = config.vision_config
    side = vision.image_size[0] if isinstance(vision.image_size, (list, tuple)) else vision.image_size
    patch = vision.patch_size[0] if isinstance(vision.patch_size, (list, tuple)) else vision.patch_size
    square = {"height": side, "width": side}
    for sub in (processor.video_processor, processor.image_processor):
        if family == "llava_next_video":
            sub.size, sub.crop_size = {"shortest_edge": side}, square
        else:
            sub.size = square
    if family == "llava_next_video":
        processor.patch_size = patch
    if family == "internvl":
        processor.image_seq_length = int((side // patch) ** 2 * config.downsample_ratio**2)


def load_random_fullsize(
    family: str, processor_dir: str | Path, preset: str | None = None, device: str = "cuda", dtype: str = "bfloat16"
) -> HFAdapter:
    """A full-size random-weight model behind its family's adapter, driven by the processor in ``processor_dir``.

    For timing only (throughput, phase shares): the processor (usually a tiny model's, whose
    tokenizer is small) keeps the token ids it knows, the model is built with those ids at the
    preset's real size, and fixed-resolution processors are set to the encoder's real input size.
    """
    import importlib

    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(processor_dir, local_files_only=True)
    ids = _processor_token_ids(family, processor)
    model = build_random_fullsize(family, preset, device=device, dtype=dtype, token_ids=ids)
    _fit_processor(family, processor, model.config)
    adapter_class: type[HFAdapter] = importlib.import_module(f"backend.runtime.inference.{family}").ADAPTER
    return adapter_class(model, processor, device)
