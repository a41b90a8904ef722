"""How the cost of ``trajaudit metrics`` grows past 10M responses: a 100M-response store on disk.

The store holds ``--benchmarks`` generated benchmarks (``benchmarks/policies.py``'s generator, one
seed per benchmark) of 4 models x ``--items`` items x 10 configurations, written one
(model, benchmark) per Parquet file, never all in memory. Then, each as a fresh process:

* ``info --json`` (the first one counts every file once: ``backend.scope.cache_folder``), then again;
* ``metrics --json`` for the 4 models over every benchmark (one matched matrix of all their items:
  the 100M cells), first from Parquet, then from the cache folder; wall time and peak memory.

Usage: ``python benchmarks/scale_100m.py [--benchmarks 10] [--items 250000] [--workdir /work/bench-stores]``
(about 100M responses and 1 GB on disk at the defaults; the store is reused when present).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from policies import MODELS, generate  # noqa: E402

from store.store import Store  # noqa: E402

TRAJAUDIT = [sys.executable, "-c", "import sys; from backend.cli import main; sys.exit(main())"]


def build(root: Path, n_benchmarks: int, n_items: int) -> Store:
    store = Store(root)
    if not store.is_empty():
        return store
    t = time.perf_counter()
    for b in range(n_benchmarks):
        responses, items = generate(n_items, seed=b)
        bench = f"bench-{b:02d}"
        store.append({"items": items.assign(benchmark=bench)})
        for _model, rows in responses.groupby("model", sort=False):
            store.append({"responses": rows.assign(benchmark=bench)})
        del responses, items
        print(
            f"  {bench}: {n_items * len(MODELS) * 10 * (b + 1):,} responses written ({time.perf_counter() - t:.0f} s)",
            flush=True,
        )
    return store


def run(label: str, args: list[str]) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    done = subprocess.run([*TRAJAUDIT, *args], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if done.returncode != 0:
        raise SystemExit(f"{label} failed: {done.stderr.strip()[-2000:]}")
    note = f"peak {peak / 1024:,.0f} MB" if peak > before else "peak below an earlier command's"
    print(f"  {label:<44} {seconds:8.2f} s  ({note})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmarks", type=int, default=10)
    ap.add_argument("--items", type=int, default=250_000)
    ap.add_argument("--workdir", default="/work/bench-stores")
    args = ap.parse_args()
    n = args.benchmarks * args.items * len(MODELS) * 10
    store = build(Path(args.workdir) / f"store-{n // 1_000_000}m", args.benchmarks, args.items)
    size = sum(p.stat().st_size for p in store.root.rglob("*.parquet")) / 1e9
    print(f"=== {n:,} responses in {len(store.manifest().files['responses'])} files, {size:.2f} GB ({store.root})")
    s = ["--store", str(store.root)]
    run("info --json (first: counts every file)", ["info", "--json", *s])
    run("info --json (again)", ["info", "--json", *s])
    metrics = ["metrics", "--json", *s, "--models", ",".join(MODELS)]
    run("metrics --json, 4 models (first: Parquet)", metrics)
    run("metrics --json, 4 models (again: cache folder)", metrics)


if __name__ == "__main__":
    main()
