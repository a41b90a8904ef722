"""What Qwen2.5-VL and Qwen3-VL share: feeding frames we decoded ourselves, and the pixel budget.

Frames reach the processor with ``video_metadata`` (total frames, native fps, the indices we
decoded) and ``do_sample_frames=False``: without the flag Qwen3-VL re-samples our frames at 2 fps
(or raises ``IndexError``); without the metadata Qwen2.5-VL assumes 24 fps and its temporal positions
collapse, and Qwen3-VL writes wrong timestamps. Every key the processor returns is forwarded.

Pixel budget: with ``pixels`` set, frames are resized here to that per-frame budget on the
encoder's token grid (patch x merge) and the processor is told ``do_resize=False``; without it the
processor's own ``size`` applies with ``cap_pixels_per_frame=True`` (the qwen-vl-utils reference
behaviour, set explicitly because transformers' default is changing).

Odd frame counts: frames are fused in pairs, so the processor repeats the last frame (K=5 gives
3 temporal steps, the third holding frame 5 twice).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from backend.runtime.inference.base import InferenceRequest
from backend.runtime.inference.hf import HFAdapter
from backend.runtime.inference.pruned import unit_scores
from store.errors import UserError


def video_metadata(request: InferenceRequest) -> dict[str, Any]:
    """The metadata the Qwen processors read instead of re-deriving fps and frame positions."""
    indices, fps, total = request.frame_indices, request.native_fps, request.total_frames
    if indices is None or fps is None or total is None:
        given = {"frame_indices": indices, "native_fps": fps, "total_frames": total}
        missing = [name for name, value in given.items() if value is None]
        raise UserError(f"Qwen video input needs {', '.join(missing)} with the frames (timestamps come from them)")
    return {"total_num_frames": int(total), "fps": float(fps), "frames_indices": [int(i) for i in indices]}


class QwenAdapter(HFAdapter):
    grid_keys = ("video_grid_thw",)

    def check_frames(self, request: InferenceRequest) -> None:
        """Refuse frame counts the family cannot take (Qwen2.5-VL takes any)."""

    def process(self, prompt: str, request: InferenceRequest) -> dict[str, Any]:
        if request.frames is None:
            return self.processor(text=[prompt], return_tensors="pt")
        self.check_frames(request)
        if request.pixels is None:
            frames, resize = request.frames, {"do_resize": True, "cap_pixels_per_frame": True}
        else:
            frames = self.resize_for_budget(request.frames, request.pixels)
            resize = {"do_resize": False, "cap_pixels_per_frame": False}
        return self.processor(
            text=[prompt],
            videos=[frames],
            video_metadata=[video_metadata(request)],
            do_sample_frames=False,
            return_tensors="pt",
            **resize,
        )

    def budget_factor(self) -> int:
        video = self.processor.video_processor
        return video.patch_size * video.merge_size

    def fed_resolution(self, inputs: dict[str, Any]) -> tuple[int, int] | None:
        grid = inputs.get("video_grid_thw")
        if grid is None:
            return None
        patch = self.processor.video_processor.patch_size
        return int(grid[0, 1]) * patch, int(grid[0, 2]) * patch

    # -- C-VISION: the unit is one merged token, 2 x 2 patches of a frame pair ---------------------
    def unit_scores(self, inputs: dict[str, Any]) -> np.ndarray:
        """Scores ``[t, h / merge, w / merge]``: the processor's patch rows are ``(t, h/m, w/m, m, m)`` with
        columns ``(C, temporal, p, p)``; they are put back into frames to measure the differences."""
        video = self.processor.video_processor
        t, h, w = (int(x) for x in inputs["video_grid_thw"][0])
        m, p, tp = video.merge_size, video.patch_size, video.temporal_patch_size
        rows = inputs[self.pixel_key]
        frames = rows.reshape(t, h // m, w // m, m, m, 3, tp, p, p).permute(0, 6, 5, 1, 3, 7, 2, 4, 8)
        frames = frames.reshape(t * tp, 3, h * p, w * p)
        return unit_scores(frames, video.image_std, m * p, frames_per_step=tp)

    def kept_rows(self, mask: np.ndarray) -> torch.Tensor:
        """Patch rows of the kept units (each unit is ``merge**2`` consecutive rows)."""
        unit = self.processor.video_processor.merge_size**2
        return torch.from_numpy(mask.reshape(-1)).repeat_interleave(unit).to(self.device)

    def check_one_video(self, inputs: dict[str, Any]) -> torch.Tensor:
        grid = inputs["video_grid_thw"]
        if grid.shape[0] != 1:
            raise UserError(f"{self.family}: pruning handles one video per prompt, got {grid.shape[0]}")
        return grid
