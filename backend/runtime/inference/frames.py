"""Per-frame pixel budgets: the frame size a budget means, and resizing a clip to it in one call.

Why we resize ourselves: "64f@151k" must mean the same per-frame resolution whatever the frame count.
Qwen2.5-VL's ``size`` is per frame but Qwen3-VL's ``size["longest_edge"]`` is a budget over all
frames of a video, so handing the budget to the processor would change the per-frame resolution
with the frame count (INFERENCE.md). Resizing here and passing ``do_resize=False`` gives every
family the same meaning. The size rule is Qwen's ``smart_resize`` with ``max_pixels = budget``
(the rule lmms-eval and VLMEvalKit apply through ``max_pixels``), so logged runs reproduce.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


def budget_shape(height: int, width: int, pixels: int, factor: int = 1) -> tuple[int, int]:
    """(H, W) of a ``height x width`` frame under a per-frame budget of ``pixels``.

    Sides are multiples of ``factor`` (the encoder's token side), at least one ``factor``, the aspect
    ratio is kept as closely as the grid allows, and ``H * W <= pixels`` unless one token is already
    more than the budget. Frames already within the budget only snap to the grid (never upscaled).
    """
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > pixels:
        beta = math.sqrt(height * width / pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    return h, w


def resize_frames(frames: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """All frames ``[K, H, W, 3]`` uint8 resized to ``shape`` at once (bicubic, antialiased, as the processors do)."""
    if frames.shape[1:3] == tuple(shape):
        return frames
    x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float()
    x = F.interpolate(x, size=shape, mode="bicubic", antialias=True, align_corners=False)
    return x.round_().clamp_(0, 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous().numpy()


def fit_to_budget(frames: np.ndarray, pixels: int, factor: int = 1) -> np.ndarray:
    """``frames`` resized to the per-frame budget (see :func:`budget_shape`)."""
    return resize_frames(frames, budget_shape(frames.shape[1], frames.shape[2], pixels, factor))
