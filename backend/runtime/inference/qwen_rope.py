"""Qwen2.5-VL's multimodal rope positions as the model was trained with them.

Why: transformers 5.x's ``get_rope_index`` restarts the text after a video at
``start + max(h, w) / merge``; Qwen's reference code (``qwen-vl-finetune/qwenvl/data/rope2d.py``,
and transformers up to 4.57) restarts it at ``max(all vision positions) + 1``. With a video of
many temporal steps the question tokens of 5.x land on positions the video already uses, so the
adapter computes the reference positions here and passes them as ``position_ids`` (3 x B x L).

The temporal index follows the reference too: ``long(arange(t) * second_per_grid_t * tokens_per_second)``
with ``second_per_grid_t`` a float. (transformers 4.51-4.57 cast ``second_per_grid_t`` to an integer
first, which truncates e.g. 0.5 s to 0 and collapses the temporal axis for densely sampled clips;
the reference code and 5.x do not.)
"""

from __future__ import annotations

import torch

TEXT, IMAGE, VIDEO = 0, 1, 2  # mm_token_type_ids values


def _segments(types: torch.Tensor) -> list[tuple[int, int, int]]:
    """(modality, start, end) runs of equal ``mm_token_type_ids`` in one sequence."""
    change = (torch.nonzero(types[1:] != types[:-1]).flatten() + 1).tolist()
    starts, ends = [0, *change], [*change, types.numel()]
    kinds = types[starts].tolist()
    return list(zip(kinds, starts, ends))


def _vision_positions(grid: torch.Tensor, merge: int, seconds: torch.Tensor | float, tokens_per_second: float):
    """(3, t*h*w) positions of one image / video from 0: time, row, column."""
    t, h, w = grid.tolist()
    h, w = h // merge, w // merge
    time = (torch.arange(t).view(-1, 1).expand(-1, h * w) * seconds * tokens_per_second).long().flatten()
    rows = torch.arange(h).view(1, -1, 1).expand(t, -1, w).flatten()
    cols = torch.arange(w).view(1, 1, -1).expand(t, h, -1).flatten()
    return torch.stack([time, rows, cols])


def original_rope_index(
    input_ids: torch.Tensor,
    mm_token_type_ids: torch.Tensor,
    *,
    spatial_merge_size: int,
    tokens_per_second: float,
    video_grid_thw: torch.Tensor | None = None,
    second_per_grid_ts: torch.Tensor | None = None,
    image_grid_thw: torch.Tensor | None = None,
) -> torch.Tensor:
    """Reference Qwen2.5-VL positions ``[3, 1, L]`` for one unpadded sequence (batch of one)."""
    if input_ids.shape[0] != 1:
        raise ValueError("original_rope_index handles one sequence at a time")
    types = mm_token_type_ids[0].cpu()
    grids = {
        IMAGE: iter(image_grid_thw.cpu() if image_grid_thw is not None else ()),
        VIDEO: iter(video_grid_thw.cpu() if video_grid_thw is not None else ()),
    }
    seconds = iter(second_per_grid_ts.cpu().float() if second_per_grid_ts is not None else ())
    pieces, start = [], 0
    for kind, lo, hi in _segments(types):
        if kind == TEXT:
            piece = torch.arange(hi - lo).view(1, -1).expand(3, -1) + start
        else:
            per_grid = next(seconds, torch.tensor(1.0)) if kind == VIDEO else 0.0
            piece = _vision_positions(next(grids[kind]), spatial_merge_size, per_grid, tokens_per_second) + start
        pieces.append(piece)
        start = int(piece.max()) + 1
    return torch.cat(pieces, dim=1).view(3, 1, -1).to(input_ids.device)
