"""Encoding only the kept patches of frames that a ViT sees one at a time (LLaVA-NeXT-Video, InternVL).

Why a module: both families prune the same way. A frame's patches are embedded (patch and learned
position embeddings, so a kept patch keeps its own position), the dropped ones are removed, and
the transformer layers run over the CLS token and the kept patches. Frames keep different numbers
of patches, so they are batched by count: :func:`buckets` groups frames whose counts are close,
:func:`encode_bucket` pads a group to its largest count and masks the padding as keys (an encoder
whose layers take no mask is given exact-count groups, ``slack=1``, and never pads).

Nothing here costs what it does not need to: a group that keeps every patch (the exact path, and
keep 1.0) runs the layers on the embeddings as they are, with no gather, scatter or mask, and when
one group holds every frame in order its output is the result (no copy into a zeroed buffer). The
kept patches are gathered by index (kept first, in order), not by boolean masks.
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
    """Frames grouped for one encoder batch each, padded to the group's largest kept count.

    By decreasing count, frames are cut into consecutive groups that minimise the tokens the encoder
    runs (each frame padded to its group's largest count) plus a quarter of a frame's worth (of the mean
    count) per extra batch, with no frame below ``slack`` of its group's largest (padding at most 15% by default;
    ``slack=1``: equal counts only, no padding). A pruned clip's first frame, always whole, so gets a
    batch of its own instead of padding every nearly whole frame to full size."""
    order = torch.argsort(counts, descending=True, stable=True).tolist()
    sizes = [int(counts[f]) for f in order]
    n, overhead = len(sizes), sum(sizes) / max(4 * len(sizes), 1)
    best, cut = [0.0] + [float("inf")] * n, [0] * (n + 1)  # best[j]: cost of the first j frames
    for j in range(1, n + 1):
        for i in range(j - 1, -1, -1):  # the last group is frames i..j-1, led by frame i
            if sizes[j - 1] < slack * sizes[i]:
                break
            cost = best[i] + (j - i) * sizes[i] + overhead
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j] : j])
        j = cut[j]
    return [torch.tensor(g, device=counts.device) for g in reversed(groups)]


def encode_bucket(run: Layers, hidden: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """The layers over CLS plus each frame's kept patches (padded to the group's largest, masked as keys).

    ``hidden`` is ``[frames, 1 + P, D]`` (CLS first), ``kept`` ``[frames, P]``; returns ``[frames, P, D]``
    with the kept patches' outputs in place and zeros elsewhere (every patch kept: the layers' output)."""
    if bool(kept.all()):
        return run(hidden, None)[:, 1:]
    counts = kept.sum(1)
    width = int(counts.max())
    n, d = len(hidden), hidden.shape[-1]
    # each frame's patch indices, kept ones first in their order; the slots past a frame's count are padding
    index = torch.argsort((~kept).to(torch.int8), dim=1, stable=True)[:, :width, None].expand(n, width, d)
    slots = torch.arange(width, device=hidden.device)[None] < counts[:, None]  # [n, width]
    x = torch.cat([hidden[:, :1], hidden[:, 1:].gather(1, index)], dim=1)
    mask = None
    if not bool(slots.all()):
        valid = torch.cat([slots.new_ones(n, 1), slots], dim=1)
        mask = torch.zeros(n, 1, 1, width + 1, dtype=hidden.dtype, device=hidden.device)
        mask.masked_fill_(~valid[:, None, None], torch.finfo(hidden.dtype).min)
    x = run(x, mask)[:, 1:]
    if mask is not None:
        x = x * slots[..., None]  # padding slots write zeros (into dropped patches' places)
    return hidden.new_zeros(n, kept.shape[1], d).scatter_(1, index, x)


def encode_frames(run: Layers, hidden: torch.Tensor, kept: torch.Tensor, slack: float = 0.85) -> torch.Tensor:
    """:func:`encode_bucket` over the :func:`buckets` of every frame: ``[frames, P, D]``."""
    groups = buckets(kept.sum(1), slack)
    if len(groups) == 1 and torch.equal(groups[0], torch.arange(len(hidden), device=groups[0].device)):
        return encode_bucket(run, hidden, kept)
    features = hidden.new_zeros(len(hidden), kept.shape[1], hidden.shape[-1])
    for rows in groups:
        features[rows] = encode_bucket(run, hidden[rows], kept[rows])
    return features
