"""Configuration labels: parsing, canonical form, cost and partial order (METRICS.md, "Grid").

A label names how the visual input was built: ``text``, ``<N>f``, ``<N>f@<spatial>``,
``<N>f/<policy>`` or both (``64f@151k/random-s1``). ``<spatial>`` is ``<n>k`` (about n x 1000 pixels
per frame) or ``<n>px`` (frames resized to n x n). The scale-grid release spells some labels its own
way (``textonly``, ``64f_151k``, ``128f_input224``, ``128f_fallback``); :func:`from_scalegrid` maps
them, keeping tags it cannot translate verbatim while still parsing frames and pixels.

Cost is ``frames x pixels per frame``. Labels without a spatial part share the model's default
resolution, so two configurations are comparable when both state pixels, or neither does, or one is
text-only. Costs that cannot be compared are "not ordered", like equal costs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_CANONICAL = re.compile(
    r"^(?P<frames>\d+)f"
    r"(?:@(?P<spatial>\d+(?:\.\d+)?(?:k|px)))?"
    r"(?:/(?P<policy>[a-z][a-z0-9.\-]*))?$"
)
# Scale-grid tags kept verbatim: "<N>f_<tag>", e.g. 128f_input224 or 128f_fallback.
_TAGGED = re.compile(r"^(?P<frames>\d+)f_(?P<tag>[a-z][a-z0-9]*)$")
_SCALEGRID_SPATIAL = re.compile(r"^(?P<frames>\d+)f_(?P<spatial>\d+(?:\.\d+)?k)$")
_INPUT_SIZE = re.compile(r"^input(?P<side>\d+)$")

DEFAULT_POLICY = "uniform"


class ConfigLabelError(ValueError):
    """A configuration label that does not follow the grammar in METRICS.md."""


@dataclass(frozen=True, order=False)
class Config:
    """One parsed configuration label."""

    label: str
    frames: int
    pixels: int | None  # pixels per frame; None = the model's default resolution
    policy: str  # sampling policy; "uniform" when the label names none
    tag: str | None = None  # a scale-grid tag kept verbatim (e.g. "fallback")

    @property
    def is_text(self) -> bool:
        return self.frames == 0

    @property
    def cost(self) -> float | None:
        """Visual pixels fed (frames x pixels per frame); None when the resolution is the default."""
        if self.is_text:
            return 0.0
        return None if self.pixels is None else float(self.frames * self.pixels)


def _spatial_pixels(spatial: str) -> int:
    if spatial.endswith("px"):
        side = int(spatial[:-2])
        return side * side
    return int(round(float(spatial[:-1]) * 1000))


@lru_cache(maxsize=4096)
def parse(label: str) -> Config:
    """Parse a canonical label (``text``, ``16f``, ``64f@151k/random-s1``) or a kept scale-grid tag."""
    raw = label
    label = label.strip()
    if label == "text":
        return Config("text", 0, None, DEFAULT_POLICY)
    m = _CANONICAL.match(label)
    if m:
        frames = int(m["frames"])
        if frames == 0:
            raise ConfigLabelError(f"config label {raw!r}: 0 frames is spelled 'text'")
        pixels = _spatial_pixels(m["spatial"]) if m["spatial"] else None
        return Config(label, frames, pixels, m["policy"] or DEFAULT_POLICY)
    m = _TAGGED.match(label)
    if m:
        frames = int(m["frames"])
        size = _INPUT_SIZE.match(m["tag"])
        pixels = int(size["side"]) ** 2 if size else None
        return Config(label, frames, pixels, DEFAULT_POLICY, tag=m["tag"])
    raise ConfigLabelError(
        f"unknown config label {raw!r}: expected 'text', '<N>f', '<N>f@<n>k', '<N>f@<n>px', "
        "'<N>f/<policy>' or a combination such as '64f@151k/random-s1'"
    )


def from_scalegrid(name: str) -> str:
    """Map a scale-grid release config name to a canonical label (FORMATS.md)."""
    name = name.strip()
    if name == "textonly":
        return "text"
    m = _SCALEGRID_SPATIAL.match(name)
    if m:
        return f"{m['frames']}f@{m['spatial']}"
    return parse(name).label  # validates; kept tags such as 128f_fallback pass through


def canonical(label: str) -> str:
    """The canonical spelling of a label; accepts scale-grid names too."""
    try:
        return parse(label).label
    except ConfigLabelError:
        return from_scalegrid(label)


def make_label(frames: int, pixels_k: float | None = None, policy: str | None = None) -> str:
    """Build a canonical label from its parts (the inverse of :func:`parse`)."""
    if frames == 0:
        return "text"
    label = f"{frames}f"
    if pixels_k is not None:
        label += f"@{pixels_k:g}k"
    if policy and policy != DEFAULT_POLICY:
        label += f"/{policy}"
    return parse(label).label


def sort_key(label: str) -> tuple:
    """Display order: text first, then frames, then pixels (default first), then policy."""
    c = parse(label)
    return (c.frames, -1 if c.pixels is None else c.pixels, c.policy != DEFAULT_POLICY, c.policy, c.label)


def order(labels: list[str]) -> list[str]:
    """Sort labels into the default grid order, dropping duplicates."""
    return sorted(set(labels), key=sort_key)


def lower_matrix(labels: list[str]) -> np.ndarray:
    """``L[a, b]`` is True when configuration a is strictly cheaper than b (a partial order).

    Text-only is cheaper than every visual configuration. Two visual configurations compare by
    frames x pixels when both state pixels; when neither does they share the default resolution
    and compare by frames. A config with pixels and one without are not ordered (unknown default).
    """
    cfgs = [parse(lab) for lab in labels]
    n = len(cfgs)
    out = np.zeros((n, n), dtype=bool)
    for i, a in enumerate(cfgs):
        for j, b in enumerate(cfgs):
            if a.is_text or b.is_text:
                out[i, j] = a.is_text and not b.is_text
            elif a.pixels is None and b.pixels is None:
                out[i, j] = a.frames < b.frames
            elif a.pixels is not None and b.pixels is not None:
                out[i, j] = a.frames * a.pixels < b.frames * b.pixels
    return out
