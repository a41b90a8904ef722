"""Named, reproducible frame-sampling policies: (frames in the video, fps, budget, seed) -> frame indices.

A logged answer is only reproducible if the re-run sees the frames the original run saw, and
harnesses disagree on which frames "64 uniform frames" means. Each protocol is therefore a named
policy, and a configuration label's policy part (``store.configs.parse(label).policy``) is one of
these names:

``uniform`` (the default)
    Nested uniform: ``floor(arange(K) * N / K)``. For power-of-two budgets the grids are exactly
    nested (16 subset of 32 subset of 64), so one decode serves every budget of a sweep.
``midpoint``
    The centre of each of ``K`` equal segments of the ``N`` frames: ``floor((2k + 1) * N / (2K))``. No
    harness's exact rule (read in their code, ``tests/test_sampling.py``): lmms-eval's own decoders take
    ``np.linspace(0, N - 1, K, dtype=int)`` (its sampler in ``store.samplers``, ``lmms-eval``), and
    InternVL's ``get_index`` (lmms-eval's ``internvl2`` wrapper too) cuts the ``N - 1`` frame intervals
    into segments and rounds, ``int(seg / 2 + round(seg * k))`` with ``seg = (N - 1) / K``, which lands a
    frame earlier than this on some segments. A re-run that must see a logged run's frames replays them
    (``logged``) or uses the run's sampler, never this policy.
``vlmeval``
    VLMEvalKit's Video-MME rule: ``int(i * N / (K + 1))`` for ``i = 1..K`` (no first or last frame).
``random-s<seed>``
    ``K`` distinct frames drawn without replacement by ``numpy.random.default_rng(seed)``, sorted.
    A bare ``random`` takes the ``seed`` argument, else seed 0, so it is reproducible too.
``dense-start``
    Dense over the first quarter of the video: nested uniform over frames ``[0, ceil(N / 4))``;
    when the budget covers that whole quarter it is the first ``K`` consecutive frames. It models
    "the model only saw the beginning" (the evidence at the end is never seen).
``fps-<x>``
    A fixed rate of ``x`` frames per second (``fps-1``, ``fps-0.5``): frames at ``t = j / x``. The
    budget caps the count: above it, a nested-uniform subset of those frames is kept.

Spellings: a label spells a policy as above; :func:`spell` builds that spelling from a name and its
seed or rate (the re-run panel), :func:`label_policy` reads a user's spelling, including the
sweep's shorthand ``random:<seed>`` for ``random-s<seed>``, and :func:`policy_name` splits one.

Clamping rule: every policy returns sorted, unique indices in ``[0, N)``; a budget of ``N`` frames
or more returns every frame once (nothing is repeated to fill the budget).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

from store.configs import DEFAULT_POLICY, LOGGED, ConfigLabelError, parse
from store.errors import UserError

_RANDOM = re.compile(r"^random(?:-s(?P<seed>\d+))?$")
_RANDOM_COLON = re.compile(r"^random:(?P<seed>\d+)$")  # the sweep's shorthand for random-s<seed>
_FPS = re.compile(r"^fps-(?P<rate>\d+(?:\.\d+)?)$")

PolicyFn = Callable[[int, float, int, "int | None", str], np.ndarray]


def _nested(n: int, k: int) -> np.ndarray:
    return (np.arange(k, dtype=np.int64) * n) // k


def _uniform(n: int, fps: float, k: int, seed: int | None, spec: str) -> np.ndarray:
    return _nested(n, k)


def _midpoint(n: int, fps: float, k: int, seed: int | None, spec: str) -> np.ndarray:
    return ((2 * np.arange(k, dtype=np.int64) + 1) * n) // (2 * k)


def _vlmeval(n: int, fps: float, k: int, seed: int | None, spec: str) -> np.ndarray:
    return (np.arange(1, k + 1, dtype=np.int64) * n) // (k + 1)


def _random(n: int, fps: float, k: int, seed: int | None, spec: str) -> np.ndarray:
    rng = np.random.default_rng(0 if seed is None else seed)
    return np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)


def _dense_start(n: int, fps: float, k: int, seed: int | None, spec: str) -> np.ndarray:
    quarter = max(1, math.ceil(n / 4))
    return _nested(quarter, k) if k < quarter else np.arange(k, dtype=np.int64)


def _fps(n: int, fps: float, k: int, seed: int | None, spec: str) -> np.ndarray:
    match = _FPS.match(spec)
    if match is None:
        raise UserError(f"sampling policy {spec!r}: expected fps-<rate>, e.g. fps-1 or fps-0.5")
    rate = float(match["rate"])
    if rate <= 0 or fps <= 0:
        raise UserError(f"sampling policy {spec!r}: needs a positive rate and video fps (got video fps {fps})")
    steps = math.ceil(n * rate / fps)  # samples at t = j / rate while t < duration
    picked = np.unique(np.minimum(np.floor(np.arange(steps) * fps / rate).astype(np.int64), n - 1))
    return picked if len(picked) <= k else picked[_nested(len(picked), k)]


POLICIES: dict[str, PolicyFn] = {
    "uniform": _uniform,
    "midpoint": _midpoint,
    "vlmeval": _vlmeval,
    "random": _random,
    "dense-start": _dense_start,
    "fps": _fps,
}
NAMES = tuple(POLICIES)  # every policy, in the order a form lists them
_SPELLINGS = "uniform, midpoint, vlmeval, random-s<seed>, dense-start, fps-<rate>, logged"


def policy_name(label_policy: str) -> tuple[str, int | None]:
    """Split a label's policy part into (registry name, seed): ``random-s3`` -> ``("random", 3)``.

    ``fps-2`` -> ``("fps", None)``: the rate stays in the spelling, which :func:`frame_indices` reads.
    """
    spec = (label_policy or DEFAULT_POLICY).strip()
    m = _RANDOM.match(spec)
    if m:
        return "random", None if m["seed"] is None else int(m["seed"])
    if _FPS.match(spec):
        return "fps", None
    if spec in POLICIES and spec not in ("random", "fps"):
        return spec, None
    if spec == LOGGED:  # replays a logged answer's stored indices (backend.runtime.logged_frames)
        return LOGGED, None
    raise UserError(f"unknown sampling policy {label_policy!r}: known policies are {_SPELLINGS}")


def spell(name: str, seed: int | None = None, rate: float | None = None) -> str:
    """A label's policy part from a policy name and what it takes: ``("random", seed=3)`` ->
    ``random-s3``, ``("fps", rate=0.5)`` -> ``fps-0.5``; other names (and a seedless ``random``) as they are."""
    if name == "random" and seed is not None:
        spelling = f"random-s{int(seed)}"
    elif name == "fps":
        if rate is None:
            raise UserError("the fps policy needs a rate (frames per second), e.g. fps-1")
        spelling = f"fps-{float(rate):g}"
    else:
        spelling = name
    policy_name(spelling)  # validates
    return spelling


def label_policy(spelling: str) -> str:
    """A user's policy spelling as a label's policy part: ``random:1`` (the sweep's shorthand) ->
    ``random-s1``; other spellings as labels write them. ``UserError`` names the known policies."""
    spelling = spelling.strip()
    m = _RANDOM_COLON.match(spelling)
    label = f"random-s{m['seed']}" if m else spelling
    policy_name(label)  # validates
    return label


def frame_indices(policy: str, n_frames: int, fps: float, budget: int, seed: int | None = None) -> np.ndarray:
    """Sorted unique frame indices (int64) that ``policy`` picks for a budget of ``budget`` frames.

    ``seed`` serves a bare ``random``; a seed in the spelling (``random-s3``) must agree with it.
    """
    name, named_seed = policy_name(policy)
    if named_seed is not None and seed is not None and named_seed != seed:
        raise UserError(f"sampling policy {policy!r} names seed {named_seed} but seed={seed} was passed")
    if n_frames < 1:
        raise UserError(f"cannot sample from a video with {n_frames} frames")
    if budget < 1:
        raise UserError(f"frame budget must be at least 1 (got {budget}); text-only has no frames")
    if name == LOGGED:
        raise UserError("the logged policy replays the frames a logged answer stored; it computes none")
    if budget >= n_frames and name != "fps":
        return np.arange(n_frames, dtype=np.int64)
    return POLICIES[name](n_frames, fps, budget, named_seed if seed is None else seed, policy.strip())


def config_indices(label: str, n_frames: int, fps: float, seed: int | None = None) -> np.ndarray:
    """Frame indices for a configuration label (``64f/random-s1``); empty for ``text``."""
    try:
        cfg = parse(label)
    except ConfigLabelError as exc:
        raise UserError(str(exc)) from exc
    if cfg.is_text:
        return np.empty(0, dtype=np.int64)
    return frame_indices(cfg.policy, n_frames, fps, cfg.frames, seed)
