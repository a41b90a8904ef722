"""Qwen3-VL: un-nested video markup, at least two frames, explicit positions.

The published chat template wraps the video placeholder in ``<|vision_start|>...<|vision_end|>``
while the 5.x processor expands ``<|video_pad|>`` into per-frame-pair blocks that carry their own
``<t seconds><|vision_start|>...<|vision_end|>``; left alone the first block is nested in a second
pair of markers. The adapter collapses the template's wrapper before the processor runs.
Frames are fused in pairs and the processor refuses a single frame, so one frame is a clear error.
Positions come from the model's own rope index (5.x matches the reference for Qwen3-VL) and are
passed explicitly, text-only prompts included, so no ``rope_deltas`` state carries over between
items or into generated tokens.

Pruning (C-VISION): the unit is one merged token (2 x 2 patches of a frame pair). The learned
position embedding's interpolation taps, the rotary row/column ids and the per-frame attention
boundaries are computed on the full grid and restricted to the kept rows, which alone go through
the patch embedding, the blocks and the DeepStack mergers; the DeepStack features then hold the
kept tokens only, matching the pruned prompt's visual positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers.models.qwen3_vl.modeling_qwen3_vl import BaseModelOutputWithDeepstackFeatures
from transformers.vision_utils import (
    get_vision_cu_seqlens,
    get_vision_interpolation_indices_and_weights,
    get_vision_position_ids,
)

from backend.runtime.inference.base import InferenceRequest
from backend.runtime.inference.pruned import remap_segments
from backend.runtime.inference.qwen import QwenAdapter
from store.errors import UserError


class Qwen3VLAdapter(QwenAdapter):
    family = "qwen3_vl"

    def render_prompt(self, request: InferenceRequest) -> str:
        p = self.processor
        nested = f"{p.vision_start_token}{p.video_token}{p.vision_end_token}"
        return super().render_prompt(request).replace(nested, p.video_token)

    def check_frames(self, request: InferenceRequest) -> None:
        if request.n_frames < 2:
            raise UserError(f"Qwen3-VL needs at least 2 frames (it fuses frames in pairs); got {request.n_frames}")

    def position_ids(self, inputs: dict[str, Any]) -> torch.Tensor:
        positions, _ = self.model.model.get_rope_index(
            inputs["input_ids"],
            inputs["mm_token_type_ids"],
            video_grid_thw=inputs.get("video_grid_thw"),
            attention_mask=inputs.get("attention_mask"),
        )
        return positions

    def encode_kept(self, inputs: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
        visual = self.model.model.visual
        grid = self.check_one_video(inputs)
        rows = self.kept_rows(mask)
        merge = visual.config.spatial_merge_size
        indices, weights = get_vision_interpolation_indices_and_weights(
            grid,
            num_grid_per_side=visual.num_grid_per_side,
            mode=visual.interpolation_mode,
            align_corners=visual.interpolation_align_corners,
            spatial_merge_size=merge,
        )
        out = visual(
            inputs[self.pixel_key][rows].type(visual.dtype),
            grid_thw=grid,
            interp_indices=indices[rows],
            interp_weights=weights[rows],
            position_ids=get_vision_position_ids(grid, merge)[rows],
            cu_seqlens=remap_segments(get_vision_cu_seqlens(grid), rows),
        )
        return {
            # tuples of one video's features, as get_video_features returns them (the dataclass annotates Tensors)
            "video": BaseModelOutputWithDeepstackFeatures(
                pooler_output=(out.pooler_output,),  # type: ignore[arg-type]
                deepstack_features=[(f,) for f in out.deepstack_features],  # type: ignore[misc]
            )
        }


ADAPTER = Qwen3VLAdapter
