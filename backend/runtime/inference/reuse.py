"""Answering several questions on one clip at one configuration with the shared work done once.

A sweep asks every question of a video (Video-MME has three) under every configuration. Cold, each
(question, configuration) cell runs the processor on the frames, the vision encoder and a prefill
over the whole prompt. Here, for the questions that share a clip and a configuration:

* **one processor call** (``compose``): the frames are processed with the first question's prompt;
  the other questions' token ids are that expanded prompt up to the end of the visual block followed
  by their own tail, tokenised from their unexpanded prompt. This is exact because visual
  placeholders are added special tokens: text between special tokens tokenises the same wherever it
  sits. The rule is checked on the first question against the processor's real output (and the
  text before the video must be the same for every question); when a check fails every question
  gets its own processor call instead;
* **one vision pass**, and with a :class:`FrameFeatures` cache (families that encode frames
  independently, ``adapter.per_frame_vision``) only the frames no earlier budget encoded at this
  resolution go through the encoder;
* **one prefill of the prefix** (everything up to the last visual token, ``adapter.prefix_end``)
  into a ``DynamicCache``; each question then runs only its suffix, with ``position_ids`` sliced
  from its full sequence's positions (never the model's stored ``rope_deltas``, INFERENCE.md), and
  the cache is cropped back to the prefix (``crop`` with a negative count) for the next question.
  Questions whose prefix ids (and positions) differ get their own prefix. The multiple-choice
  questions of one prefix run their suffixes packed into one forward on the prefix's cache, each seeing
  only the prefix and itself (:func:`run_suffixes`); the last decoder layer skips the work no answer
  reads, in the prefix prefill and in the suffixes (:mod:`backend.runtime.inference.kv_prefill`).

Each switch is independent; with both off this is exactly ``adapter.answer`` per request.

Pruning (an approximate request, ``request.prune``): the one vision pass prunes (one keep mask,
since the questions share the frames) and every question's prompt loses the same placeholder
tokens (:mod:`backend.runtime.inference.pruned`). Per-frame features are not reused then: a frame's kept
units depend on the frame before it, which differs between budgets.

Phase accounting: work done once for several requests is timed once and split equally among the
requests that share it (the processor call and the vision pass among the questions of the group,
a prefix prefill among the questions on that prefix); work done per request is its own. So each
request's ``timings`` add up, over the group, to the time the group took.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from types import SimpleNamespace
from typing import Any

import torch

from backend.runtime.inference.base import InferenceRequest, InferenceResult
from backend.runtime.inference.hf import HFAdapter, PhaseTimer
from backend.runtime.inference.kv_prefill import last_layer_kv_only, last_layer_rows
from backend.runtime.inference.packed_attention import packed_attention
from backend.runtime.inference.prepared import Prepared
from backend.runtime.inference.pruned import drop_tokens, prune

SEQUENCE_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids")  # processor outputs along the tokens


@dataclass
class ReuseCounters:
    """What was computed, beside what a cold run of the same requests computes."""

    requests: int = 0
    processor_calls: int = 0
    processor_calls_cold: int = 0
    frames_encoded: int = 0
    frames_encoded_cold: int = 0
    prefill_tokens: int = 0
    prefill_tokens_cold: int = 0
    prefixes: int = 0  # prefix prefills run
    composed: int = 0  # requests whose ids were composed instead of processed

    def add(self, other: ReuseCounters) -> ReuseCounters:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class FrameFeatures:
    """Vision-encoder outputs of one video's frames, keyed by (frame index, pixel budget).

    Only valid for encoders that see each frame alone; the processed pixels of a frame depend on
    the frame and the budget only, so the key identifies the features exactly within one video.
    Where the processor also treats frames alone (``adapter.per_frame_processor``) the processed
    pixels are kept the same way, so each frame is resized and normalised once per budget, and a
    request whose every frame is already encoded carries no pixels at all (``[1, 0, C, H, W]``: the
    encoder will not run for it, so nothing is copied for it); the sweep asks the largest budget first,
    whose frames cover the smaller nested ones.
    """

    def __init__(self) -> None:
        self._features: dict[tuple[int, int | None], torch.Tensor] = {}
        self._pixels: dict[tuple[int, int | None], torch.Tensor] = {}

    def __len__(self) -> int:
        return len(self._features)

    def prepare(self, adapter: HFAdapter, request: InferenceRequest) -> Prepared:
        """``adapter.prepare(request)``, processing only the frames this video has not processed at this budget."""
        if not adapter.per_frame_processor or request.frames is None or request.frame_indices is None:
            return adapter.prepare(request)
        keys = [(int(i), request.pixels) for i in request.frame_indices]
        missing = [j for j, key in enumerate(keys) if key not in self._pixels]
        processed = None
        if missing:
            frames = request.frames if len(missing) == len(keys) else request.frames[missing]
            frames = adapter.resize_for_budget(frames, request.pixels)
            processed = adapter.process_frames(frames)
            for j, pixels in zip(missing, processed):
                self._pixels[keys[j]] = pixels
        prompt = adapter.prompt(request)
        if all(key in self._features for key in keys):
            pixels = self._pixels[keys[0]].new_empty((0, *self._pixels[keys[0]].shape))
        elif len(missing) == len(keys):
            pixels = processed  # every frame processed just now, in order: the processor's own tensor
        else:
            pixels = torch.stack([self._pixels[k] for k in keys])
        return adapter.prepared(prompt, adapter.process_pixels(prompt, pixels, len(keys)))

    def encode(self, adapter: HFAdapter, prepared: Prepared, request: InferenceRequest) -> tuple[dict[str, Any], int]:
        """(``mm_encoder_outputs`` for the request's frames, frames encoded): only missing frames are encoded."""
        if request.frame_indices is None:
            raise ValueError("FrameFeatures.encode: a request without frame_indices has no per-frame key")
        keys = [(int(i), request.pixels) for i in request.frame_indices]
        missing = [j for j, key in enumerate(keys) if key not in self._features]
        if missing:
            pixels = adapter.frame_pixels(prepared.inputs)
            pixels = pixels if len(missing) == len(pixels) else pixels[missing]  # every row: no copy
            for j, feature in zip(missing, adapter.encode_frames(pixels)):
                self._features[keys[j]] = feature
        return adapter.join_frames(torch.stack([self._features[key] for key in keys])), len(missing)


def _token_ids(adapter: HFAdapter, prompt: str) -> list[int]:
    return adapter.tokenizer(prompt, add_special_tokens=False)["input_ids"]


def _placeholders(adapter: HFAdapter) -> set[int]:
    """Ids of the visual placeholders in an unexpanded prompt (InternVL's ``<video>`` is not a visual token)."""
    names = [getattr(adapter.processor, n, None) for n in ("image_token", "video_token")]
    named = {adapter.tokenizer.convert_tokens_to_ids(t) for t in names if isinstance(t, str)}
    return set(adapter.visual_token_ids) | named


def _last_visual(ids: list[int], visual: set[int]) -> int:
    return max((i for i, t in enumerate(ids) if t in visual), default=-1)


def compose(
    adapter: HFAdapter, requests: list[InferenceRequest], features: FrameFeatures | None = None
) -> tuple[list[Prepared], int]:
    """Prepared inputs of requests sharing frames and budget, with one processor call when exact
    (through ``features`` when given: frames processed once per video and budget).

    Returns the prepared inputs and the number of processor calls made (1, or one per request).
    """
    first = adapter.prepare(requests[0]) if features is None else features.prepare(adapter, requests[0])
    if len(requests) == 1:
        return [first], 1
    visual = _placeholders(adapter)
    prompts = [adapter.prompt(r) for r in requests]
    unexpanded = [_token_ids(adapter, prompt) for prompt in prompts]
    cuts = [_last_visual(ids, visual) for ids in unexpanded]
    heads = {tuple(ids[: cut + 1]) for ids, cut in zip(unexpanded, cuts)}
    tails = [ids[cut + 1 :] for ids, cut in zip(unexpanded, cuts)]
    expanded = first.inputs["input_ids"]
    base = expanded.shape[-1] - len(tails[0])
    exact = (
        min(cuts) >= 0
        and len(heads) == 1  # the video comes before anything question-specific
        and base >= adapter.prefix_end(expanded) > 0
        and expanded[0, base:].tolist() == tails[0]  # the tail tokenises the same after the expansion
        and int(expanded[0, base - 1]) in adapter.tokenizer.added_tokens_decoder  # ... at a special-token boundary
        and all(k in SEQUENCE_KEYS for k, v in first.inputs.items() if torch.is_tensor(v) and v.shape == expanded.shape)
    )
    if not exact:
        return [first, *(adapter.prepare(r) for r in requests[1:])], len(requests)
    out = [first]
    for prompt, tail in zip(prompts[1:], tails[1:]):
        ids = torch.cat([expanded[:, :base], expanded.new_tensor([tail])], dim=1)
        inputs = dict(first.inputs, input_ids=ids)
        if "attention_mask" in inputs:
            inputs["attention_mask"] = torch.ones_like(ids)
        if "mm_token_type_ids" in inputs:
            types = first.inputs["mm_token_type_ids"]
            inputs["mm_token_type_ids"] = torch.cat([types[:, :base], types.new_zeros((1, len(tail)))], dim=1)
        out.append(Prepared(prompt, inputs, adapter.position_ids(inputs), first.resolution))
    return out, 1


def _prefix_key(prepared: Prepared, split: int) -> tuple[bytes, bytes]:
    ids = prepared.inputs["input_ids"][0, :split].cpu().numpy().tobytes()
    pos = b"" if prepared.position_ids is None else prepared.position_ids[..., :split].cpu().numpy().tobytes()
    return ids, pos


def prefill_prefix(adapter: HFAdapter, prepared: Prepared, encoded: dict[str, Any] | None, split: int):
    """The KV cache of the first ``split`` prompt tokens (the visual block and everything before it);
    the last decoder layer only computes the keys and values the suffixes read (:mod:`kv_prefill`)."""
    kwargs = {
        k: (v[..., :split] if k in SEQUENCE_KEYS else v) for k, v in prepared.inputs.items() if k != adapter.pixel_key
    }
    positions = None if prepared.position_ids is None else prepared.position_ids[..., :split]
    with last_layer_kv_only(adapter.model):
        return adapter.model(
            **kwargs, position_ids=positions, mm_encoder_outputs=encoded, use_cache=True, logits_to_keep=1
        ).cache


def run_suffix(adapter: HFAdapter, prepared: Prepared, cache, split: int):
    """The rest of the prompt on top of the cached prefix, with its slice of the full sequence's positions."""
    inputs = prepared.inputs
    kwargs = {k: inputs[k][..., split:] for k in ("input_ids", "mm_token_type_ids") if k in inputs}
    positions = None if prepared.position_ids is None else prepared.position_ids[..., split:]
    with last_layer_rows(adapter.model):
        return adapter.model(
            **kwargs,
            attention_mask=inputs.get("attention_mask"),
            position_ids=positions,
            cache=cache,
            use_cache=True,
            logits_to_keep=1,
        )


def run_suffixes(adapter: HFAdapter, prepared: list[Prepared], cache, split: int) -> list[SimpleNamespace]:
    """The suffixes of several questions on one cached prefix in one forward (MCQA: last-position logits only).

    The suffixes are packed one after the other into a single sequence on the prefix's cache (batch 1, so
    the cache is not copied per question) with a 4-D attention mask: each suffix token sees the prefix and
    the tokens of its own suffix up to itself, nothing of the other suffixes, and keeps its slice of its
    full sequence's positions (on the CPU the prefix is attended without the mask:
    :mod:`backend.runtime.inference.packed_attention`). The logits are read at the last token of each suffix. Attention back ends
    that take no custom mask get the suffixes as a padded batch instead (:func:`_padded_suffixes`). The
    cache is spent afterwards."""
    if adapter.model.config._attn_implementation not in ("sdpa", "eager"):
        return _padded_suffixes(adapter, prepared, cache, split)
    tails = [p.inputs["input_ids"][0, split:] for p in prepared]
    device = tails[0].device
    lengths = torch.tensor([len(t) for t in tails], device=device)
    ends = lengths.cumsum(0)
    total = int(ends[-1])
    block = torch.repeat_interleave(torch.arange(len(tails), device=device), lengths)  # suffix of each token
    step = torch.arange(total, device=device)
    # additive (0 where seen, the dtype's minimum elsewhere): what both back ends add to the scores
    mask = torch.zeros((1, 1, total, split + total), dtype=adapter.dtype, device=device)
    unseen = (block[:, None] != block[None, :]) | (step[None, :] > step[:, None])
    mask[0, 0, :, split:].masked_fill_(unseen, torch.finfo(adapter.dtype).min)
    positions = torch.cat([_own_positions(p, split) for p in prepared], dim=-1)
    with packed_attention(adapter.model, split):
        out = _suffix_pass(adapter, prepared, torch.cat(tails)[None], mask, positions, cache, ends - 1)
    return [SimpleNamespace(logits=out.logits[:, i : i + 1]) for i in range(len(tails))]


def _suffix_pass(adapter: HFAdapter, prepared: list[Prepared], ids, mask, positions, cache, rows=None):
    """One forward of suffix tokens on the prefix cache, the last layer run in full only for ``rows``
    (default: the last position of each batch row), the logits read there."""
    extra = {"mm_token_type_ids": torch.zeros_like(ids)} if "mm_token_type_ids" in prepared[0].inputs else {}
    with last_layer_rows(adapter.model, rows):
        return adapter.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            cache=cache,
            use_cache=True,
            logits_to_keep=1 if rows is None else rows,
            **extra,
        )


def _own_positions(p: Prepared, split: int) -> torch.Tensor:
    """The suffix's slice of its full sequence's positions (``[1, len]`` or ``[3, 1, len]``)."""
    full = p.position_ids
    if full is None:
        full = torch.arange(p.inputs["input_ids"].shape[-1], device=p.inputs["input_ids"].device)[None]
    return full[..., split:]


def _padded_suffixes(adapter: HFAdapter, prepared: list[Prepared], cache, split: int) -> list[SimpleNamespace]:
    """:func:`run_suffixes` as a batch: shorter suffixes padded *before* their first token and masked, so
    every row's last position is its own last token; the cache is repeated along the batch."""
    n = len(prepared)
    tails = [p.inputs["input_ids"][0, split:] for p in prepared]
    width = max(len(t) for t in tails)
    device = tails[0].device
    ids = torch.full((n, width), adapter.pad_id, dtype=tails[0].dtype, device=device)
    mask = torch.zeros((n, split + width), dtype=torch.long, device=device)
    mask[:, :split] = 1
    rows = []
    for i, (p, tail) in enumerate(zip(prepared, tails)):
        ids[i, width - len(tail) :] = tail
        mask[i, split + width - len(tail) :] = 1
        own = _own_positions(p, split)
        pad = own[..., :1].expand(*own.shape[:-1], width - len(tail))
        rows.append(torch.cat([pad, own], dim=-1))
    cache.batch_repeat_interleave(n)
    out = _suffix_pass(adapter, prepared, ids, mask, torch.cat(rows, dim=-2), cache)
    return [SimpleNamespace(logits=out.logits[i : i + 1]) for i in range(n)]


def _share(timings: list[dict[str, float]], members: list[int], phase: str, seconds: float) -> None:
    for i in members:
        timings[i][phase] += seconds / len(members)


@dataclass
class _Group:
    """The state :func:`answer_group`'s steps hand on: the requests, their prepared inputs, letters,
    encoder outputs, per-request phase timers, and the answers as they come."""

    adapter: HFAdapter
    requests: list[InferenceRequest]
    counters: ReuseCounters
    features: FrameFeatures | None
    share_prefix: bool
    timers: list[PhaseTimer] = field(init=False)
    prepared: list[Prepared] = field(init=False, default_factory=list)
    letters: list[tuple[list[str], list[int]]] = field(init=False, default_factory=list)
    encoded: list[dict[str, Any] | None] = field(init=False)
    results: list[InferenceResult | None] = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.requests)
        self.timers = [PhaseTimer(self.adapter.device) for _ in range(n)]
        self.encoded, self.results = [None] * n, [None] * n

    @property
    def timings(self) -> list[dict[str, float]]:
        return [t.timings for t in self.timers]

    @contextmanager
    def shared(self, members: list[int], phase: str) -> Iterator[None]:
        """Times a block done once for ``members`` and splits its seconds among them."""
        clock = PhaseTimer(self.adapter.device)
        with clock(phase):
            yield
        _share(self.timings, members, phase, clock.timings[phase])

    def conclude(self, i: int, out) -> None:
        self.results[i] = self.adapter.conclude(
            self.requests[i], self.prepared[i], out, *self.letters[i], self.timers[i]
        )


def answer_group(
    adapter: HFAdapter,
    requests: list[InferenceRequest],
    *,
    share_prefix: bool,
    features: FrameFeatures | None = None,
    counters: ReuseCounters | None = None,
) -> list[InferenceResult]:
    """Answers to requests that share frames, frame indices and pixel budget (one clip, one configuration).

    ``share_prefix``: one processor call, vision pass and prefix prefill for all of them.
    ``features``: per-frame encoder outputs reused across calls (ignored unless the family encodes
    frames independently). Both off: ``adapter.answer`` per request, nothing shared.

    Three paths, each a named step: :func:`_answer_cold` (nothing shared, or a lone text-only request);
    otherwise :func:`_prepare` (processor), :func:`_encode` (vision), then :func:`_answer_each` (a full
    prefill per request) or, sharing the prefix, :func:`_answer_on_prefixes`. Text-only questions share
    the tokens their prompts start with (the chat template's opening, and any common words).
    """
    counters = counters if counters is not None else ReuseCounters()
    features = features if adapter.per_frame_vision and requests[0].prune is None else None
    n = len(requests)
    text = requests[0].frames is None
    counters.requests += n
    counters.processor_calls_cold += n
    counters.frames_encoded_cold += n * requests[0].n_frames
    if (not share_prefix and (text or features is None)) or (text and n == 1):
        return _answer_cold(adapter, requests, counters)
    group = _Group(adapter, requests, counters, features, share_prefix)
    _prepare(group)
    with torch.inference_mode():
        if not text:
            _encode(group)
        if share_prefix:
            _answer_on_prefixes(group)
        else:
            _answer_each(group)
    answered = [r for r in group.results if r is not None]
    if len(answered) != n:
        raise RuntimeError(f"answer_group: {n - len(answered)} of {n} requests left unanswered")
    return answered


def _answer_cold(
    adapter: HFAdapter, requests: list[InferenceRequest], counters: ReuseCounters
) -> list[InferenceResult]:
    """``adapter.answer`` per request: the baseline, and every text-only request."""
    results = [adapter.answer(r) for r in requests]
    counters.processor_calls += len(requests)
    counters.frames_encoded += len(requests) * requests[0].n_frames
    for r in results:
        counters.prefill_tokens += r.token_counts["prompt"]
        counters.prefill_tokens_cold += r.token_counts["prompt"]
    return results


def _prepare(group: _Group) -> None:
    """Processor outputs and option letters: one composed call when sharing the prefix, else one per request
    (through the per-frame cache when there is one)."""
    adapter, requests, features = group.adapter, group.requests, group.features
    if group.share_prefix:
        with group.shared(list(range(len(requests))), "preprocess"):
            group.prepared, calls = compose(adapter, requests, features)
        group.counters.composed += len(requests) - 1 if calls == 1 else 0
    else:
        calls = len(requests)
        for r, t in zip(requests, group.timers):
            with t("preprocess"):
                group.prepared.append(adapter.prepare(r) if features is None else features.prepare(adapter, r))
    group.counters.processor_calls += calls
    for r, p, t in zip(requests, group.prepared, group.timers):
        with t("preprocess"):
            group.letters.append(adapter.letters(r, p.prompt))


def _encode(group: _Group) -> None:
    """The vision pass: once for the group when sharing the prefix, else per request. Pruned (the other
    questions then lose the same placeholder tokens), through the per-frame cache, or plain."""
    adapter, requests, prepared = group.adapter, group.requests, group.prepared
    spec = requests[0].prune
    everyone = list(range(len(requests)))
    for i in range(1 if group.share_prefix else len(requests)):
        with group.shared(everyone if group.share_prefix else [i], "vision"):
            if spec is not None:
                prepared[i], group.encoded[i], mask = prune(adapter, prepared[i], spec)
                if group.share_prefix and not mask.all():
                    prepared[1:] = [drop_tokens(adapter, p, mask) for p in prepared[1:]]
                fresh = requests[i].n_frames
            elif group.features is not None:
                group.encoded[i], fresh = group.features.encode(adapter, prepared[i], requests[i])
            else:
                group.encoded[i], fresh = adapter.encode_vision(prepared[i].inputs), requests[i].n_frames
        group.counters.frames_encoded += fresh


def _answer_each(group: _Group) -> None:
    """A full prefill per request on its own encoder outputs (per-frame reuse without prefix sharing)."""
    for i, (r, p) in enumerate(zip(group.requests, group.prepared)):
        with group.timers[i]("prefill"):
            out = group.adapter.forward(p, group.encoded[i], use_cache=r.answer_type != "mcqa")
        group.counters.prefill_tokens += p.inputs["input_ids"].shape[-1]
        group.counters.prefill_tokens_cold += p.inputs["input_ids"].shape[-1]
        group.conclude(i, out)


def _answer_on_prefixes(group: _Group) -> None:
    """One prefix prefill per distinct prefix (ids and positions); on each, the open-ended questions one at
    a time (generation continues each cache, cropped back after), then its MCQA questions in one batched
    suffix pass (which spends the cache)."""
    adapter, requests, prepared, counters = group.adapter, group.requests, group.prepared, group.counters
    if requests[0].frames is None:  # text-only: the tokens every prompt starts with
        split = _common_start(prepared)
        if split == 0:
            return _answer_each(group)
        splits = [split] * len(prepared)
    else:
        splits = [adapter.prefix_end(p.inputs["input_ids"]) for p in prepared]
    prefixes: dict[tuple[int, bytes, bytes], list[int]] = {}
    for i, (p, split) in enumerate(zip(prepared, splits)):
        prefixes.setdefault((split, *_prefix_key(p, split)), []).append(i)
    for (split, *_), members in prefixes.items():
        with group.shared(members, "prefill"):
            cache = prefill_prefix(adapter, prepared[members[0]], group.encoded[0], split)
        counters.prefixes += 1
        counters.prefill_tokens += split
        mcqa = [i for i in members if requests[i].answer_type == "mcqa"]
        single = [i for i in members if i not in mcqa] + (mcqa if len(mcqa) == 1 else [])
        for i in single:
            with group.timers[i]("prefill"):
                out = run_suffix(adapter, prepared[i], cache, split)
            group.conclude(i, out)
            cache.crop(split - cache.get_seq_length())  # back to the prefix for the next question
        if len(mcqa) > 1:
            with group.shared(mcqa, "prefill"):
                outs = run_suffixes(adapter, [prepared[i] for i in mcqa], cache, split)
            for i, out in zip(mcqa, outs):
                group.conclude(i, out)
        for i in members:
            length = prepared[i].inputs["input_ids"].shape[-1]
            counters.prefill_tokens += length - split
            counters.prefill_tokens_cold += length


def _common_start(prepared: list[Prepared]) -> int:
    """How many leading tokens every prompt shares, leaving each at least one of its own."""
    ids = [p.inputs["input_ids"][0].tolist() for p in prepared]
    shortest = min(len(x) for x in ids)
    n = 0
    while n < shortest - 1 and all(x[n] == ids[0][n] for x in ids):
        n += 1
    return n
