"""The frames of one clip for every configuration of a sweep: decoded once, resized once per budget.

Nested uniform budgets (8 subset of 16 subset of 32 subset of 64) and seeded random policies pick
overlapping frames, so the union of every configuration's indices is decoded in one call and each
configuration takes its rows from it. Frames resized to a pixel budget are kept per budget too:
the adapter's resize is per frame and idempotent (``HFAdapter.resize_for_budget``), so resizing a
frame once and handing the resized frame to the adapter gives exactly what it would have fed.

Timing: the one decode is shared by every visual cell of the clip; ``decode_share`` splits it
equally among them. A frame's resize is charged to the configuration that first needs it.
Without reuse every call decodes its frames again, as a cold cell does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from backend.videos.decode import VideoInfo, decode_frames

Resize = Callable[[np.ndarray, int | None], np.ndarray]


class ClipFrames:
    """Decoded (and resized) frames of one video, shared by every configuration when ``reuse``."""

    def __init__(self, path: Path, info: VideoInfo, resize: Resize, reuse: bool = True):
        self.path, self.info, self.resize, self.reuse = path, info, resize, reuse
        self.union = np.empty(0, dtype=np.int64)
        self.decoded: np.ndarray | None = None
        # pixels -> (resized frames, done mask); None when the budget keeps the decoded size
        self._resized: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}
        self.decode_seconds = 0.0
        self.frames_decoded = 0

    def preload(self, index_sets: list[np.ndarray]) -> None:
        """Decode the union of ``index_sets`` in one call (reuse only)."""
        if not self.reuse or not index_sets:
            return
        self.union = np.unique(np.concatenate(index_sets))
        t0 = time.perf_counter()
        self.decoded = decode_frames(self.path, self.union)
        self.decode_seconds += time.perf_counter() - t0
        self.frames_decoded += len(self.union)

    def frames(self, indices: np.ndarray, pixels: int | None) -> tuple[np.ndarray, float, float]:
        """(frames, decode seconds, resize seconds) for one configuration's ``indices``.

        With reuse the frames come from the preloaded union (decode seconds 0: the union's decode
        is shared, see :meth:`decode_share`) and, under a pixel budget, are already resized.
        Without reuse they are decoded now, at native size (the adapter resizes, as cold).
        """
        if not self.reuse:
            t0 = time.perf_counter()
            frames = decode_frames(self.path, indices)
            self.frames_decoded += len(indices)
            return frames, time.perf_counter() - t0, 0.0
        rows, decoded = np.searchsorted(self.union, indices), self.decoded
        inside = decoded is not None and rows.max(initial=0) < len(self.union)
        if decoded is None or not inside or not np.array_equal(self.union[rows], indices):
            raise ValueError("ClipFrames.frames: indices outside the preloaded union")
        if pixels is None:
            return _take(decoded, rows), 0.0, 0.0
        t0 = time.perf_counter()
        store = self._resized_store(decoded, pixels, rows)
        if store is None:  # the budget holds the decoded frames as they are
            return _take(decoded, rows), 0.0, time.perf_counter() - t0
        resized, done = store
        missing = rows[~done[rows]]
        if len(missing):
            resized[missing] = self.resize(decoded[missing], pixels)
            done[missing] = True
        return _take(resized, rows), 0.0, time.perf_counter() - t0

    def _resized_store(
        self, decoded: np.ndarray, pixels: int, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        if pixels not in self._resized:
            shape = self.resize(decoded[rows[:1]], pixels).shape[1:]  # every frame of a clip has one size
            self._resized[pixels] = (
                None
                if shape == decoded.shape[1:]
                else (
                    np.empty((len(self.union), *shape), dtype=np.uint8),
                    np.zeros(len(self.union), dtype=bool),
                )
            )
        return self._resized[pixels]

    def decode_share(self, n_visual_cells: int) -> float:
        """The union decode's seconds per visual cell of the clip."""
        return self.decode_seconds / n_visual_cells if self.reuse and n_visual_cells else 0.0


def _take(frames: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``frames[rows]``; the array itself when ``rows`` is every row in order (the largest budget of a
    nested grid asks for the whole union: no copy of every decoded frame)."""
    if len(rows) == len(frames) and np.array_equal(rows, np.arange(len(frames))):
        return frames
    return frames[rows]
