"""InternVL (transformers-native ``-hf`` checkpoints): each frame is one image tile.

The processor expands ``<video>`` into ``Frame1: <img>...</img>`` lines and hands the frames to the
model as ``pixel_values`` (images), so the encoder is the image path; positions are 1-D.

Pruning (C-VISION): a language-model token is a pixel-shuffled group of 2 x 2 patches
(``downsample_ratio`` 0.5); which patches a token holds is read off the model's own
``pixel_shuffle`` applied to patch indices, so the unit follows the model's layout. Dropped units'
patches are removed after the embeddings (learned positions added there) and before the first
layer; InternViT's layers take no attention mask, so frames are batched by equal kept counts
(:mod:`backend.runtime.inference.kept_patches`, never padded). Positions: the prompt's 1-D index, with gaps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutputWithPooling

from backend.runtime.inference.hf import HFAdapter
from backend.runtime.inference.kept_patches import encode_frames
from backend.runtime.inference.pruned import unit_scores
from store.errors import UserError


class InternVLAdapter(HFAdapter):
    family = "internvl"
    pixel_key = "pixel_values"
    vision_kind = "image"
    per_frame_vision = True  # each frame is encoded on its own: features reusable across budgets

    def _units(self, side_patches: tuple[int, int]) -> torch.Tensor:
        """``[units, 4]``: the patch indices (row-major) each output token holds, in token order."""
        h, w = side_patches
        index = torch.arange(h * w, dtype=torch.float32).view(1, h, w, 1)
        shuffled = self.model.model.pixel_shuffle(index, scale_factor=self.model.config.downsample_ratio)
        return shuffled.reshape(-1, shuffled.shape[-1]).long()

    def _patch(self) -> int:
        config = self.model.config
        if config.vision_feature_select_strategy != "default" or config.downsample_ratio != 0.5:
            raise UserError(f"{self.family}: pruning needs the 'default' feature strategy and a 0.5 pixel shuffle")
        return (
            config.vision_config.patch_size[0]
            if isinstance(config.vision_config.patch_size, (list, tuple))
            else config.vision_config.patch_size
        )

    def unit_scores(self, inputs: dict[str, Any]) -> np.ndarray:
        patch = self._patch()
        image = self.processor.image_processor
        per_patch = unit_scores(inputs[self.pixel_key], image.image_std, patch)  # [F, h, w]
        frames, h, w = per_patch.shape
        units = self._units((h, w)).numpy()
        scores = per_patch.reshape(frames, -1)[:, units].max(axis=2)
        return scores.reshape(frames, h // 2, w // 2)

    def encode_kept(self, inputs: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
        patch = self._patch()
        model = self.model.model
        tower = model.vision_tower
        pixels = inputs[self.pixel_key].to(model.dtype)
        frames, side_h, side_w = len(pixels), pixels.shape[-2] // patch, pixels.shape[-1] // patch
        units = self._units((side_h, side_w)).to(self.device)
        keep = torch.from_numpy(mask.reshape(frames, -1)).to(self.device)
        patches = torch.zeros(frames, side_h * side_w, dtype=torch.bool, device=self.device)
        patches[:, units.flatten()] = keep.repeat_interleave(units.shape[1], dim=1)
        hidden = tower.embeddings(pixels)  # [F, 1 + P, D]
        layer = self.model.config.vision_feature_layer
        depth = len(tower.encoder.layer)
        layers = tower.encoder.layer[: depth if layer == -1 else (depth + 1 + layer if layer < 0 else layer)]
        norm = tower.layernorm if layer == -1 else torch.nn.Identity()

        def run(x: torch.Tensor, _mask: torch.Tensor | None) -> torch.Tensor:
            for block in layers:
                x = block(x)
            return norm(x)

        features = encode_frames(run, hidden, patches, slack=1.0)
        shuffled = model.pixel_shuffle(features.reshape(frames, side_h, side_w, -1), scale_factor=0.5)
        projected = model.multi_modal_projector(shuffled.reshape(frames, -1, shuffled.shape[-1]))
        kept = projected.reshape(frames * units.shape[0], -1)[keep.reshape(-1)]
        return {self.vision_kind: BaseModelOutputWithPooling(pooler_output=kept)}


ADAPTER = InternVLAdapter
