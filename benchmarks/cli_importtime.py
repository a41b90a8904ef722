"""What a computing read command imports, and for how long: ``python -X importtime`` of ``trajaudit metrics
--bootstrap 0 --json`` with its kept answer deleted before each run (issue 37), for one or more code trees run
alternately, so a before/after comparison shares the machine's load. Prints each tree's median wall time and
the ten modules of largest cumulative import time (median over the runs).

Usage: ``python benchmarks/cli_importtime.py STORE RUNS TREE [TREE ...]`` (a TREE is a checkout, e.g. a
``git archive`` copy of an earlier commit; STORE a bench store of ``benchmarks/policies.py``, model
``bench-model-0`` on benchmark ``bench``).
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict

LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")


def main() -> None:
    store, runs, trees = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    argv = ["metrics", "--store", store, "--benchmark", "bench", "--models", "bench-model-0", "--bootstrap", "0"]
    code = f"import sys; from backend.cli import main; sys.exit(main({[*argv, '--json']!r}))"
    cumulative: dict[str, defaultdict[str, list[float]]] = {t: defaultdict(list) for t in trees}
    wall: dict[str, list[float]] = {t: [] for t in trees}
    for _ in range(runs):
        for tree in trees:
            shutil.rmtree(f"{store}/.cache/answers", ignore_errors=True)
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", code],
                cwd=tree,
                env={"PYTHONPATH": tree},
                capture_output=True,
                text=True,
            )
            wall[tree].append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"{tree}: {done.stderr.strip().splitlines()[-1]}")
            for found in map(LINE.match, done.stderr.splitlines()):
                if found:
                    cumulative[tree][found[3]].append(int(found[2]) / 1e6)
    for tree in trees:
        median = {name: statistics.median(seconds) for name, seconds in cumulative[tree].items()}
        print(f"\n{tree}: whole process {statistics.median(wall[tree]):.3f} s (median of {runs})")
        print("| module | cumulative import (s, median) |\n|---|---|")
        for name, seconds in sorted(median.items(), key=lambda kv: -kv[1])[:10]:
            print(f"| `{name}` | {seconds:.3f} |")


if __name__ == "__main__":
    main()
