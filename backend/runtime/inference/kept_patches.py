"""Encoding only the kept patches of frames that a ViT sees one at a time (LLaVA-NeXT-Video, InternVL).

Why a module: both families prune the same way. A frame's patches are embedded (patch and learned
position embeddings, so a kept patch keeps its own position), the dropped ones are removed, and
the transformer layers run over the CLS token and the kept patches. Frames keep different numbers
of patches, so they are batched by count: :func:`buckets` groups frames whose counts are close,
:func:`encode_bucket` pads a group to its largest count and masks the padding as keys (an encoder
whose layers take no mask is given exact-count groups, ``slack=1``, and never pads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

Layers = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


def run_layers(layers: Sequence[torch.nn.Module]) -> Layers:
    """CLIP-style layers called as ``layer(hidden, attention_mask)``."""

    def run(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        for layer in layers:
            x = layer(x, mask)
        return x

    return run


def buckets(counts: torch.Tensor, slack: float = 0.85) -> list[torch.Tensor]:
    """Frames grouped for one encoder batch each: by decreasing kept count, a frame joins the current
    group while its count is at least ``slack`` of the group's largest (padding stays under 15%)."""
    order = torch.argsort(counts, descending=True, stable=True).tolist()
    groups: list[list[int]] = []
    for frame in order:
        if groups and counts[frame] >= slack * counts[groups[-1][0]]:
            groups[-1].append(frame)
        else:
            groups.append([frame])
    return [torch.tensor(g, device=counts.device) for g in groups]


def encode_bucket(run: Layers, hidden: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """The layers over CLS plus each frame's kept patches (padded to the group's largest, masked as keys).

    ``hidden`` is ``[frames, 1 + P, D]`` (CLS first), ``kept`` ``[frames, P]``; returns ``[frames, P, D]``
    with the kept patches' outputs in place and zeros elsewhere."""
    counts = kept.sum(1)
    width = int(counts.max())
    n, d = len(hidden), hidden.shape[-1]
    slots = torch.arange(width, device=hidden.device)[None] < counts[:, None]  # [n, width]
    x = hidden.new_zeros(n, width, d)
    x[slots] = hidden[:, 1:][kept]
    x = torch.cat([hidden[:, :1], x], dim=1)
    mask = None
    if not bool(slots.all()):
        valid = torch.cat([slots.new_ones(n, 1), slots], dim=1)
        mask = torch.zeros(n, 1, 1, width + 1, dtype=hidden.dtype, device=hidden.device)
        mask.masked_fill_(~valid[:, None, None], torch.finfo(hidden.dtype).min)
    x = run(x, mask)
    out = hidden.new_zeros(n, kept.shape[1], d)
    out[kept] = x[:, 1:][slots]
    return out
