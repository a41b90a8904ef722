"""C-VISION applied: static vision units dropped before the encoder, and their tokens from the prompt.

The family adapter says where its units lie (``HFAdapter.unit_scores``) and how to encode only the
kept ones (``HFAdapter.encode_kept``); this module does what every family shares:

* the keep mask from the scores (:func:`backend.runtime.inference.pruning.keep_mask`);
* the prompt without the dropped units' placeholder tokens (:func:`drop_tokens`). Positions are
  kept correct by computing them on the *full* prompt first and then deleting the same columns:
  a kept token has exactly the position it has in the exact protocol (Qwen's 3-D rope index with
  its time, row and column; LLaVA's and InternVL's 1-D index, which then has gaps), and the text
  after the video starts where it starts in the exact protocol. With nothing dropped the inputs
  are the exact ones (explicit positions ``0..L-1`` equal the model's default);
* :func:`remap_segments`: packed-attention boundaries (``cu_seqlens``) of a full grid mapped to
  the kept rows, empty segments removed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

import numpy as np
import torch

from backend.runtime.inference.prepared import Prepared
from backend.runtime.inference.pruning import PruneSpec, keep_mask

SEQUENCE_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids")


class Prunable(Protocol):
    """What pruning needs of an adapter (``HFAdapter`` is one): typed here so this module does not import it."""

    visual_token_ids: list[int]

    def unit_scores(self, inputs: dict[str, Any]) -> np.ndarray: ...

    def encode_kept(self, inputs: dict[str, Any], mask: np.ndarray) -> dict[str, Any]: ...

    def encode_vision(self, inputs: dict[str, Any]) -> dict[str, Any] | None: ...


def unit_scores(pixels: torch.Tensor, std, unit: int, frames_per_step: int = 1) -> np.ndarray:
    """Scores ``[steps, H/unit, W/unit]``: max-abs RGB difference of each unit against the previous frame.

    ``pixels`` are the processed frames ``[F, C, H, W]`` (normalised with ``std`` per channel; the mean
    cancels in a difference), ``H`` and ``W`` multiples of ``unit``; differences are scaled back to RGB
    levels 0..255. With ``frames_per_step`` > 1 (Qwen fuses frame pairs into one token) a step's score
    is the maximum over its frames. Units of the first step are ``inf`` (no previous frame: always
    kept). Computed where the pixels are (the model's device), returned to the host for the selection.
    """
    f, _, h, w = pixels.shape
    if h % unit or w % unit or f % frames_per_step:
        raise ValueError(
            f"frames {tuple(pixels.shape)} do not tile into units of {unit} px x {frames_per_step} frame(s)"
        )
    scale = torch.as_tensor(std, dtype=torch.float32, device=pixels.device).view(1, -1, 1, 1) * 255.0
    diff = torch.full((f, h // unit, w // unit), float("inf"), device=pixels.device)
    if f > 1:
        d = (pixels[1:] - pixels[:-1]).float().abs_().mul_(scale).amax(dim=1, keepdim=True)  # [F-1, 1, H, W]
        diff[1:] = torch.nn.functional.max_pool2d(d, unit)[:, 0]
    steps = diff.view(f // frames_per_step, frames_per_step, h // unit, w // unit).amax(dim=1)
    steps[0] = float("inf")
    return steps.cpu().numpy()


def unit_mask(adapter: Prunable, prepared: Prepared, spec: PruneSpec) -> np.ndarray:
    """Keep mask over the vision units, in the order the encoder emits their tokens."""
    return keep_mask(adapter.unit_scores(prepared.inputs), spec)


def drop_tokens(adapter: Prunable, prepared: Prepared, mask: np.ndarray) -> Prepared:
    """``prepared`` without the placeholder tokens of dropped units; positions as in the full prompt."""
    ids = prepared.inputs["input_ids"]
    visual = torch.isin(ids[0], ids.new_tensor(adapter.visual_token_ids))
    if int(visual.sum()) != mask.size:
        raise ValueError(f"{int(visual.sum())} visual tokens in the prompt but {mask.size} vision units")
    keep = torch.ones_like(visual)
    keep[visual] = torch.from_numpy(mask.reshape(-1)).to(keep.device)
    positions = prepared.position_ids
    if positions is None:
        positions = torch.arange(ids.shape[-1], device=ids.device)[None]
    inputs = {k: (v[..., keep] if k in SEQUENCE_KEYS and torch.is_tensor(v) else v) for k, v in prepared.inputs.items()}
    return replace(prepared, inputs=inputs, position_ids=positions[..., keep])


def prune(adapter: Prunable, prepared: Prepared, spec: PruneSpec) -> tuple[Prepared, dict[str, Any] | None, np.ndarray]:
    """(pruned inputs, ``mm_encoder_outputs`` of the kept units, keep mask) of one prepared request.

    A mask that keeps every unit (keep 1.0; a threshold no unit is under) is the exact protocol: the
    request goes through the exact encoder unchanged, and pruning costs it the signal alone."""
    mask = unit_mask(adapter, prepared, spec)
    if mask.all():
        return prepared, adapter.encode_vision(prepared.inputs), mask
    return drop_tokens(adapter, prepared, mask), adapter.encode_kept(prepared.inputs, mask), mask


def remap_segments(cu: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """Boundaries ``cu`` over the full rows mapped to the rows where ``kept`` (empty segments dropped)."""
    before = torch.nn.functional.pad(kept.to(torch.int32).cumsum(0, dtype=torch.int32), (1, 0))
    return torch.unique_consecutive(before[cu.long().to(before.device)]).to(cu.device, torch.int32)
