"""One-shot GPU check: every family at full size (random weights, bf16), the CUDA path end to end, one table.

Why: no line of the CUDA/bf16 path had run on a GPU. This script is prepared so that a session lent
a GPU runs it in one call (``python benchmarks/gpu_check.py``, under 8 minutes on one H200) and
pastes the table. Per family, with one model build (``load_random_fullsize``: the published
config numbers, random weights; answers are noise, timings and memory are real):

* ``rerun``: one cold answer at ``--frames`` frames (``adapter.answer``, what a re-run job does),
  with its phase timings;
* ``sweep``: the sweep machinery on a one-clip store (grid ``--grid``, 3 questions), reuse off
  and on, each verified against cold answers of every cell (choice drift, summed over two
  rounds), and the speed-up of the second round (the first pays for new shapes' kernels);
* ``prune``: the same cold answer at keep 0.85, after a warm-up: vision time
  exact vs pruned, end-to-end speed-up (best of 3 each), and whether the answer moved;
* peak GPU memory of the family.

``--device cpu`` is the smoke mode the tests run: the tiny checkpoints in float32, few frames.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import shutil
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.runtime.inference.base import FAMILIES, InferenceRequest, load_adapter  # noqa: E402
from backend.runtime.inference.cell import item_request  # noqa: E402
from backend.runtime.inference.fullsize import load_random_fullsize  # noqa: E402
from backend.runtime.inference.pruning import PruneSpec  # noqa: E402
from backend.runtime.inference.records import ModelContext, library_versions  # noqa: E402
from backend.runtime.sweep.engine import Reuse  # noqa: E402
from backend.runtime.sweep.executors import twins  # noqa: E402
from backend.runtime.sweep.plan import build_plan, expand_grid  # noqa: E402
from backend.runtime.sweep.shard import ShardRunner, ShardSettings  # noqa: E402
from backend.runtime.sweep.verify import drift  # noqa: E402
from benchmarks.sweep import HEIGHT, WIDTH, build_store  # noqa: E402
from store.store import Store  # noqa: E402


def load(family: str, ckpt: Path, device: str):
    """Full size in bf16 on a GPU; the tiny checkpoint itself in float32 for the CPU smoke mode."""
    if device == "cpu":
        return load_adapter(family, ckpt, device="cpu", dtype="float32")
    return load_random_fullsize(family, ckpt, device=device, dtype="bfloat16")


def one_request(root: Path, frames: int) -> InferenceRequest:
    """The first item of the store at ``frames`` uniformly sampled frames, decoded now."""
    from backend.runtime.sampling import frame_indices
    from backend.videos.decode import decode_frames, probe

    item = Store(root).query("SELECT * FROM items ORDER BY item_id LIMIT 1").to_dict("records")[0]
    path = root / "videos" / item["video"]
    info = probe(path)
    indices = frame_indices("uniform", info.n_frames, info.fps, frames, None)
    return item_request(item, decode_frames(path, indices), indices, info.fps, info.n_frames, WIDTH * HEIGHT)


def sweep(root: Path, family: str, adapter, reuse: Reuse, grid: list[str], device: str, rep: int) -> dict:
    """The sweep's shard runner with the loaded adapter (no second build), every cell verified cold."""
    name = f"check-{family}-{'-'.join(reuse.enabled()) or 'cold'}-{rep}"
    plan = build_plan(Store(root), name, "bench-videomme", expand_grid(grid))
    context = ModelContext(name, family, "random weights", "random", library_versions(), device, str(adapter.dtype))
    settings = ShardSettings(str(root), name, "bench-videomme", f"sweep-{name}", reuse=reuse, device=device)
    runner = ShardRunner(settings, loaded=(adapter, context, WIDTH * HEIGHT))
    t0 = time.perf_counter()
    runner.run(plan.groups)
    report = runner.finish()
    seconds = time.perf_counter() - t0
    cold = runner.answer_cold(twins(report.outcomes))
    check = drift(report.outcomes, cold)
    pairs = list(zip(report.outcomes, cold, strict=True))
    return {"seconds": seconds, "cells": report.cells, "drift": check.choice_drift, "check": check, "pairs": pairs}


def best_of(adapter, request: InferenceRequest, repeats: int = 3) -> tuple[float, Any]:
    """The fastest of ``repeats`` answers (seconds) and that answer: the least disturbed timing."""
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        answer = adapter.answer(request)
        seconds = time.perf_counter() - t0
        if best is None or seconds < best[0]:
            best = (seconds, answer)
    return best


def check_family(family: str, root: Path, args) -> dict:
    ckpt = build_store(root, 1, family, 1)
    if args.device != "cpu":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    adapter = load(family, ckpt, args.device)
    row = {
        "family": family,
        "params_b": sum(p.numel() for p in adapter.model.parameters()) / 1e9,
        "load_s": time.perf_counter() - t0,
    }
    request = one_request(root, args.frames)
    adapter.answer(dataclasses.replace(request, frames=request.frames[:2], frame_indices=request.frame_indices[:2]))
    exact = adapter.answer(request)  # after a warm-up call (kernels, allocator)
    row |= {f"rerun_{p}": exact.timings[p] for p in ("preprocess", "vision", "prefill")}
    row["visual_tokens"] = exact.token_counts["visual"]
    # Two rounds, the second one timed: the first pays for kernels and allocations of new shapes.
    drifted = 0
    for rep in (1, 2):
        cold = sweep(root, family, adapter, Reuse.without(["decode", "prefix", "vision"]), args.grid, args.device, rep)
        reused = sweep(root, family, adapter, Reuse(), args.grid, args.device, rep)
        drifted += cold["drift"] + reused["drift"]
    row |= {
        "sweep_cold_s": cold["seconds"],
        "sweep_reuse_s": reused["seconds"],
        "sweep_speedup": cold["seconds"] / reused["seconds"],
        "sweep_drift": drifted,
    }
    prune_request = dataclasses.replace(request, prune=PruneSpec(0.85))
    adapter.answer(prune_request)  # warm-up, as for the exact path above
    exact_s, _ = best_of(adapter, request)
    pruned_s, pruned = best_of(adapter, prune_request)
    row |= {
        "prune_vision_s": pruned.timings["vision"],
        "prune_speedup": exact_s / pruned_s,
        "prune_moved": int(pruned.answer != exact.answer),
    }
    if args.device != "cpu":
        row["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    del adapter
    free_memory(args.device)
    return row


def free_memory(device: str) -> None:
    """Give back what a family held before the next one loads (on a GPU, the allocator's cache too)."""
    gc.collect()
    if device != "cpu":
        torch.cuda.empty_cache()


COLUMNS = [
    ("family", "{:<17}"),
    ("params_b", "{:>6.2f}"),
    ("load_s", "{:>6.1f}"),
    ("visual_tokens", "{:>6d}"),
    ("rerun_preprocess", "{:>7.3f}"),
    ("rerun_vision", "{:>7.3f}"),
    ("rerun_prefill", "{:>7.3f}"),
    ("sweep_cold_s", "{:>7.2f}"),
    ("sweep_reuse_s", "{:>7.2f}"),
    ("sweep_speedup", "{:>6.2f}"),
    ("sweep_drift", "{:>5d}"),
    ("prune_vision_s", "{:>7.3f}"),
    ("prune_speedup", "{:>6.2f}"),
    ("prune_moved", "{:>5d}"),
    ("peak_gib", "{:>7.1f}"),
]


def table(rows: list[dict]) -> str:
    """One line per family; a dash where a measure does not apply (peak memory without a GPU)."""
    head = " | ".join(name for name, _ in COLUMNS)
    lines = [head, "-" * len(head)]
    for row in rows:
        cells = [fmt.format(row[name]) if name in row else "-" for name, fmt in COLUMNS]
        lines.append(" | ".join(cells))
    lines += [f"{row['family']} failed: {row['error']}" for row in rows if "error" in row]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (the check) or cpu (smoke mode, tiny models)")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--frames", type=int, default=32)
    parser.add_argument("--grid", default="text,8f,16f")
    parser.add_argument("--workdir", default=".bench/gpu_check")
    args = parser.parse_args(argv)
    args.grid = args.grid.split(",")
    warnings.filterwarnings("ignore")
    if args.device != "cpu" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device here; --device cpu runs the smoke mode")
    rows = []
    with torch.inference_mode():
        for family in args.families.split(","):
            root = Path(args.workdir) / family
            shutil.rmtree(root, ignore_errors=True)
            try:
                rows.append(check_family(family, root.resolve(), args))
            except Exception as exc:  # one family's failure must not cost the others' rows on a one-shot lease
                traceback.print_exc()
                rows.append({"family": family, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]})
                free_memory(args.device)
            print(f"done {family}: {rows[-1]}", flush=True)
    out = table(rows)
    print(out)
    return out


if __name__ == "__main__":
    main()
