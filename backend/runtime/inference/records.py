"""How one answer becomes one ``responses`` row: the same fields and provenance for every writer.

The worker (one re-run) and the sweep (a whole grid) store answers of the same kind; a row must not
say more or less about where it came from depending on which of them wrote it. Both build rows
here: the item's fields, the configuration, the frames seen, the scored result and a provenance
blob (checkpoint fingerprint, library versions, device, dtype, frame indices and timestamps, the
decoder that read them, fed resolution, token counts, phase timings) plus whatever the writer adds (job or sweep ids).
Imports no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd

from backend.runtime.inference.cell import item_fields
from backend.videos.decode import timestamps
from store.configs import Config
from store.schema import RESPONSE_KEY

_VERSIONED = ("trajaudit", "torch", "transformers", "decord", "av", "numpy")


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
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


@dataclass
class Answered:
    """One answered cell: the ``items`` row, the configuration, the frames fed and the adapter's result."""

    item: Mapping[str, Any]  # the items row (``item_id``, ``target``, ``split``, ``answer_type``...)
    cfg: Config
    seed: int | None  # the sampling seed the frames were drawn with (None: not drawn at random)
    indices: np.ndarray  # frame indices shown (empty for text-only)
    fps: float | None  # the video's native rate (None for text-only)
    pixels: int | None  # pixels per frame requested (None: the model's default)
    result: Any  # InferenceResult
    timings: Mapping[str, float]  # seconds per phase
    decoder: str | None = None  # "decord" or "pyav": what read the frames (None for text-only)


@dataclass(frozen=True)
class RowSource:
    """Who stores rows and under which key: the writer's ``origin`` (``rerun`` or ``sweep``), the
    model and benchmark, the ``run`` and ``run_id``, the model side of the provenance and what the
    writer puts first in it (job or sweep ids)."""

    origin: str
    model: str
    benchmark: str
    run: str
    run_id: str  # the runs row the responses belong to ("" when the writer sets it per batch)
    context: ModelContext
    extra: Mapping[str, Any] = field(default_factory=dict)


def response_row(answered: Answered, source: RowSource, now: datetime) -> dict[str, Any]:
    """One ``responses`` row for ``answered`` as ``source`` stores it; ``source.extra`` leads the provenance."""
    item, cfg, result, fps = answered.item, answered.cfg, answered.result, answered.fps
    mcqa = item_fields(item)[2] == "mcqa"
    answer = (result.answer or None) if mcqa else None  # open-ended: the text is raw_output, scored by score
    correct = int(answer == item["target"]) if mcqa else None  # no answer counts as wrong (docs/metrics.md)
    frame_list = [int(i) for i in answered.indices]
    provenance = {
        **source.extra,
        **source.context.provenance(),
        "policy": cfg.policy,
        "seed": answered.seed,
        "frame_indices": frame_list,
        "timestamps_s": timestamps(answered.indices, fps).round(6).tolist() if fps else [],
        "native_fps": fps,
        "decoder": answered.decoder,
        "pixels_requested": answered.pixels,
        "resolution": result.resolution,
        "token_counts": result.token_counts,
        "timings": dict(answered.timings),
    }
    key = (source.model, source.benchmark, str(item["item_id"]), cfg.label, source.run)
    return {
        **dict(zip(RESPONSE_KEY, key, strict=True)),
        "split": item["split"],
        "run_id": source.run_id,
        "origin": source.origin,
        "raw_output": result.raw_output,
        "answer": answer,
        "correct": correct,
        "confidence": result.confidence,
        "score": result.score,
        "score_source": None if result.score is None else "token_f1",  # adapters score open answers by Token-F1
        "option_probs": None if result.option_probs is None else json.dumps(result.option_probs),
        "letter_mass": result.letter_mass,
        "frames": cfg.frames,
        "pixels": answered.pixels,
        "policy": cfg.policy,
        "seed": answered.seed,
        "frame_indices": frame_list,
        "frames_source": None if cfg.is_text else "logged",  # the worker records the frames it fed
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
