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

from backend.errors import UserError
from backend.inference.hf import TORCH_DTYPES

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
    family: str, preset: str | None = None, device: str = "meta", dtype: str = "bfloat16"
) -> PreTrainedModel:
    """A randomly initialised ``family`` model at the size of ``preset`` (default: the family's one preset)."""
    preset = preset or DEFAULT_PRESET.get(family)
    if preset not in PRESETS:
        raise UserError(f"unknown preset {preset!r} for family {family!r}; presets: {', '.join(PRESETS)}")
    preset_family, model_class, config_class, kwargs = PRESETS[preset]
    if preset_family != family:
        raise UserError(f"preset {preset!r} is a {preset_family} model, not {family}")
    if dtype not in TORCH_DTYPES:
        raise UserError(f"unknown dtype {dtype!r}; expected one of {', '.join(TORCH_DTYPES)}")
    config = config_class(**kwargs)
    with torch.device(device):
        model = model_class._from_config(config, dtype=TORCH_DTYPES[dtype])
    return model.eval()
