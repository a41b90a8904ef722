"""Ingest rate of a foreign per-item file through ``--map`` (issue 11), beside the plain long table.

Generates N responses (default 200,000: 20,000 items x 10 configs) as another project would write
them: a JSON array of objects with its own key names, the item id split over two keys, a nested
key, the target as the option's text and options as a list of texts; plus the same rows as a plain
long-table CSV. Ingests each into a fresh store and prints rows/s. Nothing is asserted.

Usage: ``python benchmarks/ingest_map.py [--rows 200000] [--workdir .bench/ingest_map]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from store.ingest import ingest_paths

CONFIGS = ["text", "8f", "16f", "32f", "64f", "128f", "32f@50k", "32f@200k", "64f/random-s1", "64f/dense-start"]
OPTIONS = ["Apples", "Candles", "Berries", "Oranges"]
MAP = "item_id=category+qid,config=setting,prediction=out.text,confidence=out.conf,target=gt,options=choices"


def generate(n_rows: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    n_items = n_rows // len(CONFIGS)
    target = rng.integers(0, 4, n_items)
    records = []
    for c, config in enumerate(CONFIGS):
        said = np.where(rng.random(n_items) < 0.4 + 0.04 * c, target, rng.integers(0, 4, n_items))
        conf = np.round(rng.random(n_items), 3)
        records += [
            {
                "category": f"task{i % 12}",
                "qid": i,
                "setting": config,
                "gt": OPTIONS[target[i]],
                "choices": OPTIONS,
                "out": {"text": f"The answer is {'ABCD'[said[i]]}.", "conf": float(conf[i])},
            }
            for i in range(n_items)
        ]
    return records


def timed(label: str, n: int, store: Path, path: Path, **kw) -> None:
    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    s = ingest_paths(store, [path], model="m", benchmark="b", **kw)
    dt = time.perf_counter() - t0
    print(f"{label:<34} {n:>9,} rows  {dt:6.2f} s  {n / dt:>10,.0f} rows/s  (stored {s.new:,})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--workdir", default=".bench/ingest_map")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    records = generate(args.rows)
    foreign = work / "foreign.json"
    foreign.write_text(json.dumps(records))
    flat = pd.DataFrame(
        {
            "item_id": [f"{r['category']}/{r['qid']}" for r in records],
            "config": [r["setting"] for r in records],
            "prediction": [r["out"]["text"] for r in records],
            "confidence": [r["out"]["conf"] for r in records],
            "target": ["ABCD"[OPTIONS.index(r["gt"])] for r in records],
        }
    )
    table = work / "long.csv"
    flat.to_csv(table, index=False)
    n = len(records)
    timed("JSON array + --map (6 fields)", n, work / "store_map", foreign, field_map=MAP)
    timed("long-table CSV, no map", n, work / "store_csv", table)


if __name__ == "__main__":
    main()
