"""Speed of the adaptive-budget policies (issue 6) on a generated store, printed as figures.

* cascade frontier over 100 thresholds for one model on a 4-rung ladder, in a store of 1M responses
  (4 models x 25k items x 10 configurations, every response with a confidence): load (the matched
  matrix from Parquet) and sweep timed apart and together. Target: under 1 s.
* budget predictor: 5-fold cross-validation grouped by video on the 25k items (TF-IDF + one-hot,
  logistic regression). Target: under 30 s.

The store is built with ``Store.append`` directly (no ingester involved) under ``--workdir`` and
reused when it is already there. Usage: ``python benchmarks/policies.py [--items 25000] [--workdir .bench/policies]``.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from backend import views
from backend.analysis import cascade, predictor
from store.store import Store

GRID = ["text", "8f", "16f", "32f", "64f", "128f", "32f@50k", "32f@200k", "64f/random-s1", "64f/dense-start"]
LADDER = ["16f", "32f", "64f", "128f"]
MODELS = [f"bench-model-{k}" for k in range(4)]
TASKS = ["Counting", "OCR", "Action", "Attribute", "Temporal", "Spatial", "Object", "Reasoning"]
WORDS = np.array("what how many when where which who colour count person car ball sign text first last after before "
                 "left right holds wears says appears happens video scene frame moment end start".split())  # fmt: skip


def generate(n_items: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Responses with item-correlated trajectories and confidences, and items with text and videos."""
    rng = np.random.default_rng(seed)
    n_cfg, n_mod = len(GRID), len(MODELS)
    difficulty = rng.normal(0, 1, n_items)
    task = rng.integers(0, len(TASKS), n_items)
    needs = np.linspace(-0.4, 0.4, len(TASKS))[task]  # some task types need more frames
    gain = np.array([-0.8, -0.2, 0.0, 0.15, 0.25, 0.3, 0.05, 0.2, 0.2, 0.1])
    logit = np.linspace(-0.2, 0.4, n_mod)[:, None, None] - difficulty[None, :, None] + gain * (1 + needs[None, :, None])
    logit = logit + rng.normal(0, 0.9, (n_mod, n_items, n_cfg))
    m, i, c = np.meshgrid(np.arange(n_mod), np.arange(n_items), np.arange(n_cfg), indexing="ij")
    ids = np.array([f"q{k:07d}" for k in range(n_items)], dtype=object)
    responses = pd.DataFrame(
        {
            "model": np.array(MODELS, dtype=object)[m.ravel()],
            "benchmark": "bench",
            "item_id": ids[i.ravel()],
            "config": np.array(GRID, dtype=object)[c.ravel()],
            "run": "main",
            "correct": (logit > 0).astype(np.int8).ravel(),
            "confidence": (1 / (1 + np.exp(-np.abs(logit))) * 0.75 + 0.25).ravel().round(4),
        }
    )
    words = WORDS[rng.integers(0, len(WORDS), (n_items, 8))]
    question = [" ".join(row) + f" {TASKS[t].lower()}" for row, t in zip(words, task, strict=True)]
    items = pd.DataFrame(
        {
            "benchmark": "bench",
            "item_id": ids,
            "question": question,
            "options": '["A. yes", "B. no", "C. maybe", "D. never"]',
            "task_type": np.array(TASKS, dtype=object)[task],
            "duration": np.array(["short", "medium", "long"], dtype=object)[rng.integers(0, 3, n_items)],
            "domain": np.array(["Sports", "News", "Film"], dtype=object)[rng.integers(0, 3, n_items)],
            "video": [f"v{k // 3:06d}" for k in range(n_items)],  # three questions per video
        }
    )
    return responses, items


def build(workdir: Path, n_items: int) -> Store:
    store = Store(workdir / f"store-{n_items}")
    if not store.is_empty():
        return store
    shutil.rmtree(store.root, ignore_errors=True)
    responses, items = generate(n_items)
    t = time.perf_counter()
    store.append({"responses": responses, "items": items})
    print(f"built the store: {len(responses):,} responses in {time.perf_counter() - t:.1f} s")
    return store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=25_000)
    ap.add_argument("--workdir", default=".bench/policies")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    store = build(Path(args.workdir), args.items)
    n_resp = store.query("SELECT count(*) n FROM responses").n[0]
    print(f"store: {n_resp:,} responses ({len(MODELS)} models x {args.items:,} items x {len(GRID)} configs)")

    views.model_ladder(store, MODELS[0], LADDER, "bench")  # warm the file cache
    t0 = time.perf_counter()
    ladder = views.model_ladder(store, MODELS[0], LADDER, "bench")
    t1 = time.perf_counter()
    swept = cascade.sweep(ladder, max_points=100, bootstrap=0)
    t2 = time.perf_counter()
    print(
        f"cascade frontier, {len(swept.frontier)} thresholds on {swept.n_items:,} items: load {t1 - t0:.3f} s + "
        f"sweep {t2 - t1:.3f} s = {t2 - t0:.3f} s (target < 1 s)"
    )
    t = time.perf_counter()
    m = cascade.sweep(ladder, max_points=100, bootstrap=1000).matching
    if m:
        print(
            f"  matching threshold {m.threshold:g}: accuracy {m.accuracy:.4f} vs top {swept.top_accuracy:.4f}, "
            f"saving {100 * m.saving:.1f}% of shared frames; sweep with its 1000-resample intervals "
            f"{time.perf_counter() - t:.3f} s"
        )

    t3 = time.perf_counter()
    cv = predictor.cross_validate(ladder, n_folds=args.folds, seed=0)
    t4 = time.perf_counter()
    print(
        f"predictor: {args.folds}-fold grouped CV on {len(cv.target):,} items ({len(np.unique(cv.groups)):,} videos) "
        f"in {t4 - t3:.1f} s (target < 30 s); target hit rate {(cv.proba.argmax(1) == cv.target).mean():.3f}"
    )


if __name__ == "__main__":
    main()
