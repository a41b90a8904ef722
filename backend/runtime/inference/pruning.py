"""C-VISION's signal: which visual tokens are static, from pixel differences on the model's own grid.

Why pixels: the seed paper (FrameMogging, C-VISION) prunes vision tokens *before* the dense
encoding, so the signal has to be cheap and exist before the encoder runs. A token's unit is the
block of pixels the model turns into one language-model token (LLaVA-NeXT-Video: 2 x 2 CLIP
patches, pooled; InternVL: 2 x 2 patches, pixel-shuffled; Qwen: 2 x 2 patches of a frame *pair*,
merged). A unit's score is the maximum absolute RGB difference (0..255) of its pixels against the
same pixels of the previous sampled frame, measured on the processed frames (the processor's own
resize and crop), so a unit means exactly the pixels its token sees. The first frame has no
previous frame and is always kept.

Selection (:func:`keep_mask`): ``keep`` is the share of units kept (the label's ``~prune<keep%>``);
the lowest-scoring units are dropped first. ``threshold`` (optional, RGB levels) restricts the
drop to units whose score is at most the threshold, so a clip with no static content loses
nothing; ``keep`` then bounds how much may go. ``keep=1.0`` drops nothing. The label names both
(``32f~prune85t8``: :attr:`PruneSpec.suffix`), so two protocols never share a label.

This module imports numpy only: the CLI validates ``--approx`` without loading torch. The scores
themselves are computed on the model's device (:func:`backend.runtime.inference.pruned.unit_scores`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from store.errors import UserError

_SPEC = re.compile(r"^prune:(?P<body>[a-z]+=[0-9.]+(?:,[a-z]+=[0-9.]+)*)$")


@dataclass(frozen=True)
class PruneSpec:
    """An approximate protocol: keep this share of the vision units (``threshold``: only static ones go)."""

    keep: float
    threshold: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.keep <= 1.0:
            raise UserError(f"prune keep rate must be in (0, 1], got {self.keep}")
        if self.threshold is not None and not 0 <= self.threshold <= 255:
            raise UserError(f"prune threshold (max-abs RGB difference) must be in 0..255, got {self.threshold}")

    @property
    def keep_percent(self) -> int:
        """The label's ``~prune<keep%>`` number (1..99; 100 is the exact protocol)."""
        return int(round(self.keep * 100))

    @property
    def suffix(self) -> str:
        """The label suffix naming this protocol: ``~prune85``, or ``~prune85t8`` with a threshold."""
        return f"~prune{self.keep_percent}" + (
            "" if self.threshold is None else f"t{np.format_float_positional(self.threshold, trim='-')}"
        )

    @property
    def is_exact(self) -> bool:
        return self.keep_percent >= 100

    @classmethod
    def parse(cls, text: str, threshold: float | None = None) -> PruneSpec:
        """``prune:keep=0.85`` or ``prune:keep=0.85,threshold=8`` (``threshold`` also as an argument)."""
        m = _SPEC.match(text.strip())
        if not m:
            raise UserError(f"--approx {text!r}: expected prune:keep=<0..1>[,threshold=<0..255>]")
        fields = dict(part.split("=", 1) for part in m["body"].split(","))
        unknown = sorted(set(fields) - {"keep", "threshold"})
        if unknown or "keep" not in fields:
            raise UserError(f"--approx {text!r}: needs keep=<rate>; unknown field(s): {', '.join(unknown) or '-'}")
        try:
            keep = float(fields["keep"])
            thr = float(fields["threshold"]) if "threshold" in fields else threshold
        except ValueError:
            raise UserError(f"--approx {text!r}: keep and threshold are numbers") from None
        spec = cls(keep, thr)
        if not 1 <= spec.keep_percent <= 99:
            raise UserError(f"--approx {text!r}: keep rounds to {spec.keep_percent}%; an approximate label keeps 1-99%")
        return spec


def keep_mask(scores: np.ndarray, spec: PruneSpec) -> np.ndarray:
    """Boolean mask of the units kept (same shape as ``scores``): the lowest scores go first."""
    flat = scores.reshape(-1)
    n_drop = len(flat) - math.ceil(spec.keep * len(flat) - 1e-9)
    candidates = np.isfinite(flat)
    if spec.threshold is not None:
        candidates &= flat <= spec.threshold
    order = np.flatnonzero(candidates)
    order = order[np.argsort(flat[order], kind="stable")][: max(n_drop, 0)]
    mask = np.ones(len(flat), dtype=bool)
    mask[order] = False
    return mask.reshape(scores.shape)
