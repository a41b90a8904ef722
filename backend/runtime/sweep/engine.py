"""One video group through one adapter: every pending cell answered, with the reuses switched on.

Reuses (each can be switched off; all off is the baseline, ``adapter.answer`` per cell with its own
decode, exactly what a re-run job does):

``decode``  one decode of the union of every configuration's frames per video, resized frames
            kept per pixel budget (:mod:`backend.runtime.sweep.frames`);
``prefix``  per configuration, one processor call, one vision pass and one prompt-prefix prefill
            shared by the clip's questions (:func:`backend.runtime.inference.reuse.answer_group`);
            text-only questions share the tokens their prompts start with;
``vision``  per-frame encoder outputs kept across budgets, for families that encode frames
            independently (LLaVA-NeXT-Video, InternVL); never for Qwen (frame pairs).

Text-only cells never touch the video: they are answered before the clip is even probed, and a
group with only text cells pending opens no file.

Every cell comes back with its phase timings: ``decode`` (its share of the clip's one decode),
``preprocess``, ``vision``, ``prefill``, ``generate`` (shares of work done once for several cells,
plus its own work; see :mod:`backend.runtime.inference.reuse`). Summed over cells they give the time each
phase took.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backend.contracts.runs import SweepCounters, SweepFailure
from backend.runtime.inference.base import InferenceResult
from backend.runtime.inference.cell import item_request, prune_spec
from backend.runtime.inference.hf import HFAdapter
from backend.runtime.inference.records import Answered  # one answered cell, as the worker's
from backend.runtime.inference.reuse import FrameFeatures, ReuseCounters, answer_group
from backend.runtime.sampling import frame_indices, policy_name
from backend.runtime.sweep.accounting import PHASES, REUSES
from backend.runtime.sweep.frames import ClipFrames
from backend.runtime.sweep.plan import VideoGroup
from backend.videos.decode import decoder, probe, resolve_video
from store.configs import Config, parse
from store.errors import UserError


@dataclass(frozen=True)
class Reuse:
    decode: bool = True
    prefix: bool = True
    vision: bool = True

    @classmethod
    def without(cls, disabled: Sequence[str]) -> Reuse:
        unknown = sorted(set(disabled) - set(REUSES))
        if unknown:
            raise UserError(f"--no-reuse: unknown reuse {', '.join(unknown)}; expected some of {', '.join(REUSES)}")
        return cls(**{name: name not in disabled for name in REUSES})

    def enabled(self) -> list[str]:
        return [name for name in REUSES if getattr(self, name)]


@dataclass
class EngineCounters:
    """Reuse counters of the adapter side plus the frames decoded."""

    reuse: ReuseCounters = field(default_factory=ReuseCounters)
    frames_decoded: int = 0
    frames_decoded_cold: int = 0  # what one decode per visual cell would have decoded
    videos_opened: int = 0

    def add(self, other: EngineCounters) -> EngineCounters:
        self.reuse.add(other.reuse)
        self.frames_decoded += other.frames_decoded
        self.frames_decoded_cold += other.frames_decoded_cold
        self.videos_opened += other.videos_opened
        return self

    def report(self) -> SweepCounters:
        """The counters as the sweep's report prints them."""
        return SweepCounters(
            **self.reuse.to_dict(),
            frames_decoded=self.frames_decoded,
            frames_decoded_cold=self.frames_decoded_cold,
            videos_opened=self.videos_opened,
        )


def label_seed(cfg: Config) -> int | None:
    """The seed a configuration's policy names (``random-s1`` -> 1), else None."""
    return policy_name(cfg.policy)[1]


class Engine:
    """Answers video groups with one loaded adapter: an ``HFAdapter``, not any ``Adapter``, because the
    reuses (``answer_group``) drive its processor, vision encoder and prefill step by step."""

    def __init__(
        self,
        adapter: HFAdapter,
        video_root: str | os.PathLike,
        reuse: Reuse,
        default_pixels: int | None = None,
    ):
        self.adapter, self.video_root, self.reuse = adapter, video_root, reuse
        self.default_pixels = default_pixels
        self.counters = EngineCounters()

    def _pixels(self, cfg: Config) -> int | None:
        return cfg.pixels if cfg.pixels is not None else self.default_pixels

    def run(self, group: VideoGroup) -> Iterator[Answered | SweepFailure]:
        """Every pending cell of ``group``: text-only first, then visual configurations, largest budget first."""
        items = {row["item_id"]: row for row in group.items.to_dict("records")}
        by_config = {label: list(ids) for label, ids in group.cells.groupby("config", sort=False)["item_id"]}
        cfgs = [parse(label) for label in by_config]
        for cfg in (c for c in cfgs if c.is_text):
            yield from self._text([items[i] for i in by_config[cfg.label]], cfg)
        visual = [c for c in cfgs if not c.is_text]
        if visual:
            # largest budget first: its frames cover the nested smaller budgets' (decoded, processed, encoded)
            yield from self._visual(group, items, by_config, sorted(visual, key=lambda c: (-c.frames, c.label)))

    def _text(self, group_items: list[dict[str, Any]], cfg: Config) -> Iterator[Answered]:
        """The clip's text-only questions: sharing the tokens their prompts start with, under ``prefix``."""
        none = np.empty(0, dtype=np.int64)
        requests = [item_request(item, None, none, None, None, self._pixels(cfg)) for item in group_items]
        results = answer_group(self.adapter, requests, share_prefix=self.reuse.prefix, counters=self.counters.reuse)
        for item, request, result in zip(group_items, requests, results):
            yield Answered(item, cfg, None, none, None, request.pixels, result, _timings(result))

    def _visual(self, group, items, by_config, cfgs: list[Config]) -> Iterator[Answered | SweepFailure]:
        try:
            path = resolve_video(self.video_root, group.video)
            info = probe(path)
            wanted = {c.label: frame_indices(c.policy, info.n_frames, info.fps, c.frames, label_seed(c)) for c in cfgs}
        except UserError as exc:
            for cfg in cfgs:
                yield from (SweepFailure(item_id=i, config=cfg.label, message=str(exc)) for i in by_config[cfg.label])
            return
        self.counters.videos_opened += 1
        read_by = decoder(path)
        clip = ClipFrames(path, info, self.adapter.resize_for_budget, reuse=self.reuse.decode)
        clip.preload([wanted[c.label] for c in cfgs])
        n_visual = sum(len(by_config[c.label]) for c in cfgs)
        self.counters.frames_decoded_cold += sum(len(wanted[c.label]) * len(by_config[c.label]) for c in cfgs)
        features = FrameFeatures() if self.reuse.vision else None
        for cfg in cfgs:
            ids, indices, pixels = by_config[cfg.label], wanted[cfg.label], self._pixels(cfg)
            try:
                frames, decode_s, resize_s = clip.frames(indices, pixels)
                decode = [decode_s]
                if not self.reuse.decode:  # the baseline decodes once per cell, as a cold cell does
                    decode += [clip.frames(indices, pixels)[1] for _ in ids[1:]]
                spec = prune_spec(cfg)
                requests = [item_request(items[i], frames, indices, info.fps, info.n_frames, pixels, spec) for i in ids]
                results = answer_group(
                    self.adapter,
                    requests,
                    share_prefix=self.reuse.prefix,
                    features=features,
                    counters=self.counters.reuse,
                )
            except UserError as exc:
                yield from (SweepFailure(item_id=i, config=cfg.label, message=str(exc)) for i in ids)
                continue
            for k, (item_id, result) in enumerate(zip(ids, results)):
                timings = _timings(result)
                timings["decode"] = decode[k] if not self.reuse.decode else clip.decode_share(n_visual)
                timings["preprocess"] += resize_s / len(ids)
                yield Answered(
                    items[item_id], cfg, label_seed(cfg), indices, info.fps, pixels, result, timings, read_by
                )
        self.counters.frames_decoded += clip.frames_decoded


def _timings(result: InferenceResult) -> dict[str, float]:
    return {phase: float((result.timings or {}).get(phase, 0.0)) for phase in PHASES}
