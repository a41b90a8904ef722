"""Configuration labels: parsing, canonical form, cost and partial order (docs/metrics.md, "Grid").

A label names how the visual input was built: ``text``, ``<N>f``, ``<N>f@<spatial>``,
``<N>f/<policy>`` or both (``64f@151k/random-s1``), or a frame rate in place of the count (``1fps``, ``0.5fps``,
``2fps@151k``: as many frames as the video's length at that rate, so no count; a ladder of its own, ordered by
rate after every frame count, never a step of the frame-count one), optionally with a prompting protocol that is no
sampling policy (``8f+cot``, ``16f/adaptive+cot``: the same frames asked another way, a ladder of its own
and never a step of the uniform one), and optionally with an approximate-protocol suffix
``~prune<keep%>`` (``32f~prune85``: vision tokens pruned by pixel difference, keeping 85%; ``32f~prune85t8``:
dropping only units whose max-abs RGB difference is at most 8, at most 15% of them). ``<spatial>`` is ``<n>k`` (about n x 1000 pixels
per frame) or ``<n>px`` (frames resized to n x n). The scale-grid release spells some labels its own
way (``textonly``, ``64f_151k``, ``128f_input224``, ``128f_fallback``); :func:`from_scalegrid` maps
them, keeping tags it cannot translate verbatim while still parsing frames and pixels. Every label
has one canonical spelling (``08f`` -> ``8f``, ``16f/uniform`` -> ``16f``, ``64f@151.0k`` -> ``64f@151k``),
and frames and pixels are bounded (``MAX_FRAMES``, ``MAX_PIXELS``).

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
    r"^(?:(?P<frames>\d+)f|(?P<rate>\d+(?:\.\d+)?)fps)"
    r"(?:@(?P<spatial>\d+(?:\.\d+)?(?:k|px)))?"
    r"(?:/(?P<policy>[a-z][a-z0-9.\-]*))?"
    r"(?:\+(?P<protocol>[a-z][a-z0-9.\-]*))?"
    r"(?:~prune(?P<keep>\d+)(?:t(?P<threshold>\d+(?:\.\d+)?))?)?$"
)
# Scale-grid tags kept verbatim: "<N>f_<tag>", e.g. 128f_input224 or 128f_fallback.
_TAGGED = re.compile(r"^(?P<frames>\d+)f_(?P<tag>[a-z][a-z0-9]*)$")
_SCALEGRID_SPATIAL = re.compile(r"^(?P<frames>\d+)f_(?P<spatial>\d+(?:\.\d+)?k)$")
_INPUT_SIZE = re.compile(r"^input(?P<side>\d+)$")

DEFAULT_POLICY = "uniform"
# Sane bounds, so a typo (``9999999999f``) is refused here instead of overflowing a column later:
# an hour of video at 4 fps is 14,400 frames; 8192 x 8192 pixels is beyond any model's input.
MAX_FRAMES = 16_384
MAX_PIXELS = 8192 * 8192
MAX_FPS = 240.0  # a frame rate above a camera's is a typo


class ConfigLabelError(ValueError):
    """A configuration label that does not follow the grammar in docs/metrics.md."""


@dataclass(frozen=True, order=False)
class Config:
    """One parsed configuration label."""

    label: str
    frames: int  # 0 for text and for a frame rate (``fps``), which fixes no count
    pixels: int | None  # pixels per frame; None = the model's default resolution
    policy: str  # sampling policy; "uniform" when the label names none
    tag: str | None = None  # a scale-grid tag kept verbatim (e.g. "fallback")
    keep: int | None = None  # approximate protocol: vision tokens pruned, keeping this % (``~prune85``)
    threshold: float | None = None  # ... only those whose pixel difference is at most this (``~prune85t8``)
    prompting: str | None = None  # a protocol that is no sampling policy (``8f+cot``: chain-of-thought prompting)
    fps: float | None = None  # frames per second, in place of a count (``0.5fps``)

    @property
    def is_exact(self) -> bool:
        """False for an approximate processing protocol (``~prune``): never part of a default grid."""
        return self.keep is None

    @property
    def exact_label(self) -> str:
        """The label of the exact twin (``32f~prune85`` -> ``32f``), compared with it by paired drift."""
        return self.label.split("~", 1)[0]

    @property
    def is_text(self) -> bool:
        return self.frames == 0 and self.fps is None

    @property
    def ladder_key(self) -> tuple:
        """What the steps of one budget ladder share: everything but the frame count (pixels per
        frame, sampling policy, approximate protocol, scale-grid tag) and whether the budget is a rate."""
        return (self.pixels, self.policy, self.prompting, self.keep, self.threshold, self.tag, self.fps is not None)

    @property
    def is_budget_step(self) -> bool:
        """A step of a budget ladder (docs/metrics.md, "Grid"): visual, default sampling, no scale-grid
        tag, exact processing, so that only its frames and pixels say what it is."""
        return (
            not self.is_text
            and self.fps is None
            and self.policy == DEFAULT_POLICY
            and self.prompting is None
            and self.tag is None
            and self.keep is None
        )

    @property
    def protocol(self) -> str:
        """What else the label says besides its budget: the sampling policy, else the scale-grid tag
        (an ``input<side>`` tag is a resolution, not a protocol), else ``uniform``."""
        if self.prompting is not None:
            return self.prompting if self.policy == DEFAULT_POLICY else f"{self.policy}+{self.prompting}"
        if self.policy != DEFAULT_POLICY:
            return self.policy
        if self.fps is not None:
            return "fps"
        return self.tag if self.tag and not self.tag.startswith("input") else DEFAULT_POLICY

    @property
    def cost(self) -> float | None:
        """Visual pixels fed (frames x pixels per frame); None when the resolution is the default."""
        if self.is_text:
            return 0.0
        return None if self.pixels is None else float(self.frames * self.pixels)


def _spatial(raw: str, spatial: str) -> tuple[str, int]:
    """The canonical spelling of a spatial part (``0151k`` -> ``151k``) and its pixels per frame."""
    if spatial.endswith("px"):
        side = int(spatial[:-2])
        text, pixels = f"{side}px", side * side
    else:
        k = float(spatial[:-1])
        text, pixels = f"{k:g}k", int(round(k * 1000))
    if not 0 < pixels <= MAX_PIXELS:
        raise ConfigLabelError(f"config label {raw!r}: pixels per frame must be in 1..{MAX_PIXELS:,} (8192 x 8192)")
    return text, pixels


def _rate(raw: str, digits: str) -> tuple[str, float]:
    """The canonical spelling of a frame rate (``1.0`` -> ``1``, ``00.50`` -> ``0.5``) and its value."""
    rate = float(digits)
    if not 0 < rate <= MAX_FPS:
        raise ConfigLabelError(f"config label {raw!r}: a frame rate is above 0 and at most {MAX_FPS:g} fps")
    return f"{rate:g}fps", rate


def _frames(raw: str, digits: str) -> int:
    frames = int(digits)
    if frames == 0:
        raise ConfigLabelError(f"config label {raw!r}: 0 frames is spelled 'text'")
    if frames > MAX_FRAMES:
        raise ConfigLabelError(f"config label {raw!r}: at most {MAX_FRAMES:,} frames")
    return frames


@lru_cache(maxsize=4096)
def parse(label: str) -> Config:
    """Parse a canonical label (``text``, ``16f``, ``64f@151k/random-s1``) or a kept scale-grid tag."""
    raw = label
    label = label.strip()
    if label == "text":
        return Config("text", 0, None, DEFAULT_POLICY)
    m = _CANONICAL.match(label)
    if m:
        # One spelling per configuration: leading zeros and trailing ".0" are dropped (08f -> 8f).
        budget, fps = _rate(raw, m["rate"]) if m["rate"] else (None, None)
        frames = 0 if fps is not None else _frames(raw, m["frames"])
        spatial, pixels = _spatial(raw, m["spatial"]) if m["spatial"] else (None, None)
        keep = None if m["keep"] is None else int(m["keep"])
        if keep is not None and not 1 <= keep <= 99:
            raise ConfigLabelError(f"config label {raw!r}: ~prune<keep%> keeps 1..99 percent of the vision tokens")
        threshold = None if m["threshold"] is None else float(m["threshold"])
        if threshold is not None and threshold > 255:
            raise ConfigLabelError(f"config label {raw!r}: ~prune<keep%>t<threshold> takes an RGB difference 0..255")
        policy = m["policy"] or DEFAULT_POLICY
        text = (
            (budget or f"{frames}f")
            + (f"@{spatial}" if spatial else "")
            + (f"/{policy}" if policy != DEFAULT_POLICY else "")
        )
        text += f"+{m['protocol']}" if m["protocol"] else ""
        if keep is not None:
            text += f"~prune{keep}"
        if threshold is not None:
            text += f"t{np.format_float_positional(threshold, trim='-')}"
        return Config(text, frames, pixels, policy, keep=keep, threshold=threshold, prompting=m["protocol"], fps=fps)
    m = _TAGGED.match(label)
    if m:
        frames = _frames(raw, m["frames"])
        size = _INPUT_SIZE.match(m["tag"])
        pixels = int(size["side"]) ** 2 if size else None
        return Config(label, frames, pixels, DEFAULT_POLICY, tag=m["tag"])
    if label != label.lower() and (_CANONICAL.match(label.lower()) or _TAGGED.match(label.lower())):
        raise ConfigLabelError(
            f"config label {raw!r}: labels are lowercase (frames as 'f', policy names such as 'adaptive'): "
            f"write {label.lower()!r}"
        )
    raise ConfigLabelError(
        f"unknown config label {raw!r}: expected 'text', '<N>f', '<rate>fps', '<N>f@<n>k', '<N>f@<n>px', "
        "'<N>f/<policy>', '<N>f+<protocol>', '<label>~prune<keep%>[t<threshold>]' or a combination such as "
        "'64f@151k/random-s1' or '8f/adaptive+cot'"
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


def make_label(frames: int, pixels_k: float | None = None, policy: str | None = None, keep: int | None = None) -> str:
    """Build a canonical label from its parts (the inverse of :func:`parse`)."""
    if frames == 0:
        return "text"
    label = f"{frames}f"
    if pixels_k is not None:
        label += f"@{pixels_k:g}k"
    if policy and policy != DEFAULT_POLICY:
        label += f"/{policy}"
    if keep is not None:
        label += f"~prune{keep}"
    return parse(label).label


def with_policy(label: str, policy: str) -> str:
    """``label`` with its sampling policy set (``16f+cot`` -> ``16f/adaptive+cot``), every other part kept."""
    c = parse(label)
    base, sep, tail = c.label.partition("~")
    budget, plus, prompting = base.partition("+")
    return parse(f"{budget.split('/', 1)[0]}/{policy}{plus}{prompting}{sep}{tail}").label


def sort_key(label: str) -> tuple:
    """Display order: text first, then frames, then frame rates (by rate), then pixels (default first), then policy,
    then prompting protocol."""
    c = parse(label)
    return (
        c.fps is not None,
        c.fps or 0.0,
        c.frames,
        -1 if c.pixels is None else c.pixels,
        c.policy != DEFAULT_POLICY,
        c.policy,
        c.prompting is not None,
        c.prompting or "",
        c.keep is not None,
        c.label,
    )


def order(labels: list[str]) -> list[str]:
    """Sort labels into the default grid order, dropping duplicates."""
    return sorted(set(labels), key=sort_key)


def visual(labels: list[str]) -> list[str]:
    """The labels that feed frames (all but text), in the order given."""
    return [label for label in labels if not parse(label).is_text]


def lower_matrix(labels: list[str]) -> np.ndarray:
    """``L[a, b]`` is True when configuration a is strictly cheaper than b (a partial order).

    Text-only is cheaper than every visual configuration. Two visual configurations compare by
    frames x pixels when both state pixels; when neither does they share the default resolution
    and compare by frames. A config with pixels and one without are not ordered (unknown default).
    Frame rates compare with frame rates alone, the same way (rate in place of frames): a rate fixes no
    count, so ``1fps`` and ``8f`` are not ordered.
    """
    cfgs = [parse(lab) for lab in labels]
    n = len(cfgs)
    out = np.zeros((n, n), dtype=bool)
    for i, a in enumerate(cfgs):
        for j, b in enumerate(cfgs):
            if a.is_text or b.is_text:
                out[i, j] = a.is_text and not b.is_text
            elif (a.fps is None) != (b.fps is None):
                continue
            elif a.pixels is None and b.pixels is None:
                out[i, j] = (a.fps or a.frames) < (b.fps or b.frames)
            elif a.pixels is not None and b.pixels is not None:
                out[i, j] = (a.fps or a.frames) * a.pixels < (b.fps or b.frames) * b.pixels
    return out


LOGGED = "logged"  # the policy that replays a logged answer's own frames (``backend.runtime.logged_frames``)
LOGGED_SUFFIX = f"/{LOGGED}"


def takes_seed(policy: str) -> bool:
    """Whether the policy draws at random without naming its seed (a bare ``random``): only then does a
    response's seed column say which frames it saw (``random-s3`` carries its seed)."""
    return (policy or DEFAULT_POLICY).strip() == "random"


def is_logged(cfg: Config) -> bool:
    """Whether the label replays a logged answer's frames (``16f/logged``)."""
    return cfg.policy == LOGGED


def base_label(cfg: Config) -> str:
    """The logged configuration a ``logged`` label replays (``16f/logged`` -> ``16f``)."""
    return parse(cfg.label.replace(LOGGED_SUFFIX, "", 1)).label
