"""Qwen2.5-VL: reference rope positions on top of the shared Qwen video path.

transformers 5.x restarts the text after a video at a different position than the model was
trained with (see :mod:`backend.runtime.inference.qwen_rope`); the adapter passes the reference positions
explicitly, for the prompt and for every generated token. One time step per video
(``second_per_grid_ts``) means non-uniform sampling is seen as its average rate.

Pruning (C-VISION): the unit is one merged token (2 x 2 patches of a frame pair). The encoder's
bookkeeping is computed on the full grid (rotary row/column ids, window order, per-frame and
per-window attention boundaries) and then restricted to the kept rows, which are the only ones
that go through the patch embedding and the blocks; the model's own vision forward takes these
precomputed tensors. A window that loses units attends over the rest; the merger and the
reverse window order see whole units. Language-model positions come from the full prompt
(:mod:`backend.runtime.inference.pruned`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutputWithPooling
from transformers.vision_utils import get_vision_cu_seqlens, get_vision_position_ids, get_vision_window_index

from backend.runtime.inference.pruned import remap_segments
from backend.runtime.inference.qwen import QwenAdapter
from backend.runtime.inference.qwen_rope import original_rope_index


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

    def encode_kept(self, inputs: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
        visual = self.model.model.visual
        grid = self.check_one_video(inputs)
        rows = self.kept_rows(mask)
        units = torch.from_numpy(mask.reshape(-1)).to(self.device)
        cfg = visual.config
        window, cu_window = get_vision_window_index(grid, cfg.spatial_merge_size, cfg.window_size, cfg.patch_size)
        window = window.to(self.device)
        renumber = units.long().cumsum(0) - 1  # kept unit -> its index among the kept units
        kept_window = renumber[window[units[window]]]
        unit = cfg.spatial_merge_size**2
        out = visual(
            inputs[self.pixel_key][rows].type(visual.dtype),
            grid_thw=grid,
            position_ids=get_vision_position_ids(grid, cfg.spatial_merge_size)[rows],
            cu_seqlens=remap_segments(get_vision_cu_seqlens(grid), rows),
            window_index=kept_window,
            cu_window_seqlens=remap_segments(cu_window, units[window].repeat_interleave(unit)),
        )
        # a tuple of one video's features, as get_video_features returns it (the dataclass annotates a Tensor)
        return {"video": BaseModelOutputWithPooling(pooler_output=(out.pooler_output,))}  # type: ignore[arg-type]


ADAPTER = Qwen25VLAdapter
