"""C-VISION on tiny models (CPU): keep rates 1.0 / 0.85 / 0.5, the ceiling beside the measured speed-up, drift.

For each family (all four have a pruned vision path) a widened tiny random-weight model (``--scale``) answers three questions on each of two
clips, ``--frames`` frames each: a *static* clip (a fixed background, a small square moving over
it) and a *moving* clip (the whole picture pans every frame). Each request is answered cold
(``adapter.answer``: processor, vision, full prefill), exact and pruned at each keep rate.

Per keep rate: the vision encoder's own speed-up and the ceiling it alone allows (the seed's
C-CEILING on the vision tower); the phases pruning acts on (vision, and prefill, which gets fewer
tokens) with their cold share ``f`` and component speed-up ``s`` and the ceiling ``1/((1-f)+f/s)``
(from the same runs' phase times, so it differs from the measured figure only by the time no phase
covers and by timing noise); the measured end-to-end speed-up (wall time of the same requests, exact over
pruned, fastest of ``--repeats``); choice drift, correctness drift (against a fixed answer key)
and pathological (empty) answers against the exact twin. Then a composition audit: pruning at
0.85 together with prefix reuse (one vision pass and prefix prefill per clip), its predicted
speed-up from the two modes measured alone (``accounting.composed``) beside the measured one.

Last line: ``pruning: keep 0.85 speedup <x> ceiling <y> drift <n>`` (the first family).
Usage: ``python benchmarks/pruning.py [--families llava_next_video,qwen2_5_vl,qwen3_vl,internvl] [--scale 4]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from backend.runtime.inference.base import InferenceRequest, load_adapter
from backend.runtime.inference.pruning import PruneSpec
from backend.runtime.inference.reuse import answer_group
from backend.runtime.inference.tiny import build_tiny
from backend.runtime.sweep import accounting

KEEPS = (1.0, 0.85, 0.5)
WIDTH, HEIGHT = 224, 168
QUESTIONS = ["What colour is the square?", "Where does the square go?", "Does the camera move?"]
OPTIONS = ["A. Red.", "B. Green.", "C. Blue.", "D. White."]
KEY = "ABC"  # a fixed answer key: the weights are random, so correctness drift is what is measured


def clips(frames: int) -> dict[str, np.ndarray]:
    """``static``: grey background, a 24-px square moving right; ``moving``: a textured picture panning."""
    rng = np.random.default_rng(0)
    static = np.full((frames, HEIGHT, WIDTH, 3), 110, dtype=np.uint8)
    for f in range(frames):
        x = 10 + f * (WIDTH - 40) // max(frames - 1, 1)
        static[f, 70:94, x : x + 24] = (230, 40, 40)
    texture = rng.integers(0, 256, (HEIGHT, WIDTH + 4 * frames, 3), dtype=np.uint8)
    moving = np.stack([texture[:, 4 * f : 4 * f + WIDTH] for f in range(frames)])
    return {"static": static, "moving": moving}


def requests(frames: np.ndarray, pixels: int | None) -> list[InferenceRequest]:
    k = len(frames)
    return [InferenceRequest(q, OPTIONS, frames, list(range(0, 4 * k, 4)), 8.0, 4 * k, pixels) for q in QUESTIONS]


def timed(fn) -> tuple[list, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run_mode(adapter, reqs: list[list[InferenceRequest]], spec: PruneSpec | None, share: bool) -> tuple[list, float]:
    """Answers (flat) and wall seconds of every clip's questions in one mode."""
    out, wall = [], 0.0
    for group in reqs:
        group = [dataclasses.replace(r, prune=spec) for r in group]
        if share:
            results, seconds = timed(lambda g=group: answer_group(adapter, g, share_prefix=True))
        else:
            results, seconds = timed(lambda g=group: [adapter.answer(r) for r in g])
        out += results
        wall += seconds
    return out, wall


def measure(adapter, reqs, modes: dict[str, tuple[PruneSpec | None, bool]], repeats: int) -> dict[str, tuple]:
    """Per mode (prune spec, prefix reuse): (answers, wall seconds, phase totals) of its fastest run.

    Repeats are interleaved over the modes, so a busy spell on a shared machine hits every mode alike."""
    runs: dict[str, list] = {name: [] for name in modes}
    for _ in range(repeats):
        for name, (spec, share) in modes.items():
            runs[name].append(run_mode(adapter, reqs, spec, share))
    out = {}
    for name, rs in runs.items():
        results, wall = min(rs, key=lambda r: r[1])
        out[name] = (results, wall, accounting.totals(r.timings for r in results))
    return out


def drift(exact: list, approx: list) -> tuple[int, int, int]:
    """(choice drift, correctness drift against KEY, pathological answers) of ``approx`` vs ``exact``."""
    key = [KEY[i % 3] for i in range(len(exact))]
    choice = sum(a.answer != e.answer for a, e in zip(approx, exact))
    correct = sum((a.answer == k) != (e.answer == k) for a, e, k in zip(approx, exact, key))
    return choice, correct, sum(not (a.answer or "").strip() for a in approx)


def family_report(family: str, scale: int, n_frames: int, repeats: int, root: Path) -> dict:
    adapter = load_adapter(family, build_tiny(family, root / family, scale=scale))
    pixels = None if family in ("llava_next_video", "internvl") else WIDTH * HEIGHT  # fixed-size encoders
    reqs = [requests(c, pixels) for c in clips(n_frames).values()]
    for spec, share in ((None, False), (PruneSpec(0.5), True)):  # warm-up: first calls allocate and plan
        run_mode(adapter, reqs[:1], spec, share)
    modes = {
        "exact": (None, False),
        **{f"keep {k}": (PruneSpec(k), False) for k in KEEPS},
        "reuse": (None, True),
        "keep 0.85 + reuse": (PruneSpec(0.85), True),
    }
    m = measure(adapter, reqs, modes, repeats)
    exact, exact_wall, exact_t = m["exact"]
    f_vision = exact_t["vision"] / sum(exact_t.values())
    print(
        f"{family} x{scale}: {n_frames} frames at {WIDTH}x{HEIGHT}, clips static + moving, 3 questions each; "
        f"exact: {exact_wall:.2f} s, vision share {100 * f_vision:.1f}%, "
        f"prefill share {100 * exact_t['prefill'] / sum(exact_t.values()):.1f}%"
    )
    print(
        "  keep   visual tokens   vision s  vision-only ceiling   f(vision+prefill)  s       ceiling  measured  "
        "choice/correct drift  pathological"
    )
    rows = {}
    for keep in KEEPS:
        results, wall, t = m[f"keep {keep}"]
        row = accounting.reuse_table(exact_t, t, ["prune"])[0]
        vision = accounting.reuse_table(exact_t, t, ["vision"])[0]  # the encoder alone (the seed's C-CEILING)
        choice, correct, bad = drift(exact, results)
        measured = exact_wall / wall
        tokens = sum(r.token_counts["visual"] for r in results)
        rows[keep] = {**row, "measured": measured, "choice": choice, "correct": correct, "pathological": bad}
        print(
            f"  {keep:4.2f}   {tokens:13d}   {vision['s']:6.2f}x  {vision['ceiling']:6.2f}x              "
            f"{row['f']:.3f}              {row['s']:5.2f}x  {row['ceiling']:5.2f}x  "
            f"  {measured:5.2f}x   {choice}/{correct} of {len(results)}                 {bad}"
        )
    _, prune_wall, prune_t = m["keep 0.85"]
    _, reuse_wall, reuse_t = m["reuse"]
    both, both_wall, _ = m["keep 0.85 + reuse"]
    predicted = accounting.composed(exact_t, prune_t, reuse_t)
    print(
        f"  composition audit (prune 0.85 + prefix reuse): prune alone {exact_wall / prune_wall:.2f}x, "
        f"reuse alone {exact_wall / reuse_wall:.2f}x, product {exact_wall**2 / (prune_wall * reuse_wall):.2f}x, "
        f"predicted from phase times {predicted:.2f}x, measured {exact_wall / both_wall:.2f}x "
        f"(choice drift vs exact {drift(exact, both)[0]})"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="llava_next_video,qwen2_5_vl,qwen3_vl,internvl")
    parser.add_argument("--scale", type=int, default=4)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode (the fastest is kept)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        reports = {f: family_report(f, args.scale, args.frames, args.repeats, Path(tmp)) for f in families}
    first = reports[families[0]][0.85]
    print(f"pruning: keep 0.85 speedup {first['measured']:.2f} ceiling {first['ceiling']:.2f} drift {first['choice']}")


if __name__ == "__main__":
    main()
