"""Tiny models for the inference tests: each family built once per session into a temp folder.

Import the fixture into a test module with ``from tests.tiny_models import tiny  # noqa: F401``.
Building goes through ``build_tiny`` and ``save_pretrained``, loading through ``load_adapter``
(``AutoProcessor`` / ``AutoModelForImageTextToText``), so every test exercises the real path;
conftest.py keeps the hub offline.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

OPTIONS = ["A. Apples.", "B. Candles.", "C. Dogs.", "D. Cats."]
FPS, TOTAL = 10.0, 100  # the clip the frames are said to come from


class TinyModels:
    """Builds each family's tiny model on first use and keeps its folder and loaded adapter."""

    def __init__(self, root: Path):
        self.root = root
        self.dir = cache(self._build)
        self.adapter = cache(self._load)

    def _build(self, family: str) -> Path:
        from backend.runtime.inference.tiny import build_tiny

        return build_tiny(family, self.root / family)

    def _load(self, family: str):
        from backend.runtime.inference.base import load_adapter

        return load_adapter(family, self.dir(family))


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> TinyModels:
    return TinyModels(tmp_path_factory.mktemp("tiny-models"))


def frames(k: int = 4, side: int = 56, seed: int = 0, height: int | None = None) -> np.ndarray:
    """``k`` random uint8 frames of ``height x side`` (square by default)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(k, height or side, side, 3), dtype=np.uint8)


def request(
    k: int | None = 4,
    *,
    side: int = 56,
    height: int | None = None,
    pixels: int | None = None,
    answer_type: str = "mcqa",
    references: list[str] | None = None,
    max_new_tokens: int = 4,
):
    """An InferenceRequest for ``k`` uniformly spaced frames of the 100-frame clip (``k=None``: text only)."""
    from backend.runtime.inference.base import InferenceRequest

    clip = None if k is None else frames(k, side, height=height)
    indices = None if k is None else (np.arange(k) * TOTAL // k).tolist()
    return InferenceRequest(
        question="What is on the table?",
        options=OPTIONS,
        frames=clip,
        frame_indices=indices,
        native_fps=None if k is None else FPS,
        total_frames=None if k is None else TOTAL,
        pixels=pixels,
        answer_type=answer_type,
        references=references or [],
        max_new_tokens=max_new_tokens,
    )
