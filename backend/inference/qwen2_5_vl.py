"""Qwen2.5-VL: reference rope positions on top of the shared Qwen video path.

transformers 5.x restarts the text after a video at a different position than the model was
trained with (see :mod:`backend.inference.qwen_rope`); the adapter passes the reference positions
explicitly, for the prompt and for every generated token. One time step per video
(``second_per_grid_ts``) means non-uniform sampling is seen as its average rate.
"""

from __future__ import annotations

from typing import Any

import torch

from backend.inference.qwen import QwenAdapter
from backend.inference.qwen_rope import original_rope_index


class Qwen25VLAdapter(QwenAdapter):
    family = "qwen2_5_vl"

    def position_ids(self, inputs: dict[str, Any]) -> torch.Tensor:
        vision = self.model.config.vision_config
        return original_rope_index(
            inputs["input_ids"],
            inputs["mm_token_type_ids"],
            spatial_merge_size=vision.spatial_merge_size,
            tokens_per_second=vision.tokens_per_second,
            video_grid_thw=inputs.get("video_grid_thw"),
            second_per_grid_ts=inputs.get("second_per_grid_ts"),
        )


ADAPTER = Qwen25VLAdapter
