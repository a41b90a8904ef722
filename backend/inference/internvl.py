"""InternVL (transformers-native ``-hf`` checkpoints): each frame is one image tile.

The processor expands ``<video>`` into ``Frame1: <img>...</img>`` lines and hands the frames to the
model as ``pixel_values`` (images), so the encoder is the image path; positions are 1-D.
"""

from __future__ import annotations

from backend.inference.hf import HFAdapter


class InternVLAdapter(HFAdapter):
    family = "internvl"
    pixel_key = "pixel_values"
    vision_kind = "image"
    per_frame_vision = True  # each frame is encoded on its own: features reusable across budgets


ADAPTER = InternVLAdapter
