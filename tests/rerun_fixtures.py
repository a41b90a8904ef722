"""A small store for the re-run and worker tests: three items, a tiny mp4, one logged answer, model "m".

The mp4 is written with PyAV; frame i shows its index in binary (six black or white stripes), so a
decoded frame tells which index it is, whatever the codec's rounding. Model "m" points at a fake checkpoint folder (a config.json, no weights): enough
for the registry and the checkpoint fingerprint; tests inject their own adapter.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import av
import numpy as np
import pandas as pd

from backend.runtime import registry
from store.store import Store

N_FRAMES, FPS = 48, 8
BITS, STRIPE = 6, 10  # frame index encoding: 6 stripes of 10 pixels
OPTIONS = ["A. Red.", "B. Green.", "C. Blue.", "D. Black."]


def write_video(path: Path, n_frames: int = N_FRAMES, fps: int = FPS) -> Path:
    """A small 64 x 48 mp4 whose frame i shows i in binary: stripe b is white when bit b of i is set."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(n_frames):
            image = np.zeros((48, 64, 3), np.uint8)
            for bit in range(BITS):
                if i >> bit & 1:
                    image[:, bit * STRIPE : (bit + 1) * STRIPE] = 255
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


def build_store(root: Path, max_frames: int = 32) -> Path:
    """Items q1 (video), q2 (video path escaping the root), q3 (text only, no video); model "m"."""
    now = datetime.now(UTC)
    write_video(root / "videos" / "clips" / "a.mp4")
    items = pd.DataFrame(
        {
            "benchmark": "bench",
            "split": "short",
            "item_id": ["q1", "q2", "q3"],
            "question": "What colour is the screen?",
            "options": json.dumps(OPTIONS),
            "target": ["B", "A", "C"],
            "answer_type": "mcqa",
            "video": ["clips/a.mp4", "../../outside.mp4", None],
            "written_at": now,
        }
    )
    logged = pd.DataFrame(
        [
            {
                "model": "m",
                "benchmark": "bench",
                "item_id": "q1",
                "config": "16f",
                "run": "main",
                "origin": "ingest",
                "answer": "B",
                "correct": 1,
                "confidence": 0.7,
                "option_probs": json.dumps({"A": 0.1, "B": 0.7, "C": 0.1, "D": 0.1}),
                "frames": 16,
                "policy": "uniform",
                "frame_indices": list(range(0, 48, 3)),
                "written_at": now,
            }
        ]
    )
    Store(root).append({"items": items, "responses": logged})
    ckpt = root / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(root, registry.ModelSpec("m", "qwen2_5_vl", str(ckpt), max_frames=max_frames))
    return root


def frame_numbers(frames: np.ndarray) -> list[int]:
    """The indices written into frames by :func:`write_video` (stripe centres read against mid-grey)."""
    centres = frames[:, :, [bit * STRIPE + STRIPE // 2 for bit in range(BITS)]].mean(axis=(1, 3)) > 128
    return (centres.astype(int) << np.arange(BITS)).sum(axis=1).tolist()


class FakeAdapter:
    """Stands in for a model: always answers "B", after ``delay`` seconds, or raises ``fail``.

    ``raw_output`` lists the frame indices it was shown, read back from the grey levels, so a test
    can check the worker decoded exactly the frames the policy picked.
    """

    def __init__(self, delay: float = 0.0, fail: str | None = None, on_answer=None):
        self.delay, self.fail, self.on_answer = delay, fail, on_answer
        self.requests = []

    def answer(self, request):
        from backend.runtime.inference.base import InferenceResult

        self.requests.append(request)
        if self.on_answer is not None:
            self.on_answer()
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError(self.fail)
        seen = [] if request.frames is None else frame_numbers(request.frames)
        return InferenceResult(
            answer="B",
            raw_output=json.dumps(seen),
            option_probs={"A": 0.1, "B": 0.6, "C": 0.2, "D": 0.1},
            confidence=0.6,
            letter_mass=0.9,
            score=None,
            token_counts={"prompt": 12, "visual": 4 * len(seen), "generated": 1},
            timings={"preprocess": 0.001, "vision": 0.002, "prefill": 0.003, "generate": 0.0},
            resolution=None if request.frames is None else tuple(request.frames.shape[1:3]),
        )


def serve(root: str, delay: float, lease_s: float) -> None:
    """Run a worker for model "m" with a slow fake adapter (used as a subprocess by the worker tests)."""
    from backend.runtime.worker import Worker

    worker = Worker(root, "m", device="cpu", lease_s=lease_s, poll_s=0.1, adapter_factory=lambda *a: FakeAdapter(delay))
    print(f"served {worker.run(once=True)}", flush=True)
