"""Sweep speed (issue 5): the same sweep cold (every reuse off, one cell at a time) and with reuse.

Builds a Video-MME-like store under ``--workdir``: ``--videos`` clips of 10 s at 16 fps, 448 x 336
(about 151k pixels, the budget of a ``64f@151k`` run), H.264 with a keyframe every second, three
questions per clip; builds one tiny random-weight checkpoint and runs the grid
``text,8f,16f,32f,64f`` in this process, cold and with reuse, each sweep under its own model name
(one checkpoint, several names, so every sweep writes every cell to one store). The machine may
be shared, so each sweep runs ``--repeats`` times, interleaved, and the fastest run of each is kept;
torch runs on ``--threads`` (default 1) CPU threads for the same reason.

The model is a tiny one *widened* (``--scale``, default 4: language-model width 256, vision width
128, LLaVA / InternVL encoders at 224 px) and fed frames at ``default_pixels`` = 448 x 336, so that,
as with a real 7B model at 64 frames, visual tokens dominate the prompt (64 frames: about 4100
visual tokens for LLaVA-NeXT-Video, 6150 for Qwen2.5-VL, against about 180 text tokens) and the
vision encoder and the prefill dominate a cold cell rather than Python overhead. The tiny
tokenizers spend about a token per character, so the per-question part of the prompt is two or
three times a real tokenizer's: the prefix reuse is, if anything, understated. The default family
is LLaVA-NeXT-Video, where all three reuses act; with ``--family qwen2_5_vl`` per-frame vision
reuse does not apply (frame pairs) and the ceiling is lower.

Printed: both sweeps' wall times (model loading excluded) and their ratio, the phase shares of
each, frames decoded, processor calls, frames encoded, prefill tokens, per reuse its phases' cold
share ``f``, component speed-up ``s`` and the ceiling ``1 / ((1 - f) + f / s)`` beside the
measured speed-up (one more sweep per reuse times it alone; ``--no-per-reuse`` skips them), and
the paired drift check (every cell of the reused sweep against the same cell of the cold sweep,
which is exactly ``adapter.answer``). Last line: ``speedup: <ratio> drift: <choice drifts>``.

Read the ratio with the load: on a busy machine the cold sweep (four to five times longer, and
memory-heavy: a decode and a processor call per cell) is disturbed more than the reused one even
taking the fastest of ``--repeats``, so the wall-time ratio rises with the load (7.3x was measured at
a load average of 5 where quiet runs then gave 4.4-4.9x). The CPU-time ratio printed beside it (the
process's CPU time over the same spans) moves less; quote the figure of a quiet run.

Usage: ``python benchmarks/sweep.py [--videos 4] [--family llava_next_video] [--scale 4] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from backend.contracts.base import asdict
from backend.contracts.runs import SweepReport
from backend.demo.synthetic import write_clip
from backend.runtime import registry
from backend.runtime.inference.base import detect_family
from backend.runtime.inference.tiny import build_tiny
from backend.runtime.sweep import accounting
from backend.runtime.sweep.accounting import PHASES, REUSES
from backend.runtime.sweep.engine import Reuse
from backend.runtime.sweep.plan import expand_grid
from backend.runtime.sweep.runner import SweepRequest, run_sweep
from store.store import Store

GRID = ["text", "8f", "16f", "32f", "64f"]
WIDTH, HEIGHT, FPS, SECONDS = 448, 336, 16, 10
COLOURS = {"red": (220, 40, 40), "green": (40, 200, 60), "blue": (50, 80, 230), "yellow": (230, 210, 40)}
QUESTIONS = [
    ("What colour is the square at the start of the video?", "start"),
    ("What colour is the square at the end of the video?", "end"),
    ("Which colour does the background turn to in the middle of the video?", "middle"),
]


def _clip(rng: np.random.Generator) -> tuple[np.ndarray, dict[str, str]]:
    """Frames [T, H, W, 3] (a background that changes colour mid-clip, a moving square that changes colour)."""
    n = FPS * SECONDS
    names = list(COLOURS)
    start, end, middle = rng.choice(names, 3, replace=False)
    t = np.arange(n)
    background = np.where((t >= n // 3) & (t < 2 * n // 3), 1, 0)
    shades = np.array([[70, 70, 70], COLOURS[middle]], dtype=np.uint8) // 2 + 40
    frames = np.broadcast_to(shades[background][:, None, None, :], (n, HEIGHT, WIDTH, 3)).copy()
    ys = np.arange(HEIGHT)[None, :, None]
    xs = np.arange(WIDTH)[None, None, :]
    cx = (40 + (WIDTH - 80) * t / n).astype(int)[:, None, None]
    cy = (HEIGHT // 2 + 60 * np.sin(t / 9)).astype(int)[:, None, None]
    inside = (np.abs(xs - cx) < 24) & (np.abs(ys - cy) < 24)
    square = np.where(t < n // 2, 0, 1)
    fills = np.array([COLOURS[start], COLOURS[end]], dtype=np.uint8)[square]
    frames[inside] = np.repeat(fills, inside.reshape(n, -1).sum(1), axis=0)
    frames += rng.integers(0, 12, frames.shape, dtype=np.uint8)  # sensor noise: realistic decode cost
    return frames, {"start": start, "end": end, "middle": middle}


def build_store(root: Path, n_videos: int, family: str, scale: int) -> Path:
    """Clips, items and the widened tiny checkpoint; returns the checkpoint folder."""
    rng = np.random.default_rng(0)
    rows = []
    for v in range(n_videos):
        frames, truth = _clip(rng)
        rel = f"bench/clip-{v:03d}.mp4"
        write_clip(root / "videos" / rel, frames)
        for q, (question, key) in enumerate(QUESTIONS):
            options = list(rng.permutation(list(COLOURS)))
            rows.append(
                {
                    "item_id": f"clip-{v:03d}-{q + 1}",
                    "question": question,
                    "video": rel,
                    "options": json.dumps([f"{'ABCD'[k]}. {c.title()}." for k, c in enumerate(options)]),
                    "target": "ABCD"[options.index(truth[key])],
                }
            )
    items = pd.DataFrame(rows).assign(
        benchmark="bench-videomme",
        split="short",
        answer_type="mcqa",
        duration="short",
        duration_s=float(SECONDS),
        written_at=datetime.now(UTC),
    )
    Store(root).append({"items": items})
    ckpt = build_tiny(family, root / "models" / f"{family}-x{scale}", scale=scale)
    return ckpt


def sweep(root: Path, ckpt: Path, model: str, reuse: Reuse) -> SweepReport:
    """One sweep of the grid under a fresh model name (same checkpoint), so nothing is skipped."""
    spec = registry.ModelSpec(
        model, detect_family(ckpt), str(ckpt), dtype="float32", device="cpu", default_pixels=WIDTH * HEIGHT
    )
    registry.add(root, spec, replace=True)
    request = SweepRequest(str(root), model, "bench-videomme", expand_grid(GRID), reuse=reuse, progress=False)
    return run_sweep(request)


def fastest(runs: list[SweepReport]) -> SweepReport:
    """The least disturbed of repeated sweeps (the machine is shared: take the minimum)."""
    return min(runs, key=lambda s: s.sweep_seconds)


def paired_drift(root: Path) -> dict:
    """Every cell of the reused sweep against the same cell of the cold sweep."""
    rows = Store(root).query(
        "SELECT c.item_id, c.config, c.answer AS a_cold, r.answer AS a_reuse, c.correct AS k_cold, "
        "r.correct AS k_reuse, c.option_probs AS p_cold, r.option_probs AS p_reuse "
        "FROM responses c JOIN responses r USING (item_id, config) "
        "WHERE c.model = 'bench-cold-1' AND r.model = 'bench-reuse-1'"
    )
    diffs = [
        max(abs(a[x] - b[x]) for x in a)
        for a, b in zip(rows["p_cold"].map(json.loads), rows["p_reuse"].map(json.loads), strict=True)
    ]
    return {
        "cells": len(rows),
        "choice_drift": int((rows["a_cold"] != rows["a_reuse"]).sum()),
        "correctness_drift": int((rows["k_cold"] != rows["k_reuse"]).sum()),
        "max_prob_diff": max(diffs, default=0.0),
    }


def _shares(summary: SweepReport) -> str:
    return "  ".join(f"{p} {100 * getattr(summary.phase_shares, p):5.1f}%" for p in (*PHASES, "other"))


def _counters(summary: SweepReport) -> str:
    k = summary.counters
    return (
        f"frames decoded {k.frames_decoded}, processor calls {k.processor_calls}, "
        f"frames encoded {k.frames_encoded}, prefill tokens {k.prefill_tokens}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=".bench/sweep")
    parser.add_argument("--videos", type=int, default=4)
    parser.add_argument("--family", default="llava_next_video")
    parser.add_argument("--scale", type=int, default=4)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: on a shared machine more threads time the neighbours)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each sweep (the fastest is kept)")
    parser.add_argument(
        "--no-per-reuse",
        dest="per_reuse",
        action="store_false",
        help="skip the three extra sweeps that time each reuse alone",
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    root = (Path(args.workdir) / "store").resolve()
    shutil.rmtree(root, ignore_errors=True)
    ckpt = build_store(root, args.videos, args.family, args.scale)
    cells = args.videos * 3 * len(GRID)
    print(
        f"store: {args.videos} clips x 3 questions, grid {','.join(GRID)} = {cells} cells; "
        f"model: tiny {args.family} x{args.scale} on the CPU, frames at {WIDTH}x{HEIGHT}; "
        f"each sweep run {args.repeats}x, fastest kept"
    )
    variants = {"cold": Reuse.without(REUSES), "reuse": Reuse()}
    if args.per_reuse:
        variants |= {f"only-{r}": Reuse(**{x: x == r for x in REUSES}) for r in REUSES}
    runs: dict[str, list[SweepReport]] = {name: [] for name in variants}
    for k in range(1, args.repeats + 1):  # interleaved, so a busy spell hits every variant alike
        for name, reuse in variants.items():
            runs[name].append(sweep(root, ckpt, f"bench-{name}-{k}", reuse))
    best = {name: fastest(r) for name, r in runs.items()}
    cold, reused = best["cold"], best["reuse"]
    ratio = cold.sweep_seconds / reused.sweep_seconds
    for name, s in (("baseline (no reuse)", cold), ("optimised (decode, prefix, vision)", reused)):
        print(
            f"{name}: {s.sweep_seconds:.2f} s for {s.cells.done} cells ({s.cells_per_second or 0:.1f} cells/s), "
            f"CPU time {s.cpu_seconds:.2f} s"
        )
        print(f"  phase shares: {_shares(s)}")
        print(f"  {_counters(s)}")
    print(
        f"wall time ratio: {ratio:.2f}x (CPU time ratio {cold.cpu_seconds / reused.cpu_seconds:.2f}x: "
        "the same sweeps' process CPU time, which other work on a shared machine moves less)"
    )
    print("ceilings: f = cold share of a reuse's phases, s = their cold / reused time, ceiling = 1/((1-f)+f/s)")
    if args.per_reuse:
        print("  each reuse alone (its own sweep, the others off):")
        for reuse in REUSES:
            only = best[f"only-{reuse}"]
            row = accounting.reuse_table(asdict(cold.phase_totals), asdict(only.phase_totals), [reuse])[0]
            measured = cold.sweep_seconds / only.sweep_seconds
            print(
                f"    {reuse:>6} on {'+'.join(row.phases):<27} f={row.f:.3f}  s={row.s:5.2f}x  "
                f"ceiling {row.ceiling:.2f}x  measured {measured:.2f}x"
            )
    print("  all reuses on (phase groups overlap, so these ceilings do not multiply):")
    cold_t, reused_t = asdict(cold.phase_totals), asdict(reused.phase_totals)
    for row in accounting.reuse_table(cold_t, reused_t):
        print(f"    {'+'.join(row.phases):<34} f={row.f:.3f}  s={row.s:5.2f}x  ceiling {row.ceiling:.2f}x")
    together = accounting.speedup(cold_t, reused_t)
    print(f"    measured {ratio:.2f}x end to end ({together:.2f}x over the phases alone)")
    drift = paired_drift(root)
    print(
        f"drift check (every cell, reused vs cold): {drift['cells']} cells, choice drift {drift['choice_drift']}, "
        f"correctness drift {drift['correctness_drift']}, max probability difference {drift['max_prob_diff']:.2e}"
    )
    print(f"speedup: {ratio:.2f} drift: {drift['choice_drift']}")


if __name__ == "__main__":
    main()
