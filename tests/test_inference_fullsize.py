"""Full-size random models: published sizes from config numbers, built on the meta device only."""

from __future__ import annotations

import pytest

from backend.runtime.inference.fullsize import DEFAULT_PRESET, build_random_fullsize
from store.errors import UserError

# Published parameter counts of the checkpoints the presets copy (model cards).
PUBLISHED = {"qwen2_5_vl": 8.29e9, "qwen3_vl": 8.77e9, "llava_next_video": 7.06e9, "internvl": 7.94e9}


@pytest.mark.parametrize("family", sorted(PUBLISHED))
def test_meta_build_has_the_published_size(family):
    model = build_random_fullsize(family, device="meta")
    params = list(model.parameters())
    assert all(p.is_meta for p in params)
    assert sum(p.numel() for p in params) == pytest.approx(PUBLISHED[family], rel=0.005)
    assert model.config.model_type == family and DEFAULT_PRESET[family]


def test_preset_must_match_the_family():
    with pytest.raises(UserError, match="is a qwen2_5_vl model, not internvl"):
        build_random_fullsize("internvl", preset="qwen2.5-vl-7b")
    with pytest.raises(UserError, match="unknown preset"):
        build_random_fullsize("qwen2_5_vl", preset="qwen2.5-vl-72b")
