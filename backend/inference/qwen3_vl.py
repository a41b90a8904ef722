"""Qwen3-VL: un-nested video markup, at least two frames, explicit positions.

The published chat template wraps the video placeholder in ``<|vision_start|>...<|vision_end|>``
while the 5.x processor expands ``<|video_pad|>`` into per-frame-pair blocks that carry their own
``<t seconds><|vision_start|>...<|vision_end|>``; left alone the first block is nested in a second
pair of markers. The adapter collapses the template's wrapper before the processor runs.
Frames are fused in pairs and the processor refuses a single frame, so one frame is a clear error.
Positions come from the model's own rope index (5.x matches the reference for Qwen3-VL) and are
passed explicitly, text-only prompts included, so no ``rope_deltas`` state carries over between
items or into generated tokens.
"""

from __future__ import annotations

from typing import Any

import torch

from backend.errors import UserError
from backend.inference.base import InferenceRequest
from backend.inference.qwen import QwenAdapter


class Qwen3VLAdapter(QwenAdapter):
    family = "qwen3_vl"

    def render_prompt(self, request: InferenceRequest) -> str:
        p = self.processor
        nested = f"{p.vision_start_token}{p.video_token}{p.vision_end_token}"
        return super().render_prompt(request).replace(nested, p.video_token)

    def check_frames(self, request: InferenceRequest) -> None:
        if request.n_frames < 2:
            raise UserError(
                f"Qwen3-VL needs at least 2 frames (it fuses frames in pairs); got {request.n_frames}"
            )

    def position_ids(self, inputs: dict[str, Any]) -> torch.Tensor:
        positions, _ = self.model.model.get_rope_index(
            inputs["input_ids"],
            inputs["mm_token_type_ids"],
            video_grid_thw=inputs.get("video_grid_thw"),
            attention_mask=inputs.get("attention_mask"),
        )
        return positions


ADAPTER = Qwen3VLAdapter
