"""The machinery every transformers-native family shares: load, prepare, encode, score, generate, time.

A family module subclasses :class:`HFAdapter` and overrides only what differs (how frames and their
metadata reach the processor, which positions the language model gets). The phases are run
separately so each is timed on its own (phase accounting, docs/metrics.md): ``preprocess`` (prompt,
resize, processor), ``vision`` (the vision encoder, fed back through ``mm_encoder_outputs`` so it
is not run twice), ``prefill`` (the language model over the prompt) and ``generate`` (greedy
decoding, open-ended only). Video decoding is the caller's and is not timed here.

Generation is a greedy loop over the KV cache rather than ``model.generate`` because ``generate``
recomputes positions with transformers' own rope index (the Qwen2.5-VL trap) and keeps
``rope_deltas`` on the model between calls; here every step gets explicit positions.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor
from transformers.modeling_outputs import BaseModelOutputWithPooling

from backend.runtime.inference.base import InferenceRequest, InferenceResult
from backend.runtime.inference.frames import fit_to_budget
from backend.runtime.inference.prepared import Prepared
from backend.runtime.inference.prompting import option_letters, user_text
from backend.runtime.inference.pruned import prune
from backend.runtime.inference.scoring import letter_token_ids, score_letters
from store.errors import UserError
from store.token_f1 import token_f1

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class PhaseTimer:
    """Wall time per phase; synchronises the accelerator so asynchronous kernels are counted."""

    def __init__(self, device: torch.device):
        self.device = device
        self.timings = {"preprocess": 0.0, "vision": 0.0, "prefill": 0.0, "generate": 0.0}

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        self._sync()
        start = time.perf_counter()
        yield
        self._sync()
        self.timings[phase] += time.perf_counter() - start


class HFAdapter:
    """A transformers ``AutoModelForImageTextToText`` checkpoint behind the ``Adapter`` interface."""

    family: ClassVar[str]
    pixel_key: ClassVar[str] = "pixel_values_videos"  # the processor output holding the frames
    vision_kind: ClassVar[str] = "video"  # get_<kind>_features and the mm_encoder_outputs key
    grid_keys: ClassVar[tuple[str, ...]] = ()  # processor outputs the vision encoder needs too
    # True where the encoder sees each frame on its own (LLaVA-NeXT-Video, InternVL): a frame's features
    # are then the same in every budget that picks it, and the sweep may reuse them. Never for Qwen,
    # whose encoder fuses frame pairs (nested budgets pair frames differently).
    per_frame_vision: ClassVar[bool] = False
    # True where the processor also treats each frame alone and the prompt's expansion depends only on the
    # frame count (LLaVA-NeXT-Video): ``process_frames`` / ``process_pixels`` then let the sweep process
    # each frame of a video once per budget.
    per_frame_processor: ClassVar[bool] = False

    def __init__(self, model, processor, device: str | torch.device = "cpu"):
        self.model = model.eval()
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.device = torch.device(device)
        self.dtype = next(model.parameters()).dtype
        placeholders = (getattr(processor, "image_token_id", None), getattr(processor, "video_token_id", None))
        self.visual_token_ids = [i for i in placeholders if i is not None]
        configured = model.generation_config.eos_token_id
        eos = [self.tokenizer.eos_token_id, *([] if configured is None else np.atleast_1d(configured).tolist())]
        self.eos_ids = {int(i) for i in eos if i is not None}
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else min(self.eos_ids, default=0))  # batched suffixes (masked)
        # a sweep asks each question at every budget: its chat template and its letters' ids
        # (a tokenizer call on five texts) are the same each time, so they are remembered (bounded)
        self._prompts: dict[tuple, str] = {}
        self._letter_ids: dict[tuple[str, tuple[str, ...]], list[int]] = {}

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", dtype: str = "float32") -> HFAdapter:
        """Processor and model from a local folder (``local_files_only``: nothing is downloaded)."""
        if dtype not in TORCH_DTYPES:
            raise UserError(f"unknown dtype {dtype!r}; expected one of {', '.join(TORCH_DTYPES)}")
        processor = AutoProcessor.from_pretrained(path, local_files_only=True)
        model = AutoModelForImageTextToText.from_pretrained(path, dtype=TORCH_DTYPES[dtype], local_files_only=True)
        return cls(model.to(device), processor, device)  # type: ignore[arg-type]  # transformers' stubs type .to on the class, not the instance

    def prompt(self, request: InferenceRequest) -> str:
        """:meth:`render_prompt`, remembered per question, options, answer type and whether frames come."""
        key = (request.question, tuple(request.options or ()), request.answer_type, request.frames is None)
        return _remember(self._prompts, key, lambda: self.render_prompt(request))

    # -- family hooks -------------------------------------------------------------------------
    def render_prompt(self, request: InferenceRequest) -> str:
        """The checkpoint's chat template around the question (and one video placeholder). It may read
        only the fields :meth:`prompt` remembers it by."""
        content = [{"type": "text", "text": user_text(request.question, request.options, request.answer_type)}]
        if request.frames is not None:
            content.insert(0, {"type": "video"})
        messages = [{"role": "user", "content": content}]
        return self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def process(self, prompt: str, request: InferenceRequest) -> dict[str, Any]:
        """Processor outputs for the prompt and frames. Fixed-resolution encoders: a pixel budget
        first downsizes the frames (the information the model gets), then the processor resizes
        them to its encoder's input size, which ``resolution`` reports."""
        if request.frames is None:
            return self.processor(text=[prompt], return_tensors="pt")
        frames = self.resize_for_budget(request.frames, request.pixels)
        return self.processor(text=[prompt], videos=[frames], return_tensors="pt")

    def position_ids(self, inputs: dict[str, Any]) -> torch.Tensor | None:
        """Explicit language-model positions; None lets the model use 0..L-1."""
        return None

    # C-VISION (backend.runtime.inference.pruned): families that can drop static vision units override both.
    prune_unsupported: ClassVar[str] = "this family has no pruned vision path"

    def unit_scores(self, inputs: dict[str, Any]) -> np.ndarray:
        """Max-abs RGB difference per vision unit ``[steps, rows, cols]``, in the encoder's token order."""
        raise UserError(f"{self.family}: --approx prune is not available: {self.prune_unsupported}")

    def encode_kept(self, inputs: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
        """``mm_encoder_outputs`` of the kept units only, the dropped ones never entering the encoder."""
        raise UserError(f"{self.family}: --approx prune is not available: {self.prune_unsupported}")

    def fed_resolution(self, inputs: dict[str, Any]) -> tuple[int, int] | None:
        pixels = inputs.get(self.pixel_key)
        return None if pixels is None else (int(pixels.shape[-2]), int(pixels.shape[-1]))

    # -- shared pipeline ----------------------------------------------------------------------
    def prepare(self, request: InferenceRequest) -> Prepared:
        """Prompt, processor outputs (all of them, on the device), positions and fed resolution."""
        prompt = self.prompt(request)
        return self.prepared(prompt, self.process(prompt, request))

    def prepared(self, prompt: str, raw: dict[str, Any]) -> Prepared:
        """Processor outputs on the device, with their positions and fed resolution."""
        inputs = {k: self._to_device(k, v) for k, v in raw.items()}
        return Prepared(prompt, inputs, self.position_ids(inputs), self.fed_resolution(inputs))

    def _to_device(self, key: str, value: Any) -> Any:
        """Tensors to the model's device; pixels also to its dtype (timing grids keep theirs)."""
        if not torch.is_tensor(value):
            return value
        if key.startswith("pixel_values"):
            return value.to(self.device, self.dtype)
        return value.to(self.device)

    def encode_vision(self, inputs: dict[str, Any]) -> dict[str, Any] | None:
        """Run the vision encoder alone; its output goes to the forward as ``mm_encoder_outputs``.

        None for a text-only prompt."""
        if self.pixel_key not in inputs:
            return None
        encode = getattr(self.model.model, f"get_{self.vision_kind}_features")
        grids = {k: inputs[k] for k in self.grid_keys}
        return {self.vision_kind: encode(**{self.pixel_key: inputs[self.pixel_key]}, **grids, return_dict=True)}

    def frame_pixels(self, inputs: dict[str, Any]) -> torch.Tensor:
        """The processed pixels one frame per row ``[F, C, H, W]`` (per-frame encoders only)."""
        pixels = inputs[self.pixel_key]
        return pixels[0] if self.vision_kind == "video" else pixels

    def encode_frames(self, pixels: torch.Tensor) -> torch.Tensor:
        """Encoder outputs ``[n, tokens, hidden]`` of ``n`` frames' pixels (rows of :meth:`frame_pixels`)."""
        encode = getattr(self.model.model, f"get_{self.vision_kind}_features")
        batch = pixels[None] if self.vision_kind == "video" else pixels
        pooled = encode(**{self.pixel_key: batch}, return_dict=True).pooler_output
        return pooled.reshape(len(pixels), -1, pooled.shape[-1])

    def join_frames(self, features: torch.Tensor) -> dict[str, Any]:
        """Per-frame features ``[F, tokens, hidden]`` as the ``mm_encoder_outputs`` a forward takes."""
        pooled = features.reshape(1, -1, features.shape[-1]) if self.vision_kind == "video" else features
        return {self.vision_kind: BaseModelOutputWithPooling(pooler_output=pooled)}

    def forward(self, prepared: Prepared, encoded: dict[str, Any] | None, use_cache: bool):
        """The language model over the whole prompt; logits of the last position only."""
        kwargs = {k: v for k, v in prepared.inputs.items() if k != self.pixel_key}
        return self.model(
            **kwargs,
            position_ids=prepared.position_ids,
            mm_encoder_outputs=encoded,
            logits_to_keep=1,
            use_cache=use_cache,
        )

    def greedy(self, first, prepared: Prepared, max_new_tokens: int) -> list[int]:
        """Greedy continuation from a prefill output, with explicit positions after the prompt."""
        cache, token = first.cache, int(first.logits[0, -1].argmax())
        generated = [token]
        positions = prepared.position_ids
        next_position = None if positions is None else int(positions.max()) + 1
        while len(generated) < max_new_tokens and token not in self.eos_ids:
            step = None
            if positions is not None and next_position is not None:  # both or neither
                step = torch.full((*positions.shape[:-1], 1), next_position, dtype=positions.dtype, device=self.device)
                next_position += 1
            out = self.model(
                input_ids=torch.tensor([[token]], device=self.device),
                cache=cache,
                position_ids=step,
                use_cache=True,
                logits_to_keep=1,
            )
            cache, token = out.cache, int(out.logits[0, -1].argmax())
            generated.append(token)
        return generated

    # -- pieces the sweep's reuse path shares with ``answer`` ---------------------------------
    def letters(self, request: InferenceRequest, prompt: str) -> tuple[list[str], list[int]]:
        """Option letters and their token ids after ``prompt`` (empty for open-ended requests)."""
        if request.answer_type != "mcqa":
            return [], []
        letters = option_letters(request.options)
        ids = _remember(
            self._letter_ids, (prompt, tuple(letters)), lambda: letter_token_ids(self.tokenizer, prompt, letters)
        )
        return letters, list(ids)

    def process_frames(self, frames: np.ndarray) -> torch.Tensor:
        """Processed pixels of frames, one frame at a time: only where ``per_frame_processor`` (the sweep's
        ``FrameFeatures`` asks no other family)."""
        raise NotImplementedError(f"{self.family}: its processor treats a clip as a whole (per_frame_processor)")

    def process_pixels(self, prompt: str, pixels: torch.Tensor, n_frames: int | None = None) -> dict[str, Any]:
        """What :meth:`process` returns, from :meth:`process_frames`' pixels: only where ``per_frame_processor``."""
        raise NotImplementedError(f"{self.family}: its processor treats a clip as a whole (per_frame_processor)")

    def resize_for_budget(self, frames: np.ndarray, pixels: int | None) -> np.ndarray:
        """Frames as ``process`` feeds them under a per-frame budget (idempotent: resizing twice is a no-op),
        so a caller may resize a whole clip once and slice it per configuration."""
        return frames if pixels is None else fit_to_budget(frames, pixels, self.budget_factor())

    def budget_factor(self) -> int:
        """The side (pixels) frame sizes snap to under a budget: 1 for fixed-resolution encoders."""
        return 1

    def prefix_end(self, input_ids: torch.Tensor) -> int:
        """Length of the question-independent prefix: everything up to the last visual token.

        Visual placeholders are added special tokens, so the text before them tokenises the same
        whatever follows; the prompt cache of the sweep stops here.
        """
        visual = torch.isin(input_ids[0], input_ids.new_tensor(self.visual_token_ids)).nonzero()
        return 0 if visual.numel() == 0 else int(visual.max()) + 1

    def conclude(
        self,
        request: InferenceRequest,
        prepared: Prepared,
        out,
        letters: list[str],
        letter_ids: list[int],
        timer: PhaseTimer,
    ) -> InferenceResult:
        """The result from the prompt's last-position output: letter scores, or greedy text (timed)."""
        mcqa = request.answer_type == "mcqa"
        if mcqa:
            logits = out.logits[0, -1]
            scores = score_letters(logits, letter_ids, letters)
            ids = [int(logits.argmax())]  # the greedy first token: what the model "wanted" to say
        else:
            with timer("generate"):
                ids = self.greedy(out, prepared, request.max_new_tokens)
        raw = self.tokenizer.decode(ids, skip_special_tokens=not mcqa)
        input_ids = prepared.inputs["input_ids"]
        common = dict(
            raw_output=raw,
            token_counts={
                "prompt": int(input_ids.shape[-1]),
                "visual": int(torch.isin(input_ids, input_ids.new_tensor(self.visual_token_ids)).sum()),
                "generated": 0 if mcqa else len(ids),
            },
            timings=timer.timings,
            resolution=prepared.resolution,
        )
        if mcqa:
            return InferenceResult(
                answer=scores.answer,
                option_probs=scores.option_probs,
                confidence=scores.confidence,
                letter_mass=scores.letter_mass,
                score=None,
                **common,
            )
        text = raw.strip()
        return InferenceResult(
            answer=text or None,
            option_probs={},
            confidence=None,
            letter_mass=None,
            score=token_f1(text, request.references) if request.references else None,
            **common,
        )

    def answer(self, request: InferenceRequest) -> InferenceResult:
        """One request, cold: every phase run for it alone (the sweep's baseline and drift reference)."""
        timer = PhaseTimer(self.device)
        with timer("preprocess"):
            prepared = self.prepare(request)
            letters, letter_ids = self.letters(request, prepared.prompt)
        with torch.inference_mode():
            encoded = None
            if self.pixel_key in prepared.inputs:  # text-only: no vision phase at all
                with timer("vision"):  # the pruning signal is vision work: its cost counts against it
                    if request.prune is None:
                        encoded = self.encode_vision(prepared.inputs)
                    else:
                        prepared, encoded, _ = prune(self, prepared, request.prune)
            with timer("prefill"):
                out = self.forward(prepared, encoded, use_cache=request.answer_type != "mcqa")
            return self.conclude(request, prepared, out, letters, letter_ids, timer)


REMEMBERED = 4096  # entries per memo; a fuller one starts again (a sweep revisits recent questions only)


def _remember(memo: dict, key, compute):
    """``memo[key]``, computed on a miss; the memo is emptied when full."""
    if key not in memo:
        if len(memo) >= REMEMBERED:
            memo.clear()
        memo[key] = compute()
    return memo[key]
