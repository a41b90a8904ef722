"""LLaVA-NeXT-Video: CLIP frames encoded independently at a fixed size, pooled, then a Llama.

Nothing to work around: frames go in as a clip without metadata (the model has no notion of time
beyond their order), positions are the language model's own 0..L-1, and the SentencePiece letter
tokens (``▁A`` after ``ASSISTANT:``) are found by the shared scoring rule.
"""

from __future__ import annotations

from backend.inference.hf import HFAdapter


class LlavaNextVideoAdapter(HFAdapter):
    family = "llava_next_video"


ADAPTER = LlavaNextVideoAdapter
