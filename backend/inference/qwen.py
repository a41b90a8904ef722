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

from backend.errors import UserError
from backend.inference.base import InferenceRequest
from backend.inference.hf import HFAdapter


def video_metadata(request: InferenceRequest) -> dict[str, Any]:
    """The metadata the Qwen processors read instead of re-deriving fps and frame positions."""
    missing = [
        name for name in ("frame_indices", "native_fps", "total_frames") if getattr(request, name) is None
    ]
    if missing:
        raise UserError(f"Qwen video input needs {', '.join(missing)} with the frames (timestamps come from them)")
    return {
        "total_num_frames": int(request.total_frames),
        "fps": float(request.native_fps),
        "frames_indices": [int(i) for i in request.frame_indices],
    }


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
