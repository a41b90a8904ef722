"""The CLI against the SQL a user would write instead (issue 37), as whole processes, side by side.

The bar is ``benchmarks/sql_baseline.py``: a 20-line DuckDB script over the store's own Parquet files that
prints one model's default-grid accuracy, oracle and rescued/harmed counts. Each pair below runs the
baseline and a ``trajaudit`` command alternately (one untimed warm-up each, then ``--repeat`` timed runs
each) on the 1M and 10M stores of ``benchmarks/policies.py`` (4 models x N items x 10 configurations,
built under ``--workdir`` when missing), and prints both medians, their ratio against its target, and
each process's peak memory (GNU time's ``%M``).

* ``metrics --bootstrap 0 --json``, ``metrics --json`` (1,000 resamples), ``flows --from 8f --to 16f
  --json`` and ``items --json --page 1`` with the store unchanged since their last run: the kept answer
  (``backend/cli/answers.py``);
* the same ``metrics --bootstrap 0 --json`` right after a one-row write (appended untimed before each run:
  a repeat of another model's cell under a new run id, so no figure the baseline prints changes): the
  first read of a new store version, with the disk caches patched from the new row;
* for the record (no target), ``metrics --bootstrap 0 --json`` and ``metrics --json`` with every kept
  answer deleted before each run: the command computing its answer from the warm matrix cache.

Both sides run with their bytecode cached (``PYTHONPYCACHEPREFIX``, written by the untimed warm-up), as an
installed package and its libraries have it: this project's machines set ``PYTHONDONTWRITEBYTECODE``, under
which every run of the CLI compiled each of its 60-odd modules again (about 0.1 s, which the baseline, a
single script over an installed DuckDB, never pays). ``--no-bytecode`` keeps the environment as it is (the
rounds before 2026-12-03 22:00 UTC were measured so). ``--tree`` runs another checkout's ``trajaudit`` (a
``git archive`` of an earlier commit) against the same baseline; give it a copy of the stores of its own
(``--workdir``): the trees' matrix cache entries differ.

Usage: ``python benchmarks/cli_vs_sql.py [--items 25000,250000] [--workdir /work/bench] [--repeat 5] [--only TEXT]
[--tree PATH] [--no-bytecode]`` (the store of N items lives in ``<workdir>/policies-<N*40/1M>m/store-N``; the
one-row writes change it, so run it on a copy of a store others read; ``--only one-row`` runs the pairs whose
name holds that text).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from policies import GRID, MODELS, build  # noqa: E402

from store.store import Store  # noqa: E402

TRAJAUDIT = [sys.executable, "-c", "import sys; from backend.cli import main; sys.exit(main())"]
SQL = [sys.executable, str(REPO / "benchmarks" / "sql_baseline.py")]
MODEL = MODELS[0]
TREE = REPO  # the checkout whose ``trajaudit`` runs (``--tree``)
BYTECODE = True  # children keep their bytecode (``--no-bytecode``: the environment decides)


def child_env() -> dict[str, str]:
    """The children's environment: ``TREE`` on the import path; bytecode cached under a prefix of the tree's own
    unless ``--no-bytecode``."""
    env = {**os.environ, "PYTHONPATH": str(TREE)}
    if BYTECODE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "trajaudit-bench-pyc" / TREE.name)
    return env


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak memory (MiB) of one process, its output discarded. The memory is GNU time's
    ``%M``: a child forked from this process (pandas loaded) would report this process's peak instead, as
    Linux keeps the larger of the two across ``exec``."""
    with tempfile.NamedTemporaryFile("r") as peak:
        t = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", peak.name, *cmd], cwd=TREE, env=child_env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        seconds = time.perf_counter() - t
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
        return seconds, int(peak.read().split()[-1]) / 1024


def pair(
    sql: list[str], cli: list[str], repeat: int, before: Callable[[], None] = lambda: None
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Both commands alternately after one untimed run each; ``before()`` runs untimed before each CLI run."""
    run(sql)
    before()
    run(cli)
    a, b = [], []
    for _ in range(repeat):
        a.append(run(sql))
        before()
        b.append(run(cli))
    return a, b


class OneRowWrites:
    """Each call appends one response: a cell of the last model answered again under a run id of its own."""

    def __init__(self, store: Store) -> None:
        self.store, self.k = store, 0

    def __call__(self) -> None:
        self.k += 1
        row = {"model": MODELS[-1], "benchmark": "bench", "item_id": f"q{self.k:07d}", "config": GRID[1]}
        self.store.append({"responses": pd.DataFrame([{**row, "correct": 1, "run": f"cli-vs-sql-{time.time_ns()}"}])})


def line(name: str, target: float | None, a: list[tuple[float, float]], b: list[tuple[float, float]]) -> str:
    sa, sb = statistics.median(s for s, _ in a), statistics.median(s for s, _ in b)
    ratio = sb / sa
    verdict = "" if target is None else f" (target <= {target:.1f}x: {'met' if ratio <= target else 'NOT met'})"
    mem = f"{max(m for _, m in a):.0f} / {max(m for _, m in b):.0f} MiB"
    return f"| {name} | {sa:.3f} | {sb:.3f} | {ratio:.2f}x{verdict} | {mem} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", default="25000,250000", help="items per store (x 40 = responses)")
    ap.add_argument("--workdir", default="/work/bench")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="run only the pairs whose name contains this text")
    ap.add_argument("--tree", type=Path, default=REPO, help="the checkout whose trajaudit runs (default: this one)")
    ap.add_argument(
        "--no-bytecode", action="store_true", help="leave PYTHONDONTWRITEBYTECODE as the environment has it"
    )
    args = ap.parse_args()
    global TREE, BYTECODE
    TREE, BYTECODE = args.tree.resolve(), not args.no_bytecode
    bytecode = "cached" if BYTECODE else f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
    print(f"trajaudit from {TREE}; bytecode {bytecode}; load average {os.getloadavg()[0]:.1f} at the start")
    for n_items in (int(n) for n in args.items.split(",")):
        store = build(Path(args.workdir) / f"policies-{n_items * 40 // 1_000_000}m", n_items)
        s = ["--store", str(store.root), "--benchmark", "bench"]
        sql = [*SQL, str(store.root), MODEL]
        metrics = [*TRAJAUDIT, "metrics", *s, "--models", MODEL, "--json"]
        forget = functools.partial(shutil.rmtree, store.root / ".cache" / "answers", ignore_errors=True)
        rows = [
            ("metrics --bootstrap 0 --json", 1.0, [*metrics, "--bootstrap", "0"], lambda: None),
            ("metrics --json", 1.5, metrics, lambda: None),
            (
                "flows --from 8f --to 16f --json",
                1.0,
                [*TRAJAUDIT, "flows", *s, "--model", MODEL, "--from", "8f", "--to", "16f", "--json"],
                lambda: None,
            ),  # fmt: skip
            (
                "items --json --page 1",
                1.0,
                [*TRAJAUDIT, "items", *s, "--model", MODEL, "--json", "--page", "1"],
                lambda: None,
            ),  # fmt: skip
            (
                "after a one-row write: metrics --bootstrap 0 --json",
                2.0,
                [*metrics, "--bootstrap", "0"],
                OneRowWrites(store),
            ),  # fmt: skip
            (
                "no kept answer: metrics --bootstrap 0 --json",
                None,
                [*metrics, "--bootstrap", "0"],
                forget,
            ),  # fmt: skip
            ("no kept answer: metrics --json", None, metrics, forget),
        ]
        print(f"\n{n_items * len(MODELS) * len(GRID):,} responses ({store.root}), median of {args.repeat} runs each")
        print("| trajaudit command | SQL baseline (s) | trajaudit (s) | ratio | peak memory SQL / trajaudit |")
        print("|---|---|---|---|---|")
        for name, target, cli, before in (r for r in rows if args.only in r[0]):
            print(line(name, target, *pair(sql, cli, args.repeat, before)), flush=True)
        print(f"(load average {os.getloadavg()[0]:.1f} at the end, {time.strftime('%H:%M:%S UTC', time.gmtime())})")


if __name__ == "__main__":
    main()
