"""One (item, configuration) cell answered cold: probe, sample, decode exactly those frames, ask.

This is what a re-run job does (``backend.runtime.worker``) and what the sweep's drift check compares the
reused path against, so both call the same function. Text-only cells never touch the video.
Imports no torch (the adapter is passed in).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from backend.runtime.inference.base import Adapter, InferenceRequest, InferenceResult
from backend.runtime.inference.pruning import PruneSpec
from backend.runtime.logged_frames import check_inside
from backend.runtime.sampling import frame_indices
from backend.videos.decode import decode_frames, decoder, probe, resolve_video
from store.configs import Config


def _json_list(value: Any) -> list:
    return json.loads(value) if isinstance(value, str) else []


def item_fields(item: Mapping[str, Any]) -> tuple[list[str], list[str], str]:
    """(options, references, answer_type) of an ``items`` row, with the store's defaults for missing values."""
    answer_type = item["answer_type"] if isinstance(item["answer_type"], str) else "mcqa"
    return _json_list(item["options"]), _json_list(item["references"]), answer_type


def prune_spec(cfg: Config) -> PruneSpec | None:
    """The approximate protocol a label names, None for an exact label: ``32f~prune85`` keeps 85% of the
    vision units, ``32f~prune85t8`` drops only units whose pixel difference is at most 8 (at most 15%).
    The label is the whole protocol, so a re-run of a stored label prunes exactly as its sweep did."""
    return None if cfg.keep is None or cfg.is_text else PruneSpec(cfg.keep / 100, cfg.threshold)  # keep: not is_exact


def item_request(
    item: Mapping[str, Any],
    frames: np.ndarray | None,
    indices: np.ndarray,
    fps: float | None,
    total: int | None,
    pixels: int | None,
    prune: PruneSpec | None = None,
) -> InferenceRequest:
    """The request that asks ``item`` with these frames (``frames=None``: text-only)."""
    options, references, answer_type = item_fields(item)
    return InferenceRequest(
        question=item["question"],
        options=options,
        frames=frames,
        frame_indices=None if frames is None else [int(i) for i in indices],
        native_fps=fps,
        total_frames=total,
        pixels=pixels,
        answer_type=answer_type,
        references=references,
        prune=prune,
    )


@dataclass
class ColdCell:
    """A cold answer and how it was obtained."""

    result: InferenceResult
    indices: np.ndarray  # frame indices shown (empty for text-only)
    fps: float | None
    pixels: int | None
    timings: dict[str, float] = field(default_factory=dict)  # decode + the adapter's phases
    decoder: str | None = None  # what read the frames (None for text-only)


def video_of(item: Mapping[str, Any]) -> str | None:
    """``items.video`` or None (missing values come back from the store as None or NaN)."""
    video = item["video"]
    return None if video is None or pd.isna(video) else str(video)


@dataclass
class Shown:
    """The frames a cell shows the model (none for text-only) and how they were read: what a
    dispatcher ships to an actor whose node holds no videos, or what :func:`answer_cold` reads itself."""

    frames: np.ndarray | None
    indices: np.ndarray
    fps: float | None
    total: int | None
    decode_s: float | None = None  # None: nothing decoded (text-only)
    decoder: str | None = None

    @property
    def nbytes(self) -> int:
        """The pixels' bytes (what shipping these frames costs)."""
        return 0 if self.frames is None else int(self.frames.nbytes)


def read_frames(
    item: Mapping[str, Any],
    cfg: Config,
    video_root: str | os.PathLike,
    seed: int | None,
    given: np.ndarray | None = None,
) -> Shown:
    """Probe the item's video, pick the indices (``cfg``'s policy, or ``given``: a ``logged`` label
    replays a logged answer's, which must lie inside the video) and decode exactly those frames."""
    if cfg.is_text:
        return Shown(None, np.empty(0, dtype=np.int64), None, None)
    path = resolve_video(video_root, video_of(item))
    info = probe(path)
    if given is None:
        indices = frame_indices(cfg.policy, info.n_frames, info.fps, cfg.frames, seed)
    else:
        check_inside(given, info.n_frames, f"item {item['item_id']}")
        indices = given
    t0 = time.perf_counter()
    frames = decode_frames(path, indices)
    return Shown(frames, indices, info.fps, info.n_frames, time.perf_counter() - t0, decoder(path))


def answer_shown(
    adapter: Adapter, item: Mapping[str, Any], cfg: Config, shown: Shown, default_pixels: int | None
) -> ColdCell:
    """Ask ``adapter`` about ``item`` with the frames ``shown`` (an approximate label prunes as it says)."""
    timings = {} if shown.decode_s is None else {"decode": shown.decode_s}
    pixels = cfg.pixels if cfg.pixels is not None else default_pixels
    request = item_request(item, shown.frames, shown.indices, shown.fps, shown.total, pixels, prune_spec(cfg))
    result = adapter.answer(request)
    timings |= dict(result.timings or {})
    return ColdCell(result, shown.indices, shown.fps, pixels, timings, shown.decoder)


def answer_cold(
    adapter: Adapter,
    item: Mapping[str, Any],
    cfg: Config,
    video_root: str | os.PathLike,
    seed: int | None,
    default_pixels: int | None,
    given: np.ndarray | None = None,
) -> ColdCell:
    """Answer ``item`` at ``cfg`` from scratch (``seed`` serves a bare ``random`` policy; an approximate
    label prunes as its label says). ``given``: the frame indices to feed instead of the policy's
    (a ``logged`` label replays a logged answer's; they must lie inside the video)."""
    return answer_shown(adapter, item, cfg, read_frames(item, cfg, video_root, seed, given), default_pixels)
