"""What an adapter hands between its phases: one request turned into model inputs.

A leaf of its own so the shared pipeline (``hf``) and the pruned vision path (``pruned``), which
both build one, need not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Prepared:
    """One request turned into model inputs (before the vision encoder runs)."""

    prompt: str  # the chat-templated text before the processor expands the visual placeholders
    inputs: dict[str, Any]  # every key the processor returned, on the model's device
    position_ids: torch.Tensor | None  # explicit positions for the language model; None = its default
    resolution: tuple[int, int] | None  # H, W of each frame as fed to the vision encoder
