"""The demo's random-weights model answers from the frames it is fed: another budget or sampling policy
moves the answer on some items, so a re-run under another budget can draw a new point off the line.

Its weights stay random (``backend.runtime.inference.tiny.DEMO_INIT_SCALE`` says why they are scaled).
"""

from __future__ import annotations

import json

import pytest

from backend.runtime import registry
from backend.runtime.inference.base import InferenceRequest, load_adapter, read_marker
from backend.runtime.sampling import frame_indices
from backend.videos.decode import decode_frames, probe
from store.store import Store

CONFIGS = [("uniform", 8), ("uniform", 32), ("random-s1", 16)]  # 8f, 32f, 16f/random-s1


@pytest.mark.slow
@pytest.mark.worker
def test_demo_model_answers_move_with_the_frames(demo_store, tmp_path):
    root = tmp_path / "store"
    spec = registry.register_demo_model(root, "demo")
    path = spec.resolved_path(root)
    assert read_marker(path) == {
        "family": "qwen2_5_vl",
        "random_weights": True,
        "label": "random weights: pipeline demo",
        "init_scale": 8.0,
    }
    adapter = load_adapter(spec.family, path)
    items = Store(demo_store).query(
        "SELECT item_id, question, options, video FROM items WHERE benchmark = 'synthetic-videomme' "
        "ORDER BY item_id LIMIT 6"
    )
    answers: dict[str, list[str | None]] = {}
    for item in items.itertuples():
        video = demo_store / "videos" / item.video
        info = probe(video)
        answers[item.item_id] = []
        for policy, budget in CONFIGS:
            idx = frame_indices(policy, info.n_frames, info.fps, budget)
            request = InferenceRequest(
                question=item.question,
                options=json.loads(item.options),
                frames=decode_frames(video, idx),
                frame_indices=idx.tolist(),
                native_fps=info.fps,
                total_frames=info.n_frames,
                pixels=None,
            )
            result = adapter.answer(request)
            assert result.confidence is not None and 0.25 < result.confidence < 1
            answers[item.item_id].append(result.answer)
    moved = [i for i, a in answers.items() if len(set(a)) > 1]
    assert moved, answers  # some item answers differently under another budget or policy
    assert len({a for per_item in answers.values() for a in per_item}) > 1, answers  # not one letter throughout
