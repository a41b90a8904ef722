"""The one interface every model family implements: a request in, a result out.

The worker and job queue are written against these names only, so a family is added by writing an
adapter module, never by touching the worker. This module imports no torch: the job queue and the
dashboard can build requests, check checkpoints and fingerprint them without loading a model.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

import numpy as np

from backend.runtime.inference.pruning import PruneSpec
from store.errors import UserError

FAMILIES = ("qwen2_5_vl", "qwen3_vl", "llava_next_video", "internvl")
ANSWER_TYPES = ("mcqa", "open")
DTYPES = ("float32", "bfloat16", "float16")
MARKER_FILE = "trajaudit.json"  # written by tiny.build_tiny: {"family", "random_weights", "label"}
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
# transformers' model_type for each family, read from a checkpoint's config.json.
MODEL_TYPES = {
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "llava_next_video": "llava_next_video",
    "internvl": "internvl",
}


@dataclass
class InferenceRequest:
    """One item at one configuration. ``frames=None`` is the text-only configuration."""

    question: str
    options: list[str]  # as stored in items.options, e.g. ["A. Apples.", "B. Candles.", ...]
    frames: np.ndarray | None  # [K, H, W, 3] uint8 decoded frames; None = text-only
    frame_indices: list[int] | None
    native_fps: float | None
    total_frames: int | None
    pixels: int | None  # per-frame pixel budget (frames are resized to it); None = model default
    answer_type: str = "mcqa"  # "mcqa" | "open"
    references: list[str] = field(default_factory=list)
    max_new_tokens: int = 32
    prune: PruneSpec | None = None  # approximate protocol (C-VISION): static vision units dropped; None = exact

    def __post_init__(self) -> None:
        if self.answer_type not in ANSWER_TYPES:
            raise UserError(f"answer_type {self.answer_type!r}: expected one of {', '.join(ANSWER_TYPES)}")
        if self.answer_type == "mcqa" and not 2 <= len(self.options) <= 8:
            raise UserError(f"an MCQA request needs 2 to 8 options, got {len(self.options)}: {self.options!r}")
        if self.max_new_tokens < 1:
            raise UserError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}")
        if self.pixels is not None and self.pixels <= 0:
            raise UserError(f"pixels (per-frame budget) must be positive, got {self.pixels}")
        if self.frames is None:
            return
        f = self.frames
        if not isinstance(f, np.ndarray) or f.ndim != 4 or f.shape[-1] != 3 or f.dtype != np.uint8 or len(f) == 0:
            shape = getattr(f, "shape", None)
            dtype = getattr(f, "dtype", type(f).__name__)
            raise UserError(f"frames must be a non-empty uint8 array [K, H, W, 3]; got shape {shape}, dtype {dtype}")
        if self.frame_indices is not None and len(self.frame_indices) != len(f):
            raise UserError(f"{len(f)} frames but {len(self.frame_indices)} frame_indices")

    @property
    def n_frames(self) -> int:
        return 0 if self.frames is None else len(self.frames)


@dataclass
class InferenceResult:
    """What one forward (MCQA) or one greedy generation (open-ended) produced."""

    answer: str | None  # MCQA: the letter with the highest probability; open: the generated text
    raw_output: str  # MCQA: the model's greedy first token, decoded; open: the generated text
    option_probs: dict[str, float]  # letter -> probability renormalised over the options (MCQA)
    confidence: float | None  # probability of ``answer`` (MCQA)
    letter_mass: float | None  # probability on all option letters before renormalising (MCQA)
    score: float | None  # Token-F1 against the references (open-ended with references)
    token_counts: dict[str, int]  # "prompt", "visual", "generated"
    timings: dict[str, float]  # seconds: "preprocess", "vision", "prefill", "generate"
    resolution: tuple[int, int] | None  # H, W actually fed to the vision encoder


class Adapter(Protocol):
    """What the worker and the cell runner need of a model: its family and one answer per request
    (``HFAdapter`` and its family subclasses; the sweep engine needs an ``HFAdapter`` itself)."""

    family: ClassVar[str]

    def answer(self, request: InferenceRequest) -> InferenceResult: ...


def read_marker(path: str | Path) -> dict | None:
    """The ``trajaudit.json`` marker of a tiny model, or None for a real checkpoint."""
    marker = Path(path) / MARKER_FILE
    return json.loads(marker.read_text()) if marker.is_file() else None


def _config(path: Path) -> dict:
    config = path / "config.json"
    if not config.is_file():
        raise UserError(f"{path}: not a model checkpoint (no config.json)")
    try:
        return json.loads(config.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{config}: invalid JSON ({exc})") from None


def detect_family(path: str | Path) -> str:
    """The family of a checkpoint folder, from its config.json ``model_type``."""
    path = Path(path)
    model_type = _config(path).get("model_type")
    for family, mt in MODEL_TYPES.items():
        if mt == model_type:
            return family
    raise UserError(f"{path}: model_type {model_type!r} is not a supported family ({', '.join(FAMILIES)})")


def checkpoint_fingerprint(path: str | Path) -> str:
    """A short hash of config.json plus the weight files' names and sizes.

    Cheap enough to run on every job (weights are never read) yet changes whenever the
    checkpoint is re-exported, so stored responses can say which weights produced them.
    """
    path = Path(path)
    config = path / "config.json"
    if not config.is_file():
        raise UserError(f"{path}: not a model checkpoint (no config.json)")
    digest = hashlib.sha256(config.read_bytes())
    weights = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    for weight in weights:
        digest.update(f"\n{weight.relative_to(path).as_posix()}\t{weight.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def load_adapter(family: str, path: str | Path, device: str = "cpu", dtype: str = "float32") -> Adapter:
    """Load the checkpoint at ``path`` (local folder only; nothing is downloaded) behind its family's adapter."""
    if family not in FAMILIES:
        raise UserError(f"unknown model family {family!r}; expected one of {', '.join(FAMILIES)}")
    if dtype not in DTYPES:
        raise UserError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    path = Path(path)
    found = detect_family(path)
    if found != family:
        raise UserError(f"{path}: checkpoint is a {found} model, not {family}")
    module = importlib.import_module(f"backend.runtime.inference.{family}")
    return module.ADAPTER.load(path, device=device, dtype=dtype)
