"""Scale benchmark of the store and the metric engine (issue 2), measured side by side in one run.

For each size (1M and 10M responses by default: 4 models x N items x 10 configurations) it
generates a long table, then measures, each phase in its own child process so that its peak memory
is its own:

* ingest rate (rows/s) of the generic long table from Parquet and from CSV;
* ``load_matrix`` + ``mcqa_metrics`` wall time for one model and for 4 models matched: the first read
  after a write (the store's cache folder removed: the matrix comes from Parquet), then the usual case
  (from the cache folder), without and with 1,000 paired bootstrap resamples;
* the same point metrics by a straightforward pandas implementation (read, pivot, compute), and the
  ratio pandas / trajaudit;
* the items-with-tag query (one model's matrix, then ``trajectory_table(..., tag="confused")``);
* store size on disk.

Usage: ``python benchmarks/store_scale.py [--sizes 1000000,10000000] [--workdir /work/bench-stores/store_scale]``
Targets (2-core machine): metrics for 4 models over 1M responses < 1 s; item queries < 200 ms;
ingest > 200k rows/s for Parquet and CSV.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

GRID = ["text", "8f", "16f", "32f", "64f", "128f", "32f@50k", "32f@200k", "64f/random-s1", "64f/dense-start"]
MODELS = [f"bench-model-{k}" for k in range(4)]


def generate(n_items: int, seed: int = 0) -> pd.DataFrame:
    """A long table with item-correlated trajectories (difficulty per item, noise per cell)."""
    rng = np.random.default_rng(seed)
    n_cfg, n_mod = len(GRID), len(MODELS)
    difficulty = rng.normal(0, 1, n_items)
    gain = np.array([-0.8, -0.2, 0.0, 0.15, 0.25, 0.3, 0.05, 0.2, 0.2, 0.1])
    ability = np.linspace(-0.2, 0.4, n_mod)
    logit = ability[:, None, None] - difficulty[None, :, None] + gain[None, None, :]
    logit = logit + rng.normal(0, 0.9, (n_mod, n_items, n_cfg))
    correct = (logit > 0).astype(np.int8)
    conf = 1 / (1 + np.exp(-np.abs(logit))) * 0.75 + 0.25
    m, i, c = np.meshgrid(np.arange(n_mod), np.arange(n_items), np.arange(n_cfg), indexing="ij")
    return pd.DataFrame(
        {
            "model": pd.Categorical.from_codes(m.ravel(), MODELS),
            "benchmark": "bench",
            "item_id": pd.Categorical.from_codes(i.ravel(), [f"q{k:07d}" for k in range(n_items)]),
            "config": pd.Categorical.from_codes(c.ravel(), GRID),
            "correct": correct.ravel(),
            "confidence": conf.ravel().round(4),
            "task_type": pd.Categorical.from_codes((i.ravel() % 8), [f"task-{k}" for k in range(8)]),
        }
    )


# -- phases (each runs in a child process) ------------------------------------------------------


def _ingest(store_dir: str, path: str) -> dict:
    from store.ingest import ingest_paths
    from store.store import Store

    t = time.perf_counter()
    summary = ingest_paths(Store(store_dir), [path], format="table")
    return {"seconds": time.perf_counter() - t, "rows": summary.rows}


def _metrics(store_dir: str, models: list[str], bootstrap: int, fresh: bool) -> dict:
    """``fresh``: the store's cache folder removed first (the first read after a write)."""
    from backend.analysis.metrics import mcqa_metrics
    from backend.scope.loader import load_matrix
    from store.store import Store

    if fresh:
        shutil.rmtree(Path(store_dir) / ".cache", ignore_errors=True)
    t = time.perf_counter()
    matrix = load_matrix(Store(store_dir), models, benchmark="bench", grid=GRID)
    t_load = time.perf_counter() - t
    out = mcqa_metrics(matrix, bootstrap=bootstrap, seed=0)
    total = time.perf_counter() - t
    return {
        "seconds": total,
        "load_seconds": t_load,
        "n_items": out["n_items"],
        "oracle": out["models"][models[0]]["oracle_accuracy"],
    }


def _items_query(store_dir: str) -> dict:
    """The Items view with a trajectory tag: one model's matrix, then the tagged rows."""
    from backend.scope.items import trajectory_table
    from backend.scope.loader import load_matrix
    from store.store import Store

    store = Store(store_dir)

    def query():
        return trajectory_table(load_matrix(store, MODELS[:1], benchmark="bench", grid=GRID), MODELS[0], tag="confused")

    query()  # warm the file cache (and the store's cache folder)
    t = time.perf_counter()
    rows = query()
    return {"seconds": time.perf_counter() - t, "rows": len(rows)}


def _pandas_metrics(store_dir: str, models: list[str]) -> dict:
    """What a researcher would write: read everything, pivot per model, compute each metric."""
    from store.configs import lower_matrix
    from store.store import Store

    t = time.perf_counter()
    store = Store(store_dir)
    files = [store.root / f for f in store.manifest().files["responses"]]
    df = pd.concat([pd.read_parquet(f, columns=["model", "benchmark", "item_id", "config", "correct"]) for f in files])
    df = df[(df.benchmark == "bench") & df.model.isin(models) & df.config.isin(GRID)]
    wide = df.pivot_table(index="item_id", columns=["model", "config"], values="correct", aggfunc="first")
    wide = wide.dropna()
    lower = lower_matrix(GRID)
    oracles = []
    for m in models:
        y = wide[m][GRID]
        acc = y.mean()
        best = acc.max()
        oracle = y.max(axis=1).mean()
        oracles.append(oracle)
        confused = pd.Series(False, index=y.index)
        for a in range(len(GRID)):
            for b in range(len(GRID)):
                if lower[a, b]:
                    confused |= (y.iloc[:, a] == 1) & (y.iloc[:, b] == 0)
        _ = (oracle - best, confused.mean())
        for a, b in zip(GRID[:-1], GRID[1:]):
            _ = ((y[a] == 0) & (y[b] == 1)).sum(), ((y[a] == 1) & (y[b] == 0)).sum()
    return {"seconds": time.perf_counter() - t, "n_items": len(wide), "oracle": oracles[0]}


def _child(fn, args, queue):
    out = fn(*args)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(out)


def measure(fn, *args) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(fn, args, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def dir_size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def run_size(n_responses: int, workdir: Path) -> None:
    n_items = n_responses // (len(MODELS) * len(GRID))
    print(
        f"\n=== {n_items * len(MODELS) * len(GRID):,} responses ({len(MODELS)} models x {n_items:,} items x {len(GRID)} configs)"
    )
    workdir.mkdir(parents=True, exist_ok=True)
    data = generate(n_items)
    pq_path, csv_path = workdir / "long.parquet", workdir / "long.csv"
    data.to_parquet(pq_path, index=False)
    data.to_csv(csv_path, index=False)
    del data

    results = {}
    for kind, path in (("parquet", pq_path), ("csv", csv_path)):
        store_dir = workdir / f"store-{kind}"
        shutil.rmtree(store_dir, ignore_errors=True)
        r = measure(_ingest, str(store_dir), str(path))
        results[kind] = r
        print(
            f"ingest {kind:8s}: {r['rows']:,} rows in {r['seconds']:.2f} s = {r['rows'] / r['seconds']:,.0f} rows/s "
            f"(peak {r['peak_rss_mb']:.0f} MB)"
        )
    store_dir = str(workdir / "store-parquet")
    print(f"store size on disk: {dir_size_mb(Path(store_dir)):.1f} MB")

    for label, models in (("1 model", MODELS[:1]), ("4 models matched", MODELS)):
        first = measure(_metrics, store_dir, models, 0, True)
        ours = measure(_metrics, store_dir, models, 0, False)
        boot = measure(_metrics, store_dir, models, 1000, False)
        base = measure(_pandas_metrics, store_dir, models)
        assert ours["n_items"] == base["n_items"] and abs(ours["oracle"] - base["oracle"]) < 1e-12, "results differ"
        print(
            f"metrics {label:17s}: trajaudit {ours['seconds']:.3f} s (load {ours['load_seconds']:.3f} s from the cache "
            f"folder, peak {ours['peak_rss_mb']:.0f} MB); first read after a write {first['seconds']:.3f} s (load "
            f"{first['load_seconds']:.3f} s from Parquet); with 1000 bootstrap {boot['seconds']:.3f} s; "
            f"pandas {base['seconds']:.3f} s (peak {base['peak_rss_mb']:.0f} MB); ratio pandas/trajaudit "
            f"{base['seconds'] / ours['seconds']:.1f}x (first read: {base['seconds'] / first['seconds']:.1f}x)"
        )
    q = measure(_items_query, store_dir)
    print(f"items with tag 'confused' (1 model): {q['rows']:,} rows in {q['seconds'] * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,10000000", help="comma-separated response counts")
    ap.add_argument("--workdir", default="/work/bench-stores/store_scale")
    args = ap.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        run_size(n, Path(args.workdir) / f"n{n}")


if __name__ == "__main__":
    main()
