"""LLaVA-NeXT-Video: CLIP frames encoded independently at a fixed size, pooled, then a Llama.

Nothing to work around: frames go in as a clip without metadata (the model has no notion of time
beyond their order), positions are the language model's own 0..L-1, and the SentencePiece letter
tokens (``▁A`` after ``ASSISTANT:``) are found by the shared scoring rule. Frames are a batch of
independent CLIP images, so a frame's features are the same in every budget that picks it (the
sweep reuses them).

Pruning (C-VISION): a language-model token is the average of ``stride x stride`` CLIP patches
(``spatial_pool_stride``, 2), so that block is the unit. Dropped units' patches are removed after
the patch and position embeddings (CLIP's positions are learned and added there, so a kept patch
keeps its own) and before the first transformer layer; attention runs over the CLS token and the
kept patches of each frame. Pooling windows never straddle units, so a kept unit's pooled feature
comes from kept patches only. Only the layers up to ``vision_feature_layer`` run (the last CLIP
layer's output is never used by the model); the exact path goes through the same code with every
unit kept, so exact and pruned differ only in the units dropped. Frames with similar numbers of
kept patches are encoded as one batch, padded and masked (:mod:`backend.runtime.inference.kept_patches`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutputWithPooling

from backend.runtime.inference.hf import HFAdapter
from backend.runtime.inference.kept_patches import encode_frames, run_layers
from backend.runtime.inference.normalise import fused_mean_std, normalise_channels_last
from backend.runtime.inference.pruned import unit_scores
from store.errors import UserError


class LlavaNextVideoAdapter(HFAdapter):
    family = "llava_next_video"
    per_frame_vision = True  # each frame is encoded on its own: features reusable across budgets
    per_frame_processor = True  # resize, crop and normalise per frame; the prompt expands by frame count

    def process_frames(self, frames: np.ndarray) -> torch.Tensor:
        """Processed pixels ``[F, C, S, S]`` of frames resized to their budget (the video processor alone).

        The frames go in as a channels-first *view* of the decoded ``[F, H, W, 3]`` array (channels-last
        in memory): the processor then resizes without first copying them into planes, and its values
        are the same to the bit (the tests compare them with :meth:`process`'s); the result stays
        channels-last in memory. Its list of one video is taken as it is (no stack into a batch of one).
        The processor resizes and crops; the rescale and normalisation run here, to the same bits in half
        the time (:mod:`backend.runtime.inference.normalise`)."""
        view = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2)
        video = self.processor.video_processor
        fused = fused_mean_std(video, view.device)
        skip = {} if fused is None else {"do_rescale": False, "do_normalize": False}  # done below, faster
        out = video(videos=[view], input_data_format="channels_first", return_tensors=None, **skip)[self.pixel_key][0]
        return out if fused is None else normalise_channels_last(out, *fused)

    def process_pixels(self, prompt: str, pixels: torch.Tensor, n_frames: int | None = None) -> dict[str, Any]:
        """What :meth:`process` returns, from processed pixels ``[F, C, S, S]``: the processor's expansion
        rule (``replace_video_token``: patches per frame / 4 for the pooling, times the frames), tokenised.
        ``n_frames`` (default ``F``): the frames the prompt stands for, when ``pixels`` holds fewer."""
        p = self.processor
        per_frame = (pixels.shape[-2] // p.patch_size) * (pixels.shape[-1] // p.patch_size) // 4
        n_frames = len(pixels) if n_frames is None else n_frames
        # the placeholder is an added special token, so the text around it tokenises the same whether it
        # stands once or thousands of times: tokenise the short prompt and repeat the placeholder's id
        short = self.tokenizer([prompt], return_tensors="pt")
        video = short["input_ids"][0] == self.tokenizer.convert_tokens_to_ids(p.video_token)
        repeats = torch.where(video, per_frame * n_frames, 1)
        expanded = {k: v.repeat_interleave(repeats, dim=1) for k, v in short.items()}
        return {**expanded, self.pixel_key: pixels[None]}

    def _unit(self) -> tuple[int, int]:
        """(patch side, pooling stride) in pixels and patches."""
        config = self.model.config
        if config.spatial_pool_mode != "average" or config.vision_feature_select_strategy != "default":
            raise UserError(f"{self.family}: pruning needs average pooling and the 'default' feature strategy")
        return config.vision_config.patch_size, config.spatial_pool_stride

    def unit_scores(self, inputs: dict[str, Any]) -> np.ndarray:
        patch, stride = self._unit()
        video = self.processor.video_processor
        return unit_scores(inputs[self.pixel_key][0], video.image_std, patch * stride)

    def feature_layers(self) -> int:
        """How many CLIP layers the selected feature layer needs (``hidden_states[0]`` is the embedding)."""
        layer = self.model.config.vision_feature_layer
        if not isinstance(layer, int):
            raise UserError(f"{self.family}: pruning needs a single vision_feature_layer, got {layer!r}")
        depth = len(self.model.model.vision_tower.encoder.layers)
        return depth + 1 + layer if layer < 0 else layer

    def encode_vision(self, inputs: dict[str, Any]) -> dict[str, Any] | None:
        """The exact encoder output through the pruned path with every unit kept: the same kernels on the
        same rows (bit-identical in the tests), minus the CLIP layers after ``vision_feature_layer``."""
        if self.pixel_key not in inputs:
            return None
        frames = inputs[self.pixel_key][0]
        return self.encode_kept(inputs, np.ones((len(frames), *self._grid(frames)), dtype=bool))

    def encode_frames(self, pixels: torch.Tensor) -> torch.Tensor:
        features = self._encode(pixels, np.ones((len(pixels), *self._grid(pixels)), dtype=bool))
        return features.reshape(len(pixels), -1, features.shape[-1])

    def encode_kept(self, inputs: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
        features = self._encode(inputs[self.pixel_key][0], mask)
        return {self.vision_kind: BaseModelOutputWithPooling(pooler_output=features[None])}

    def _grid(self, pixels: torch.Tensor) -> tuple[int, int]:
        patch, stride = self._unit()
        return pixels.shape[-2] // (patch * stride), pixels.shape[-1] // (patch * stride)

    def _encode(self, pixels: torch.Tensor, mask: np.ndarray) -> torch.Tensor:
        """Projected features ``[kept units, hidden]`` of frames ``[F, C, S, S]`` under a unit mask ``[F, h, w]``."""
        _, stride = self._unit()
        model = self.model.model
        tower = model.vision_tower
        hidden = tower.pre_layrnorm(tower.embeddings(pixels))  # [F, 1 + P, D]
        frames, units = mask.shape[0], mask[0].size
        keep = torch.from_numpy(mask).to(hidden.device)
        patches = keep.repeat_interleave(stride, 1).repeat_interleave(stride, 2).reshape(frames, -1)
        features = encode_frames(run_layers(tower.encoder.layers[: self.feature_layers()]), hidden, patches)
        pooled = model.vision_resampler(features)  # [F, units, D]: a kept unit pools kept patches only
        return model.multi_modal_projector(pooled.reshape(frames * units, -1)[keep.reshape(-1)])  # kept units only


ADAPTER = LlavaNextVideoAdapter
