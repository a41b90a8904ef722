"""How one answer becomes one ``responses`` row: the same fields and provenance for every writer.

The worker (one re-run) and the sweep (a whole grid) store answers of the same kind; a row must not
say more or less about where it came from depending on which of them wrote it. Both build rows
here: the item's fields, the configuration, the frames seen, the scored result and a provenance
blob (checkpoint fingerprint, library versions, device, dtype, frame indices and timestamps, fed
resolution, token counts, phase timings) plus whatever the writer adds (job or sweep ids).
Imports no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd

from backend.runtime.sampling import timestamps
from store.configs import Config

_VERSIONED = ("trajaudit", "torch", "transformers", "decord", "av", "numpy")


def library_versions() -> dict[str, str | None]:
    out = {}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


@dataclass(frozen=True)
class ModelContext:
    """The model side of every row's provenance: which weights, where, how."""

    model: str  # registry name
    family: str
    checkpoint: str
    fingerprint: str
    versions: dict[str, str | None]
    device: str
    dtype: str

    def provenance(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "family": self.family,
            "checkpoint": self.checkpoint,
            "checkpoint_fingerprint": self.fingerprint,
            "versions": self.versions,
            "device": self.device,
            "dtype": self.dtype,
        }


def response_row(
    *,
    key: Mapping[str, str],
    item: Mapping[str, Any],
    cfg: Config,
    answer_type: str,
    indices: np.ndarray,
    fps: float | None,
    pixels: int | None,
    seed: int | None,
    result: Any,
    timings: Mapping[str, float],
    run_id: str,
    origin: str,
    context: ModelContext,
    extra: Mapping[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """One ``responses`` row (``key`` holds the RESPONSE_KEY columns); ``extra`` leads the provenance."""
    mcqa = answer_type == "mcqa"
    answer = (result.answer or None) if mcqa else None  # open-ended: the text is raw_output, scored by score
    correct = int(answer == item["target"]) if mcqa else None  # no answer counts as wrong (METRICS.md)
    frame_list = [int(i) for i in indices]
    provenance = {
        **extra,
        **context.provenance(),
        "policy": cfg.policy,
        "seed": seed,
        "frame_indices": frame_list,
        "timestamps_s": timestamps(indices, fps).round(6).tolist() if fps else [],
        "native_fps": fps,
        "pixels_requested": pixels,
        "resolution": result.resolution,
        "token_counts": result.token_counts,
        "timings": dict(timings),
    }
    return {
        **key,
        "split": item["split"],
        "run_id": run_id,
        "origin": origin,
        "raw_output": result.raw_output,
        "answer": answer,
        "correct": correct,
        "confidence": result.confidence,
        "score": result.score,
        "option_probs": None if result.option_probs is None else json.dumps(result.option_probs),
        "letter_mass": result.letter_mass,
        "frames": cfg.frames,
        "pixels": pixels,
        "policy": cfg.policy,
        "seed": seed,
        "frame_indices": frame_list,
        "flags": "no-answer" if mcqa and answer is None else None,
        "provenance": json.dumps(provenance, default=json_default),
        "written_at": now,
    }


def json_default(o: Any) -> Any:
    """NumPy scalars and arrays in adapter output (token counts, resolutions) as plain JSON."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, pd.Timestamp):
        return o.isoformat()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
