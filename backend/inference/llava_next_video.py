"""LLaVA-NeXT-Video: CLIP frames encoded independently at a fixed size, pooled, then a Llama.

Nothing to work around: frames go in as a clip without metadata (the model has no notion of time
beyond their order), positions are the language model's own 0..L-1, and the SentencePiece letter
tokens (``▁A`` after ``ASSISTANT:``) are found by the shared scoring rule. Frames are a batch of
independent CLIP images, so a frame's features are the same in every budget that picks it (the
sweep reuses them).
"""

from __future__ import annotations

from backend.inference.hf import HFAdapter


class LlavaNextVideoAdapter(HFAdapter):
    family = "llava_next_video"
    per_frame_vision = True  # each frame is encoded on its own: features reusable across budgets


ADAPTER = LlavaNextVideoAdapter
