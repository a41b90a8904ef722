"""The harnesses' own frame samplers: which N frames of a T-frame video each tool really feeds.

Five tools give five different index sets for "8 uniform frames" (``notes/VIDEOS.md``), so a strip
that shows our own uniform grid for a harness's run shows the wrong frames. A file that logs no
frames can still be drawn exactly when the user names the harness's sampler at ingest
(``trajaudit ingest ... --sampler NAME``): the indices are then *reconstructed* from the linked
video's frame count (and fps, where the sampler reads it). Each sampler below was read from the
harness's code (lmms-eval v0.7.2-41, VLMEvalKit of 2026-08-18, qwen-vl-utils in QwenLM/Qwen3-VL):

``lmms-eval``
    ``np.linspace(0, T - 1, min(N, T), dtype=int)``: ``lmms_eval/models/model_utils/load_video.py``
    (``load_video_stream``, ``_compute_sample_count``) and ``models/simple/llava_vid.py``
    (``load_video``; it first tries a stride of ``round(video_fps / fps)`` and falls back to this
    linspace when that gives more than N frames; over a video shorter than N it repeats frames,
    which are the same distinct frames).
``lmms-eval-torchcodec``
    ``np.unique`` of the same linspace (``_compute_uniform_indices``).
``lmms-eval-dali``
    ``N`` consecutive strides of ``max(1, int((T - 1) / (N - 1)))`` from frame 0 (``read_video_dali``).
``qwen-vl-utils``
    ``torch.linspace(0, T - 1, n).round()`` with ``n = round(N / 2) * 2`` (``smart_nframes``,
    ``_read_video_decord``); rounded half to even here too (float64 rather than torch's float32).
``lmms-eval-qwen2_5_vl``
    ``models/simple/qwen2_5_vl.py``: qwen-vl-utils first samples at its default 2 fps
    (``n = floor2(min(max(T / fps * 2, 4), min(768, T)))``), then the wrapper takes
    ``np.unique(np.linspace(0, n - 1, N, dtype=int))`` of those frames plus the last one (lmms-eval
    issue 674).
``vlmevalkit``
    ``[int(i * T / (N + 1)) for i in 1..N]``: never the first or last frame
    (``vlmeval/dataset/videomme.py`` ``save_video_frames``; ``mlvu.py``, ``video_base.py``).
``vlmevalkit-mvbench``
    segment midpoints ``int(start + seg / 2 + round(seg * i))``, ``seg = (end - start) / N``, over
    ``[0, T - 1]`` (``vlmeval/dataset/mvbench.py`` ``get_index``; tasks with a ``start``/``end``
    bound narrow the range, which the store does not keep yet: the whole clip is used).

``uniform_mask`` decides whether a logged set is one of these uniform samplers' sets for its nominal
budget (docs/metrics.md "Frames seen"): a set of exactly N frames must equal one of them for a video
length consistent with its last index; a set of fewer than N frames counts as uniform only when it
is every frame ``0..k-1`` of a k-frame video (what each clamping sampler gives a video shorter than
its budget). A shorter set that skips frames (the real lmms-eval Video-MME log's 51 short videos at
32 frames: one candidate frame per second) is the selection's own policy, not a uniform budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from store.errors import UserError

Sampler = Callable[[int, float, int], np.ndarray]


def _linspace_floor(n_frames: int, budget: int) -> np.ndarray:
    return np.linspace(0, n_frames - 1, budget, dtype=int).astype(np.int64)


def _lmms_eval(n_frames: int, fps: float, budget: int) -> np.ndarray:
    return _linspace_floor(n_frames, min(budget, n_frames))


def _lmms_eval_torchcodec(n_frames: int, fps: float, budget: int) -> np.ndarray:
    return np.unique(_linspace_floor(n_frames, min(budget, n_frames)))


def _lmms_eval_dali(n_frames: int, fps: float, budget: int) -> np.ndarray:
    k = min(budget, n_frames)
    stride = max(1, int((n_frames - 1) / max(1, k - 1))) if n_frames > 1 else 1
    return np.arange(k, dtype=np.int64) * stride


def _qwen_round(n_frames: int, n: int) -> np.ndarray:
    return np.rint(np.linspace(0, n_frames - 1, n)).astype(np.int64)


def _qwen_vl_utils(n_frames: int, fps: float, budget: int) -> np.ndarray:
    n = round(budget / 2) * 2
    if not 2 <= n <= n_frames:
        raise UserError(f"qwen-vl-utils takes 2..{n_frames} frames of this video (nframes {budget} rounds to {n})")
    return _qwen_round(n_frames, n)


def _lmms_eval_qwen2_5_vl(n_frames: int, fps: float, budget: int) -> np.ndarray:
    if fps <= 0:
        raise UserError("the lmms-eval qwen2_5_vl sampler needs the video's fps (link the video)")
    n = min(max(n_frames / fps * 2.0, 4), min(768, n_frames), n_frames)
    first = _qwen_round(n_frames, max(2, int(n // 2) * 2))
    picked = np.unique(np.append(_linspace_floor(len(first), budget), len(first) - 1))
    return first[picked]


def _vlmevalkit(n_frames: int, fps: float, budget: int) -> np.ndarray:
    step = n_frames / (budget + 1)
    return (np.arange(1, budget + 1) * step).astype(np.int64)


def _vlmevalkit_mvbench(n_frames: int, fps: float, budget: int) -> np.ndarray:
    seg = float(n_frames - 1) / budget
    return (seg / 2 + np.round(seg * np.arange(budget))).astype(np.int64)


SAMPLERS: dict[str, Sampler] = {
    "lmms-eval": _lmms_eval,
    "lmms-eval-torchcodec": _lmms_eval_torchcodec,
    "lmms-eval-dali": _lmms_eval_dali,
    "qwen-vl-utils": _qwen_vl_utils,
    "lmms-eval-qwen2_5_vl": _lmms_eval_qwen2_5_vl,
    "vlmevalkit": _vlmevalkit,
    "vlmevalkit-mvbench": _vlmevalkit_mvbench,
}
NAMES = tuple(SAMPLERS)
# Samplers whose set depends only on (T, N): the ones a logged set is checked against without fps.
_FPS_FREE = tuple(n for n in NAMES if n != "lmms-eval-qwen2_5_vl")
SOURCES = ("logged", "reconstructed", "unknown")


def check(name: str) -> str:
    """``name`` when it is a known sampler; otherwise one line listing them (UserError)."""
    if name not in SAMPLERS:
        raise UserError(f"unknown sampler {name!r}; expected one of {', '.join(NAMES)}")
    return name


def indices(name: str, n_frames: int, fps: float, budget: int) -> np.ndarray:
    """The frame indices (int64, in the harness's order) sampler ``name`` feeds for ``budget`` frames."""
    if n_frames < 1 or budget < 1:
        raise UserError(f"cannot sample {budget} frames from a video with {n_frames} frames")
    return SAMPLERS[check(name)](int(n_frames), float(fps or 0.0), int(budget))


def _lengths(name: str, got: np.ndarray, budget: int) -> range:
    """The few video lengths T for which sampler ``name`` could end its ``budget`` frames as ``got``
    does, solved from its formula (a handful per sampler, never a scan over lengths)."""
    first, last, n = int(got[0]), int(got[-1]), budget
    if name in ("lmms-eval", "lmms-eval-torchcodec", "qwen-vl-utils"):  # the last frame is T - 1
        return range(last + 1, last + 2)
    if name == "lmms-eval-dali":  # frames 0, s, 2s, ...: any T with int((T - 1) / (N - 1)) = s gives them
        stride = int(got[1] - first) if n > 1 else 1
        return range(stride * (n - 1) + 1, stride * (n - 1) + 2)
    if name == "vlmevalkit":  # last = int(N * T / (N + 1))
        return range(math.ceil(last * (n + 1) / n), math.floor((last + 1) * (n + 1) / n) + 1)
    # vlmevalkit-mvbench: last = int(seg / 2 + round(seg * (N - 1))), seg = (T - 1) / N
    lo, hi = (last - 0.5) / (n - 0.5) * n + 1, (last + 1.5) / (n - 0.5) * n + 1
    return range(max(1, math.floor(lo)), math.ceil(hi) + 1)


def uniform_mask(sets: list[list[int] | None], budgets: np.ndarray, n_frames: np.ndarray | None = None) -> np.ndarray:
    """True where a logged set is a uniform sampler's set for its nominal budget (module docstring);
    null sets are True (nothing logged, nothing to flag). ``n_frames``: the video's length where
    known (catalog), which then is the only length tried; otherwise each sampler's few possible
    lengths are solved from its formula (``_lengths``): 2,700 logged 32-frame sets check in well under
    a second. Checked once per distinct (set, budget, length)."""
    n = len(sets)
    lengths = np.full(n, -1, dtype=np.int64) if n_frames is None else np.asarray(n_frames, dtype=np.int64)
    keys = [None if s is None else (tuple(s), int(b), int(t)) for s, b, t in zip(sets, budgets, lengths)]
    memo: dict[tuple, bool] = {}
    out = np.ones(n, dtype=bool)
    for i, key in enumerate(keys):
        if key is not None:
            out[i] = memo[key] if key in memo else memo.setdefault(key, _is_uniform(*key))
    return out


def _is_uniform(logged: tuple[int, ...], budget: int, n_frames: int) -> bool:
    got = np.asarray(logged, dtype=np.int64)
    if len(got) == 0:
        return False
    if len(got) < budget:
        return bool(np.array_equal(got, np.arange(len(got))))
    if len(got) != budget:
        return False
    for name in _FPS_FREE:
        for t in [n_frames] if n_frames > 0 else _lengths(name, got, budget):
            try:
                if np.array_equal(SAMPLERS[name](t, 0.0, budget), got):
                    return True
            except UserError:
                continue
    return False
