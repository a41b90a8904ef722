"""A torchvision-backed processor's fused rescale and normalise, to the bit, at half its cost.

Why: the processor subtracts a per-channel mean and divides by a per-channel std over frames that
sit channels-last in memory. Broadcasting a ``[C, 1, 1]`` vector over that layout gives the
elementwise loop an innermost run of three values, so it barely vectorises (its cost: benchmarks/README.md). Here the frames are viewed as rows of ``width x channels``
contiguous values and the mean and std are tiled along a row: the same subtraction and the same
division on every value, in long vectorised runs. Each value goes through the same two IEEE
operations in float32 as in the processor, so the result is equal bit for bit (the tests compare
it with the processor's own output), in the same channels-last layout.
"""

from __future__ import annotations

import torch


def fused_mean_std(processor, device: torch.device) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The per-channel mean and std the processor subtracts and divides by after folding in its rescale
    factor, or None when it does not both rescale and normalise with one value per RGB channel, or has
    no fused rescale-and-normalise step (a processor of another make: the caller lets it do its own)."""
    per_channel = all(isinstance(v, (list, tuple)) and len(v) == 3 for v in (processor.image_mean, processor.image_std))
    fuse = getattr(processor, "_fuse_mean_std_and_rescale_factor", None)  # the processor's own folding: same bits
    if fuse is None or not (processor.do_rescale and processor.do_normalize and per_channel):
        return None
    mean, std, _ = fuse(
        do_normalize=True,
        image_mean=tuple(processor.image_mean),
        image_std=tuple(processor.image_std),
        do_rescale=True,
        rescale_factor=processor.rescale_factor,
        device=device,
    )
    return mean.to(torch.float32), std.to(torch.float32)


def normalise_channels_last(frames: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """``(frames.float() - mean) / std`` per channel, for uint8 frames ``[F, C, H, W]`` in any layout;
    the result is float32 ``[F, C, H, W]`` stored channels-last."""
    n, c, h, w = frames.shape
    out = torch.empty((n, h, w, c), dtype=torch.float32, device=frames.device)
    out.copy_(frames.permute(0, 2, 3, 1))
    rows = out.view(n * h, w * c)
    rows.sub_(mean.repeat(w)).div_(std.repeat(w))
    return out.permute(0, 3, 1, 2)
