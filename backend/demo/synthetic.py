"""A deterministic synthetic demo store, so a fresh install shows a working dashboard.

Everything here is synthetic and labelled so: model names start with ``synthetic-``, benchmarks are
``synthetic-videomme`` and ``synthetic-mlvu``, ``runs.origin`` / ``responses.origin`` is ``demo`` and
``runs.source`` says where the data came from. Nothing in it is a measurement of a real model.

Correctness comes from a latent model whose trajectories are correlated within an item, calibrated
so that the multiple-choice benchmark behaves like the core paper's Video-MME release: accuracy climbs
and then saturates, and a flat step still moves items both ways (the paper: 128 -> 256 frames, -0.7
points while 23 items turn wrong and 18 turn right). For model ``m``, item ``i`` and configuration
``c`` (``f`` frames)::

    z = ability[m] - difficulty[i] + affinity[m, i]            # shared by every config of the item
        + gain[m] * pixels(c, i) * evidence(f, i)              # more frames help up to a sufficient budget
        - lure[m] * distraction(f, i)                          # distractor items: evidence falls off late
        + prior(c) * text_use[m] * text_prior[i]               # answerable from the question alone
        + noise[m, i, c]                                       # per-response noise, correlated up the ladder
    y = 1 if z > 0, else 1 if the guess is lucky               # a model that does not know guesses

* ``evidence(f, i) = sigmoid(EVIDENCE_SLOPE (log2 f - need[i]))``: ``need`` is the item's sufficient
  budget in log2 frames (by task type and duration category); 0 for text-only. Most multiple-choice
  items have what they need by 32-64 frames, so the curve flattens at the top of the ladder.
* ``distraction(f, i) = sigmoid(2.5 (log2 f - onset[i]))`` on the distractor items only
  (``DISTRACTOR_SHARE``): late frames that pull the answer away, the harmed side of a flat step.
* ``pixels``: 1 at the default resolution; ``@50k`` weakens evidence (most for detail tasks such as
  OCR and counting), ``@200k`` strengthens it a little.
* ``dense-start`` sees the evidence only when it lies in the first quarter of the video.
* ``prior`` is 1 for text-only and ``PRIOR_WITH_VIDEO`` with video: pictures partly overwrite what the
  question alone suggested (text overwrite).
* ``noise`` has sd ``NOISE`` and walks up the budget ladder (``_ladder_noise``): each budget keeps the
  frames of the one below, so its answer is mostly the one below's, more so at the top
  (``LADDER_CORRELATION``), which keeps the churn of a flat top step at a few percent while the
  cheap budgets stay noisy (oracle headroom, visual confusion).
* A guess among the four options is right one time in four (one in ``LUCKY_BLIND``'s tail without
  video: blind models favour plausible distractors); which guess a model makes is correlated up the
  ladder the same way (``GUESS_CORRELATION``), starting from its text-only guess.
* Repeats (``run`` = ``seed-1``, ``seed-2``) redraw ``REPEAT_SHARE`` of the noise variance.

Confidence is the probability of the chosen letter: higher and tied to the margin when correct,
lower when wrong, always in (0.25, 1). Wrong answers pick a distractor letter (often the item's
"lure"). Open-ended items (answer_type ``open``) get a prediction built from reference words plus
filler words whose Token-F1 against the reference is the stored ``score`` (``2k / (k + m + L)`` for
``k`` reference words, ``m`` fillers, ``L`` reference words), and ``correct = score >= 0.5``.

Columns worth knowing: ``seed`` is the sampling seed of ``random-s<k>`` rows and the repeat's seed
on repeat rows (null otherwise); ``frame_indices`` come from :mod:`backend.runtime.sampling` for the row's
policy and the clip's real length; about 0.4% of MCQA replies carry no letter (``answer`` null,
``flags`` = ``no-answer``, wrong, no letter probabilities), as real logs do. With the defaults
(480 items, seed 0; 300 of them on ``synthetic-videomme``, the benchmark the dashboard opens on) each
model gains 19-25 points from text to 8 frames and under a point from 64 to 128 frames, where 4.7-6%
of the items change state both ways (net -0.7 to +0.7 points, McNemar p around 0.8); oracle headroom
is 9-16 points, visual confusion 18-22%, text overwrite 6-7% (``tests/test_demo.py`` pins the ranges).

Videos: one short H.264 clip per video id, procedurally drawn (scenes with their own background,
moving shapes, a progress bar as a clock and the frame number in binary blocks), so a frame strip
shows visibly different frames. Clips last 8, 10 or 12 s at 16 fps for the short, medium and long
categories (the categories are labels; the clips are kept short so the demo builds in seconds), so
every budget up to 128 frames picks distinct frames. They go under
``<store>/videos/<benchmark>/<video_id>.mp4``; ``items.video`` is that path relative to the video
root (``<store>/videos``).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import av
import numpy as np
import pandas as pd

from backend.runtime.sampling import config_indices, policy_name
from store import answers
from store.configs import parse
from store.errors import UserError
from store.store import Store

Progress = Callable[[float, str], None]

SOURCE = "synthetic demo (backend/demo/synthetic.py)"
LETTERS = np.array(list(answers.LETTERS[:4]))  # the demo's items have four options
MAIN_GRID = ["text", "8f", "16f", "32f", "64f", "128f"]
SUBSET_CONFIGS = ["32f@50k", "32f@200k", "64f/random-s1", "64f/dense-start"]
REPEAT_RUNS = {"seed-1": 1, "seed-2": 2}
DEFAULT_ITEMS = 480
FPS = 16
WIDTH, HEIGHT = 160, 120
CLIP_SECONDS = {"short": 8, "medium": 10, "long": 12}  # 128 to 192 frames: every budget sees distinct frames
QUESTIONS_PER_VIDEO = 3
NOISE = 0.56  # sd of the per-response noise
AFFINITY = 0.45  # sd of a model's own liking for an item, shared by all its configs
DIFFICULTY_SD = 0.97  # sd of an item's difficulty around its task type's offset
NEED_SD = 0.8  # sd of an item's sufficient budget (log2 frames) around its task type's and duration's
EVIDENCE_SLOPE = 1.5  # how sharply evidence arrives around the sufficient budget (per doubling)
DISTRACTOR_SHARE = 0.128  # of the items: late frames pull the answer away
ONSET = (4.09, 7.22)  # where the pull sets in, log2 frames (about 17 to 150)
TEXT_ANSWERABLE = 0.573  # of the items: the question alone points to the answer
PRIOR_WITH_VIDEO = 0.7  # the weight of that text prior once frames are shown (1 without)
# correlation of a budget's noise with the budget below's (nested frames); none at 8f: text is another input
LADDER_CORRELATION = {"16f": 0.77, "32f": 0.83, "64f": 0.87, "128f": 0.985}
GUESS_CORRELATION = {"8f": 0.983, "16f": 0.69, "32f": 0.826, "64f": 0.895, "128f": 0.995}  # 8f: with the blind guess
VARIANT_CORRELATION = 0.8  # another policy or resolution at a budget vs that budget's uniform run
LUCKY_GUESS = 0.6745  # the normal's 75th percentile: a guess among four options is right one time in four
LUCKY_BLIND = 1.206  # without video, about one time in nine: blind models favour plausible distractors
REPEAT_SHARE = 0.4  # of the noise variance a repeat draws afresh


@dataclass(frozen=True)
class ModelSpec:
    name: str
    ability: float
    gain: float  # how much sufficient visual evidence adds
    text_use: float  # how much the model leans on the question alone
    lure: float  # how strongly late distractors pull it away


MODELS = [
    ModelSpec("synthetic-A-7B", ability=-1.781, gain=1.97, text_use=1.0, lure=1.403),
    ModelSpec("synthetic-B-13B", ability=-1.5, gain=2.08, text_use=0.85, lure=1.11),
    ModelSpec("synthetic-C-72B", ability=-1.33, gain=2.03, text_use=1.0, lure=1.15),
    ModelSpec("synthetic-D-2B", ability=-1.95, gain=1.89, text_use=0.8, lure=0.98),
]


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    video_prefix: str  # video ids are synth-<prefix>-<n>
    share: float  # of the items
    tasks: dict[str, tuple[float, float]]  # task type -> (difficulty offset, sufficient log2 frames)
    open_tasks: tuple[str, ...]  # open-ended task types (answer_type "open")
    open_share: float  # of this benchmark's items
    domains: tuple[str, ...]


VIDEOMME = BenchmarkSpec(
    "synthetic-videomme",
    video_prefix="vmme",
    share=0.625,
    tasks={
        "Counting Problem": (0.5, 3.98),
        "Action Recognition": (0.0, 2.58),
        "Object Reasoning": (0.2, 2.98),
        "Temporal Reasoning": (0.45, 4.18),
        "Information Synopsis": (-0.2, 3.58),
        "OCR Problems": (0.15, 2.78),
        "Spatial Perception": (0.1, 2.18),
        "Attribute Perception": (-0.1, 1.98),
    },
    open_tasks=(),
    open_share=0.0,
    domains=(
        "Knowledge",
        "Film & Television",
        "Sports Competition",
        "Artistic Performance",
        "Life Record",
        "Multilingual",
    ),
)
MLVU = BenchmarkSpec(
    "synthetic-mlvu",
    video_prefix="mlvu",
    share=0.375,
    tasks={
        "Topic Reasoning": (-0.3, 2.8),
        "Anomaly Recognition": (0.2, 3.8),
        "Needle QA": (0.3, 5.0),
        "Ego Reasoning": (0.25, 3.8),
        "Plot QA": (0.1, 4.2),
        "Action Order": (0.4, 4.6),
        "Action Count": (0.5, 4.8),
        "Sub-Scene Captioning": (0.0, 4.2),
        "Video Summary": (-0.2, 3.6),
    },
    open_tasks=("Sub-Scene Captioning", "Video Summary"),
    open_share=40 / 180,
    domains=("Movie", "Surveillance", "Egocentric", "Cartoon", "Documentary", "Game"),
)
BENCHMARKS = (VIDEOMME, MLVU)
DETAIL_TASKS = {"Counting Problem", "OCR Problems", "Attribute Perception", "Needle QA", "Action Count"}
DURATION_NEED = {"short": -0.6, "medium": 0.0, "long": 0.6}

COLOURS = {
    "red": (220, 40, 40),
    "green": (40, 180, 70),
    "blue": (50, 90, 230),
    "yellow": (235, 210, 40),
    "white": (245, 245, 245),
    "purple": (150, 60, 200),
    "orange": (245, 140, 30),
}
BACKGROUNDS = {
    "dark blue": (20, 30, 80),
    "dark green": (20, 70, 40),
    "maroon": (90, 25, 35),
    "grey": (80, 80, 90),
    "teal": (20, 90, 100),
    "brown": (90, 60, 30),
}
SHAPES = ("circle", "square")
FILLERS = ("maybe", "somewhere", "roughly", "perhaps", "apparently", "generally", "likely", "mostly")


# --------------------------------------------------------------------------------------------
# items: videos, questions, options
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VideoSpec:
    """What a synthetic clip shows; questions are written from it."""

    benchmark: str
    video_id: str
    duration: str
    domain: str
    backgrounds: tuple[str, ...]  # one per scene, in order
    shapes: tuple[tuple[str, str], ...]  # (colour, shape)

    @property
    def n_frames(self) -> int:
        return CLIP_SECONDS[self.duration] * FPS

    @property
    def rel_path(self) -> str:
        return f"{self.benchmark}/{self.video_id}.mp4"


def _videos(bench: BenchmarkSpec, n_videos: int, rng: np.random.Generator) -> list[VideoSpec]:
    durations = np.array(list(CLIP_SECONDS))[rng.permutation(np.arange(n_videos) % 3)]
    out = []
    for v in range(n_videos):
        n_scenes = int(rng.integers(3, 5))
        bgs = tuple(np.array(list(BACKGROUNDS))[rng.choice(len(BACKGROUNDS), n_scenes, replace=False)])
        colours = np.array(list(COLOURS))[rng.choice(len(COLOURS), 3, replace=False)]
        shapes = tuple((str(c), SHAPES[int(rng.integers(2))]) for c in colours)
        domain = bench.domains[int(rng.integers(len(bench.domains)))]
        video_id = f"synth-{bench.video_prefix}-{v + 1:03d}"
        out.append(VideoSpec(bench.name, video_id, str(durations[v]), domain, bgs, shapes))
    return out


def _question(task: str, video: VideoSpec, rng: np.random.Generator) -> tuple[str, str, list[str]]:
    """(question, correct option, three distractors) for a task type, written from the clip's content."""
    (c0, s0), (c1, s1), _ = video.shapes
    bgs = video.backgrounds
    other_colours = [c for c in COLOURS if c not in {c0, c1}]
    positions = ["top left", "top right", "bottom left", "bottom right"]
    n_scenes = len(bgs)
    counts = [str(n) for n in range(1, 8)]

    def pick(pool: list[str]) -> list[str]:
        return [str(x) for x in rng.choice(pool, 3, replace=False)]

    if task in ("Counting Problem", "Action Count"):
        true = str(int(rng.integers(2, 6)))
        question = f"How many times does the {c0} {s0} touch the edge of the frame?"
        return question, true, pick([n for n in counts if n != true])
    if task in ("Action Recognition", "Ego Reasoning"):
        acts = ["bounces off the walls", "stays still in the centre", "shrinks and disappears", "spins in place"]
        return (f"What does the {c1} {s1} do during the video?", acts[0], acts[1:])
    if task in ("Object Reasoning", "Anomaly Recognition"):
        return (
            f"Which object appears only after the background turns {bgs[1]}?",
            f"the {c1} {s1}",
            [f"the {c} {s0}" for c in pick(other_colours)],
        )
    if task in ("Temporal Reasoning", "Action Order", "Plot QA"):
        order = " -> ".join(bgs[:3])
        wrong = [" -> ".join(np.array(bgs[:3])[list(p)]) for p in ((1, 0, 2), (2, 1, 0), (0, 2, 1))]
        return ("In which order do the background colours appear?", order, wrong)
    if task in ("Information Synopsis", "Topic Reasoning"):
        true = f"Coloured shapes move across {n_scenes} scenes while a bar fills at the top."
        wrong = [
            "A single shape rests on a white table for the whole clip.",
            f"Text scrolls upward over {n_scenes + 2} photographs.",
            "Two people talk in front of a moving car.",
        ]
        return ("Which sentence best summarises the video?", true, wrong)
    if task in ("OCR Problems", "Needle QA"):
        true = str(int(rng.integers(8, 120)))
        wrong = [str(int(x)) for x in rng.choice(np.setdiff1d(np.arange(8, 120), [int(true)]), 3, replace=False)]
        return (f"Which frame number do the blocks at the bottom show when the {c0} {s0} first appears?", true, wrong)
    if task == "Spatial Perception":
        true = positions[int(rng.integers(4))]
        question = f"Where is the {c1} {s1} when the scene changes to {bgs[-1]}?"
        return question, true, [p for p in positions if p != true]
    if task == "Attribute Perception":
        return (f"What colour is the {s0} that moves fastest?", c0, pick(other_colours))
    raise AssertionError(f"no question template for task {task!r}")


def _open_reference(video: VideoSpec, task: str) -> tuple[str, list[str]]:
    """(question, reference words) for an open-ended item; no articles, so Token-F1 counts every word."""
    (c0, s0), (c1, s1), _ = video.shapes
    if task == "Video Summary":
        words = f"{c0} {s0} and {c1} {s1} move across {len(video.backgrounds)} scenes while progress bar fills".split()
        return "Summarise the video in one sentence.", words
    words = f"{c1} {s1} bounces near {video.backgrounds[1]} background while {c0} {s0} waits".split()
    return f"Describe what happens while the background is {video.backgrounds[1]}.", words


def _items(n_items: int, rng: np.random.Generator) -> tuple[pd.DataFrame, list[VideoSpec]]:
    """The items table (plus latent per-item columns, prefixed ``_``) and the clips to draw."""
    n_vmme = QUESTIONS_PER_VIDEO * max(1, round(n_items * VIDEOMME.share / QUESTIONS_PER_VIDEO))
    rows, videos = [], []
    for bench, n in ((VIDEOMME, n_vmme), (MLVU, n_items - n_vmme)):
        specs = _videos(bench, -(-n // QUESTIONS_PER_VIDEO), rng)
        videos += specs
        n_open = round(n * bench.open_share)
        mcqa_tasks = [t for t in bench.tasks if t not in bench.open_tasks]
        tasks = [mcqa_tasks[k % len(mcqa_tasks)] for k in range(n - n_open)]
        tasks += [bench.open_tasks[k % len(bench.open_tasks)] for k in range(n_open)]
        tasks = list(np.array(tasks)[rng.permutation(n)])
        targets = LETTERS[rng.permutation(np.arange(n) % 4)]
        for k in range(n):
            video = specs[k // QUESTIONS_PER_VIDEO]
            row = {
                "benchmark": bench.name,
                "split": "test",
                "item_id": f"{video.video_id.split('-')[-1]}-{k % QUESTIONS_PER_VIDEO + 1}",
                "task_type": tasks[k],
                "video": video.rel_path,
                "duration": video.duration,
                "duration_s": float(CLIP_SECONDS[video.duration]),
                "domain": video.domain,
                "sub_category": f"synthetic {video.domain.lower()}",
                "_n_frames": video.n_frames,
                "_ref_words": None,
            }
            if tasks[k] in bench.open_tasks:
                question, words = _open_reference(video, tasks[k])
                reference = " ".join(words) + "."
                row |= {
                    "answer_type": "open",
                    "question": question,
                    "target": reference,
                    "references": json.dumps([reference]),
                    "_ref_words": words,
                }
            else:
                question, true, wrong = _question(tasks[k], video, rng)
                texts = list(wrong)
                t = int(np.flatnonzero(LETTERS == targets[k])[0])
                texts.insert(t, true)
                row |= {
                    "answer_type": "mcqa",
                    "question": question,
                    "target": str(targets[k]),
                    "options": json.dumps([f"{L}. {x}" for L, x in zip(LETTERS, texts)]),
                }
            rows.append(row)
    return pd.DataFrame(rows), videos


# --------------------------------------------------------------------------------------------
# the latent correctness model
# --------------------------------------------------------------------------------------------
def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _item_latents(items: pd.DataFrame, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per-item latent variables (see the module docstring)."""
    n = len(items)
    table = {t: v for b in BENCHMARKS for t, v in b.tasks.items()}
    offset = np.array([table[t][0] for t in items.task_type])
    need = np.array([table[t][1] for t in items.task_type]) + items.duration.map(DURATION_NEED).to_numpy()
    distractor = rng.random(n) < DISTRACTOR_SHARE
    text_answerable = rng.random(n) < TEXT_ANSWERABLE
    return {
        "difficulty": rng.normal(0.0, DIFFICULTY_SD, n) + offset,
        "need": np.clip(need + rng.normal(0.0, NEED_SD, n), 1.0, 8.0),
        "text_prior": np.where(text_answerable, rng.uniform(0.8, 2.0, n), rng.normal(-0.4, 0.3, n)),
        "distraction": np.where(distractor, rng.uniform(1.0, 2.0, n), 0.0),
        "onset": rng.uniform(*ONSET, n),
        "early": rng.random(n) < 0.25,  # the evidence lies in the first quarter of the clip
        "detail": items.task_type.isin(DETAIL_TASKS).to_numpy(),
    }


def _pixel_factor(label: str, detail: np.ndarray) -> np.ndarray:
    px = parse(label).pixels
    if px is None:
        return np.ones(len(detail))
    if px < 100_000:
        return np.where(detail, 0.55, 0.85)
    return np.where(detail, 1.12, 1.04)


def _margin(model: ModelSpec, lat: dict[str, np.ndarray], label: str, affinity: np.ndarray) -> np.ndarray:
    """The noiseless latent margin of one model on every item at one configuration."""
    cfg = parse(label)
    if cfg.is_text:
        visual, prior = np.zeros_like(affinity), 1.0
    else:
        lf = np.log2(cfg.frames)
        evidence = _sigmoid(EVIDENCE_SLOPE * (lf - lat["need"]))
        if cfg.policy == "dense-start":
            evidence = np.where(lat["early"], evidence, 0.2 * evidence)
        distraction = lat["distraction"] * _sigmoid(2.5 * (lf - lat["onset"]))
        visual = model.gain * _pixel_factor(label, lat["detail"]) * evidence - model.lure * distraction
        prior = PRIOR_WITH_VIDEO
    return model.ability - lat["difficulty"] + affinity + visual + prior * model.text_use * lat["text_prior"]


# --------------------------------------------------------------------------------------------
# responses
# --------------------------------------------------------------------------------------------
def _cells(items: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Every (model, item, config, run) the demo answers, with the latent margin ``_z`` and ``_lucky``, whether a
    guess among the four options would land on the target (it counts where the margin is negative)."""
    n = len(items)
    lat = _item_latents(items, rng)
    subset = rng.random(n) < 1 / 3
    repeated = np.zeros(n, dtype=bool)
    repeated[rng.choice(n, max(2, n // 20), replace=False)] = True
    rep = np.flatnonzero(repeated)
    parts = []
    for model in MODELS:
        affinity = rng.normal(0.0, AFFINITY, n)
        noise, guess = _ladder_noise(rng, n, LADDER_CORRELATION), _ladder_noise(rng, n, GUESS_CORRELATION)
        for label in MAIN_GRID + SUBSET_CONFIGS:
            rows = np.arange(n) if label in MAIN_GRID else np.flatnonzero(subset)
            base = _margin(model, lat, label, affinity)
            parts.append(_cell_frame(model.name, label, "main", rows, base + noise[label], guess[label]))
            if label in MAIN_GRID:
                for run in REPEAT_RUNS:
                    z, g = (_redraw(rng, x[label]) for x in (noise, guess))
                    parts.append(_cell_frame(model.name, label, run, rep, base + z, g))
    return pd.concat(parts, ignore_index=True)


def _redraw(rng: np.random.Generator, noise: np.ndarray) -> np.ndarray:
    """A repeat's noise: ``REPEAT_SHARE`` of the variance drawn afresh."""
    fresh = rng.normal(0.0, NOISE, len(noise))
    return np.sqrt(1 - REPEAT_SHARE) * noise + np.sqrt(REPEAT_SHARE) * fresh


def _ladder_noise(rng: np.random.Generator, n: int, correlation: dict[str, float]) -> dict[str, np.ndarray]:
    """Per-response noise of one model, sd ``NOISE`` everywhere, correlated along the budget ladder.

    Uniform budgets are nested (each doubling keeps the frames of the one below), so a budget's answer
    is mostly the one below's plus what the added frames change: an AR(1) walk up the ladder whose
    step correlation (``LADDER_CORRELATION``) grows with the budget, as the added frames fill in a clip
    the model has mostly seen. Text-only noise is its own; another policy or resolution at a budget
    shares part of that budget's noise (``VARIANT_CORRELATION``).
    """
    out: dict[str, np.ndarray] = {}
    for below, label in zip([None, *MAIN_GRID], MAIN_GRID):
        fresh = rng.normal(0.0, NOISE, n)
        rho = correlation.get(label)  # None: drawn afresh
        out[label] = fresh if rho is None or below is None else rho * out[below] + np.sqrt(1 - rho**2) * fresh
    for label in SUBSET_CONFIGS:
        fresh = rng.normal(0.0, NOISE, n)
        same_budget = out[f"{parse(label).frames}f"]
        out[label] = VARIANT_CORRELATION * same_budget + np.sqrt(1 - VARIANT_CORRELATION**2) * fresh
    return out


def _cell_frame(model: str, label: str, run: str, rows: np.ndarray, z: np.ndarray, guess: np.ndarray) -> pd.DataFrame:
    lucky = guess[rows] > (LUCKY_BLIND if label == "text" else LUCKY_GUESS) * NOISE
    return pd.DataFrame({"model": model, "config": label, "run": run, "_row": rows, "_z": z[rows], "_lucky": lucky})


def _mcqa_answers(cells: pd.DataFrame, targets: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Letters, confidences and option probabilities of MCQA cells: right where the model knows (``_z`` > 0) or
    its guess is lucky; a lucky guess is as unsure as a wrong answer."""
    n = len(cells)
    z = cells["_z"].to_numpy()
    knows = z > 0
    correct = knows | cells["_lucky"].to_numpy()
    t = np.searchsorted(LETTERS, targets)
    lure = (t + 1 + (cells["_row"].to_numpy() * 7919) % 3) % 4  # a fixed wrong letter per item
    other = (t + rng.integers(1, 4, n)) % 4
    wrong = np.where(rng.random(n) < 0.6, lure, other)
    chosen = np.where(correct, t, wrong)
    jitter = rng.normal(0.0, 1.0, n)  # the model's view of its own margin is noisy
    conf = np.where(
        knows,
        0.30 + 0.68 * _sigmoid(0.5 * z + 0.2 + jitter),
        0.27 + 0.65 * _sigmoid(0.3 * np.abs(z) - 0.4 + jitter),
    )
    # the rest of the mass over the three other letters: random, the target favoured when wrong,
    # pulled toward uniform just enough that the chosen letter stays the most probable
    rows = np.arange(n)
    weights = rng.dirichlet(np.full(4, 4.0), n)
    weights[rows, t] += np.where(correct, 0.0, 0.25)
    weights[rows, chosen] = 0.0
    weights /= weights.sum(axis=1, keepdims=True)
    others = np.ones((n, 4), dtype=bool)
    others[rows, chosen] = False
    spread = np.where(others, weights - 1 / 3, 0.0)
    room = (conf / (1 - conf) - 1 / 3) / np.maximum(spread.max(axis=1), 1e-9)
    probs = (1 - conf)[:, None] * np.where(others, 1 / 3 + spread * np.minimum(1.0, 0.9 * room)[:, None], 0.0)
    probs[rows, chosen] = conf
    return {"correct": correct, "chosen": chosen, "confidence": conf, "probs": probs}


def _open_answers(cells: pd.DataFrame, ref_words: pd.Series, rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """Token-F1 scores and the predictions that have exactly that Token-F1 against the reference."""
    z = cells["_z"].to_numpy()
    length = ref_words.map(len).to_numpy()
    want = np.clip(_sigmoid(0.9 * z) + rng.normal(0.0, 0.08, len(z)), 0.0, 1.0)
    k = np.round(want * length).astype(int)
    m = np.round((1.0 - want) * 4).astype(int)
    score = np.where(k > 0, 2 * k / (k + m + length), 0.0)
    fillers = np.array(FILLERS)
    text = [
        " ".join(list(w[:kk]) + list(fillers[:mm])) + "." if kk + mm else "I cannot tell."
        for w, kk, mm in zip(ref_words, k, m)
    ]
    return score, text


def _responses(items: pd.DataFrame, run_id: str, rng: np.random.Generator) -> pd.DataFrame:
    cells = _cells(items, rng)
    item = items.iloc[cells["_row"].to_numpy()].reset_index(drop=True)
    mcqa = (item.answer_type == "mcqa").to_numpy()
    out = pd.DataFrame(
        {
            "model": cells.model,
            "benchmark": item.benchmark,
            "split": item.split,
            "item_id": item.item_id,
            "config": cells.config,
            "run": cells.run,
            "run_id": run_id,
            "origin": "demo",
            "source_tag": "synthetic",
        }
    )
    m = _mcqa_answers(cells[mcqa], item.target[mcqa].to_numpy(), rng)
    letters = LETTERS[m["chosen"]]
    no_answer = rng.random(len(letters)) < 0.004  # a few unparseable outputs, as real logs have
    raw = np.where(no_answer, "I cannot determine the answer from the video.", "The best answer is " + letters + ".")
    out.loc[mcqa, "raw_output"] = raw
    out.loc[mcqa, "answer"] = np.where(no_answer, None, letters)
    out.loc[mcqa, "correct"] = (m["correct"] & ~no_answer).astype(np.int8)
    # a no-answer row stands for a generated reply with no letter: nothing was scored on the letters
    out.loc[mcqa, "confidence"] = np.where(no_answer, np.nan, m["confidence"])
    out.loc[mcqa, "letter_mass"] = np.where(no_answer, np.nan, np.clip(rng.beta(12, 1.5, len(letters)), 0.5, 0.999))
    out.loc[mcqa, "option_probs"] = [
        None if skip else json.dumps(dict(zip(LETTERS.tolist(), np.round(p, 4).tolist())))
        for p, skip in zip(m["probs"], no_answer)
    ]
    out.loc[mcqa, "flags"] = np.where(no_answer, "no-answer", None)  # type: ignore[call-overload]  # numpy's stubs take no None scalar
    score, text = _open_answers(cells[~mcqa], item._ref_words[~mcqa], rng)
    out.loc[~mcqa, "raw_output"] = text
    out.loc[~mcqa, "score"] = score
    out.loc[~mcqa, "score_source"] = "token_f1"  # the closed form is the answer's Token-F1 (tests/test_demo.py)
    out.loc[~mcqa, "correct"] = (score >= 0.5).astype(np.int8)
    out["correct"] = out["correct"].astype("int8")
    out["seed"] = _seeds(cells)
    return out.join(_frame_columns(cells, item))


def _seeds(cells: pd.DataFrame) -> pd.Series:
    """The sampling seed for random policies, the repeat's seed for repeats, else null."""
    policy_seed = {c: policy_name(parse(c).policy)[1] for c in cells.config.unique()}
    return cells.config.map(policy_seed).fillna(cells.run.map(REPEAT_RUNS)).astype("Int64")


def _frame_columns(cells: pd.DataFrame, item: pd.DataFrame) -> pd.DataFrame:
    """frames, pixels, policy, frame_indices and their source, computed once per (clip length, config)."""
    keys = pd.DataFrame({"config": cells.config, "n": item._n_frames}).drop_duplicates()
    rows = []
    for label, n in keys.itertuples(index=False):
        cfg = parse(label)
        rows.append(
            {
                "config": label,
                "n": n,
                "frames": cfg.frames,
                "pixels": cfg.pixels,
                "policy": None if cfg.is_text else cfg.policy,
                "frame_indices": None if cfg.is_text else config_indices(label, int(n), FPS).astype(np.int32).tolist(),
                "frames_source": None if cfg.is_text else "logged",  # the demo's own runs record their frames
            }
        )
    table = pd.DataFrame(rows).astype({"pixels": "Int64"})
    merged = pd.DataFrame({"config": cells.config, "n": item._n_frames}).merge(table, on=["config", "n"], how="left")
    return merged.drop(columns=["config", "n"])


# --------------------------------------------------------------------------------------------
# videos
# --------------------------------------------------------------------------------------------
def _draw(video: VideoSpec, rng: np.random.Generator) -> np.ndarray:
    """All frames of a clip as [T, H, W, 3] uint8, drawn with array operations (no per-frame loop)."""
    t_count = video.n_frames
    t = np.arange(t_count)
    scene = np.minimum(t * len(video.backgrounds) // t_count, len(video.backgrounds) - 1)
    palette = np.array([BACKGROUNDS[b] for b in video.backgrounds], dtype=np.float32)
    shade = 0.75 + 0.25 * np.arange(HEIGHT, dtype=np.float32) / HEIGHT  # a vertical gradient
    rows = (palette[scene][:, None, :] * shade[None, :, None]).astype(np.uint8)  # [T, H, 3]
    frames = np.empty((t_count, HEIGHT, WIDTH, 3), dtype=np.uint8)
    frames[:] = rows[:, :, None, :]
    xs = np.arange(WIDTH)
    for j, (colour, shape) in enumerate(video.shapes):
        radius = 8 + 3 * j
        speed = rng.uniform(0.6, 1.6, 2) * (j + 1)
        phase = rng.uniform(0, 1, 2)
        # bouncing motion: a triangle wave over the usable width / height
        u = np.abs(((t[:, None] * speed / t_count * 4 + phase) % 2) - 1)
        cx = np.rint(radius + u[:, 0] * (WIDTH - 1 - 2 * radius)).astype(int)
        cy = np.rint(14 + radius + u[:, 1] * (HEIGHT - 30 - 2 * radius)).astype(int)
        # paint only the pixels of the shape: (frame, y, x) index arrays of its offsets at each centre
        oy, ox = np.mgrid[-radius : radius + 1, -radius : radius + 1]
        inside = (oy**2 + ox**2 <= radius**2) if shape == "circle" else np.ones_like(oy, dtype=bool)
        shown = np.flatnonzero(scene >= j % len(video.backgrounds))  # later shapes enter in later scenes
        frames[shown[:, None], cy[shown, None] + oy[inside], cx[shown, None] + ox[inside]] = COLOURS[colour]
    frames[:, 2:8, 2:-2] = 40  # clock: a progress bar that fills over the clip
    filled = 2 + (t * (WIDTH - 4) // max(1, t_count - 1))
    frames[:, 2:8][np.broadcast_to(xs[None, None, :] < filled[:, None, None], (t_count, 6, WIDTH))] = 230
    bits = (t[:, None] >> np.arange(8)[::-1]) & 1  # frame number in binary blocks at the bottom
    blocks = np.where(bits, 250, 15).astype(np.uint8)  # [T, 8]
    for b in range(8):
        x0 = 4 + b * 12
        frames[:, -12:-3, x0 : x0 + 10] = blocks[:, b, None, None, None]
    return frames


def write_clip(path: Path, frames: np.ndarray) -> None:
    """Encode RGB ``frames`` [T, H, W, 3] as an H.264 clip at ``FPS``, renamed into place when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:8]}.tmp.mp4")
    with av.open(str(tmp), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "23", "g": str(FPS)}
        for frame in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------------------------
def _code_version() -> str:
    try:
        return metadata.version("trajaudit")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_demo(
    store_root: str | os.PathLike,
    *,
    n_items: int = DEFAULT_ITEMS,
    seed: int = 0,
    videos: bool = True,
    force: bool = False,
    progress: Progress | None = None,
) -> dict:
    """Build the demo store into ``store_root`` (a summary dict comes back).

    The same ``n_items`` and ``seed`` give the same items and responses. A store that already
    holds data is refused unless ``force``; then its files are retired in the same atomic write
    that publishes the demo (readers never see a mix).
    """
    started = time.monotonic()
    report = progress or (lambda fraction, message: None)
    if n_items < 8:
        raise UserError(f"--items {n_items}: the demo needs at least 8 items")
    store = Store(store_root)
    existing = {t: list(f) for t, f in store.manifest().files.items() if f}
    if existing and not force:
        raise UserError(f"store {store.root} already holds data ({', '.join(existing)}); pass --force to replace it")
    rng = np.random.default_rng(seed)
    report(0.0, "writing items")
    items, clips = _items(n_items, rng)
    if videos:
        root = store.root / "videos"
        for k, clip in enumerate(clips):
            report(0.05 + 0.8 * k / len(clips), f"drawing video {k + 1}/{len(clips)}")
            write_clip(root / clip.rel_path, _draw(clip, np.random.default_rng([seed, k])))
    else:
        items["video"] = None
    report(0.85, "computing responses")
    run_id = f"demo-s{seed}-n{n_items}"
    responses = _responses(items, run_id, rng)
    now = pd.Timestamp.now(tz="UTC")
    runs = pd.DataFrame(
        [
            {
                "run_id": run_id,
                "origin": "demo",
                "source": SOURCE,
                "format": "synthetic",
                "args": json.dumps({"n_items": n_items, "seed": seed, "videos": videos}),
                "n_rows": len(responses),
                "code_version": _code_version(),
                "created_at": now,
            }
        ]
    )
    responses["provenance"] = json.dumps({"synthetic": True, "generator": "backend.demo.synthetic", "demo_seed": seed})
    responses["written_at"] = now
    item_table = items.drop(columns=[c for c in items.columns if c.startswith("_")]).assign(written_at=now)
    report(0.95, "publishing")
    with store.writer() as w:
        for table, files in existing.items():
            w.retire(table, files)
        w.add("items", item_table)
        w.add("runs", runs)
        w.add("responses", responses)
    report(1.0, "done")
    return {
        "store": str(store.root),
        "store_version": w.manifest.version,
        "run_id": run_id,
        "items": len(item_table),
        "responses": len(responses),
        "models": [m.name for m in MODELS],
        "benchmarks": [b.name for b in BENCHMARKS],
        "configs": MAIN_GRID + SUBSET_CONFIGS,
        "videos": len(clips) if videos else 0,
        "video_root": str(store.root / "videos") if videos else None,
        "seconds": round(time.monotonic() - started, 2),
    }
