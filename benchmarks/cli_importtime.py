"""What a computing read command imports, and for how long: ``python -X importtime`` of ``trajaudit metrics
--bootstrap 0 --json`` (or another read command) with its kept answer deleted before each run (issue 37), for
one or more code trees run alternately, so a before/after comparison shares the machine's load. Prints each
tree's median wall time, whether pandas was imported, and the ten modules of largest cumulative import time
(median over the runs).

Usage: ``python benchmarks/cli_importtime.py STORE RUNS TREE [TREE ...] [-- COMMAND ...]`` (a TREE is a
checkout, e.g. a ``git archive`` copy of an earlier commit; STORE a bench store of ``benchmarks/policies.py``,
model ``bench-model-0`` on benchmark ``bench``; COMMAND a trajaudit command line, ``--store STORE --json`` added,
e.g. ``-- items --benchmark bench --model bench-model-0 --page 1``).
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict

METRICS = ["metrics", "--benchmark", "bench", "--models", "bench-model-0", "--bootstrap", "0"]
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")


def main() -> None:
    cut = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
    store, runs, trees = sys.argv[1], int(sys.argv[2]), sys.argv[3:cut]
    argv = [*(sys.argv[cut + 1 :] or METRICS), "--store", store, "--json"]
    code = f"import sys; from backend.cli import main; sys.exit(main({argv!r}))"
    cumulative: dict[str, defaultdict[str, list[float]]] = {t: defaultdict(list) for t in trees}
    wall: dict[str, list[float]] = {t: [] for t in trees}
    for round_ in range(runs + 1):  # round 0: an untimed warm-up, which writes the trees' bytecode
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
            if done.returncode != 0:
                raise SystemExit(f"{tree}: {done.stderr.strip().splitlines()[-1]}")
            if round_ == 0:
                continue
            wall[tree].append(time.perf_counter() - start)
            for found in map(LINE.match, done.stderr.splitlines()):
                if found:
                    cumulative[tree][found[3]].append(int(found[2]) / 1e6)
    print(f"trajaudit {' '.join(argv)}")
    for tree in trees:
        median = {name: statistics.median(seconds) for name, seconds in cumulative[tree].items()}
        pandas = "imports pandas" if "pandas" in median else "no pandas"
        print(f"\n{tree}: whole process {statistics.median(wall[tree]):.3f} s (median of {runs}), {pandas}")
        print("| module | cumulative import (s, median) |\n|---|---|")
        for name, seconds in sorted(median.items(), key=lambda kv: -kv[1])[:10]:
            print(f"| `{name}` | {seconds:.3f} |")


if __name__ == "__main__":
    main()
