"""The first read after a write (issue 24): ``metrics --json`` and the Overview's server-side view, warm and
after writes of each size, and many single-row ingests against the first ones.

On the generated store of ``benchmarks/policies.py`` (4 models x ``--items`` x 10 configurations; 250k items
is the 10M-response store), built under ``--workdir`` and reused:

* ``metrics --json`` as a fresh process (the CLI as a user runs it), and the Overview's server-side view
  in this long-lived process as the dashboard computes it (``Scope.resolve``, ``Resolved.load``,
  ``backend.views.overview`` with 1,000 bootstrap resamples), each:
  warm (nothing written since the last read: median of ``--repeat``), then the first read after
  a one-row ingest, after a 10k-row ingest (``trajaudit ingest`` of a CSV, as a fresh process: repeats of
  stored cells under a new run id) and after a re-run overlay row (written as the worker writes a
  re-run's answer: ``origin = 'rerun'``, its own run id and runs row; not answered by a model here);
  each with its ratio to warm (targets: 1.5x after one row, 2x after 10k rows);
* ``--ingests`` single-row ingests (``store.ingest.ingest_paths``, what ``trajaudit ingest`` calls),
  the mean of the last 100 against the first 100 (target within 1.5x), then a cold ``info --json``
  (a fresh process; the first read after them all).

Usage: ``python benchmarks/writes.py [--items 250000] [--workdir .bench/policies] [--ingests 2000] [--only ingests]``.
The store is written to; a second run starts from where the first left it (say so beside figures).
"""

from __future__ import annotations

import argparse
import itertools
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from policies import GRID, MODELS, build  # noqa: E402

from backend import views  # noqa: E402
from backend.scope.resolve import Scope  # noqa: E402
from backend.scope.view import open_view  # noqa: E402
from store import retired  # noqa: E402
from store.ingest import ingest_paths  # noqa: E402
from store.store import MANIFEST, Store  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from backend.cli import main; sys.exit(main())"]


CPU: list[float] = []  # CPU seconds (user + system) of each command run by ``wall``, in order


def wall(cmd: list[str]) -> float:
    """Wall seconds of ``cmd`` as a fresh process; its CPU seconds go to ``CPU`` (on a machine shared with
    other work the wall time is mostly waiting for a core, the CPU time is what the command costs)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[3:])} failed ({done.returncode}): {done.stderr.strip()}")
    seconds = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return seconds


def cpu_of(run: Callable[[], float]) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``wall`` call."""
    seconds = run()
    return seconds, CPU[-1]


def metrics_cmd(store: Store) -> list[str]:
    return [*CLI, "metrics", "--json", "--store", str(store.root), "--models", ",".join(MODELS), "--benchmark", "bench"]


def overview_s(store: Store) -> float:
    """The Overview's server-side computation for the four models, as ``pages/common/data.py`` runs it."""
    t = time.perf_counter()
    resolved = Scope(benchmark="bench", models=tuple(MODELS)).resolve(store)
    views.overview(open_view(store, resolved), bootstrap=1000)
    return time.perf_counter() - t


def write_csv(folder: Path, rows: pd.DataFrame) -> Path:
    path = folder / f"rows-{time.time_ns()}.csv"
    rows.to_csv(path, index=False)
    return path


def repeats(n_items: int, first: int, n: int, run: str) -> pd.DataFrame:
    """``n`` stored cells from cell ``first`` on (item-major over models and configurations) answered again
    under run ``run``: rows for items the store holds, so the matched grid stays as it was."""
    k = np.arange(first, first + n)
    per_item = len(MODELS) * len(GRID)
    return pd.DataFrame(
        {
            "model": np.array(MODELS)[k % len(MODELS)],
            "benchmark": "bench",
            "item_id": [f"q{i:07d}" for i in (k // per_item) % n_items],
            "config": np.array(GRID)[(k // len(MODELS)) % len(GRID)],
            "correct": 1,
            "run": run,
        }
    )


def overlay_row(store: Store, k: int) -> None:
    """One re-run answer, written as the worker writes it (``backend.runtime.worker``'s responses and runs rows)."""
    now, run = datetime.now(UTC), f"rerun-bench-{k}-{time.time_ns()}"
    response = {
        "model": MODELS[0],
        "benchmark": "bench",
        "item_id": f"q{k:07d}",
        "config": GRID[3],
        "run": run,
        "run_id": run,
        "origin": "rerun",
        "answer": "A",
        "correct": 1,
        "confidence": 0.9,
        "written_at": now,
    }
    runs = {"run_id": run, "origin": "rerun", "source": "job:bench", "format": "rerun", "n_rows": 1, "created_at": now}
    store.append({"responses": pd.DataFrame([response]).astype({"correct": "int8"}), "runs": pd.DataFrame([runs])})


def many_small_writes(store: Store, n_items: int, n: int) -> None:
    """``n`` single-row ingests, the last 100 against the first 100, then a cold and a warm ``info --json``.

    One untimed ingest comes first: the first write after a pause deletes the retired files whose grace
    period ran out meanwhile (and moves a store's older in-manifest retired list to ``retired/``), a
    one-off cost of the pause, not of the writes before it."""
    tmp, stamp = Path(tempfile.mkdtemp(prefix="ingests-")), time.strftime("%H%M%S")
    ingest_paths(store, [write_csv(tmp, repeats(n_items, 10_001, 1, f"first-{stamp}"))])
    times, cpus = [], []
    for k in range(n):
        path = write_csv(tmp, repeats(n_items, 20_000 + k, 1, f"single-{stamp}-{k}"))
        t, c = time.perf_counter(), time.process_time()
        ingest_paths(store, [path])
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        path.unlink()
    head, tail = statistics.mean(times[:100]), statistics.mean(times[-100:])
    chead, ctail = statistics.mean(cpus[:100]), statistics.mean(cpus[-100:])
    records = len(list((store.root / retired.FOLDER).glob("*.json")))
    print(
        f"{n} single-row ingests in {sum(times):.1f} s: first 100 {head * 1000:.0f} ms each "
        f"(CPU {chead * 1000:.0f} ms), last 100 {tail * 1000:.0f} ms each (CPU {ctail * 1000:.0f} ms): "
        f"{tail / head:.2f}x wall, {ctail / chead:.2f}x CPU (target 1.5x); "
        f"{len(store.manifest().files['responses'])} response files listed, manifest.json "
        f"{(store.root / MANIFEST).stat().st_size:,} bytes, {records} records in {retired.FOLDER}/"
    )
    info = [cpu_of(lambda: wall([*CLI, "info", "--json", "--store", str(store.root)])) for _ in range(2)]
    print(
        f"cold info --json after them: {info[0][0]:.2f} s (CPU {info[0][1]:.2f} s); "
        f"warm {info[1][0]:.2f} s (CPU {info[1][1]:.2f} s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=250_000)
    ap.add_argument("--workdir", default=".bench/policies")
    ap.add_argument("--ingests", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["all", "ingests"], default="all", help="ingests: the many small writes alone")
    args = ap.parse_args()
    store = build(Path(args.workdir), args.items)
    if args.only == "ingests":
        many_small_writes(store, args.items, args.ingests)
        return
    n = store.query("SELECT count(*) n FROM responses").n[0]
    print(
        f"store: {n:,} responses ({len(MODELS)} models x {args.items:,} items x {len(GRID)} configs), "
        f"version {store.version()}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="writes-"))
    wall(metrics_cmd(store)), overview_s(store)  # the caches of the current version
    runs = [cpu_of(lambda: wall(metrics_cmd(store))) for _ in range(args.repeat)]
    warm = (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        statistics.median(overview_s(store) for _ in range(args.repeat)),
    )
    print(f"{'read':<28} {'metrics --json: wall':>22} {'(CPU)':>14} {'overview (server)':>20}")
    print(f"{'warm':<28} {warm[0]:>20.2f} s {warm[1]:>8.2f} s {warm[2]:>18.2f} s")
    stamp, overlays = time.strftime("%H%M%S"), itertools.count(7)
    writes = {
        "after a one-row ingest": lambda: wall(
            [*CLI, "ingest", str(write_csv(tmp, repeats(args.items, 0, 1, f"one-{stamp}"))), "--store", str(store.root)]
        ),
        "after a 10k-row ingest": lambda: wall(
            [
                *CLI,
                "ingest",
                str(write_csv(tmp, repeats(args.items, 1, 10_000, f"ten-{stamp}"))),
                "--store",
                str(store.root),
            ]
        ),
        "after a re-run overlay row": lambda: overlay_row(store, next(overlays)),
    }
    for label, write in writes.items():
        write()
        cli, cpu = cpu_of(lambda: wall(metrics_cmd(store)))  # first metrics after the write
        write()
        server = overview_s(store)  # first Overview after the (same size) write
        print(
            f"{label:<28} {cli:>7.2f} s ({cli / warm[0]:.2f}x) {cpu:>7.2f} s ({cpu / warm[1]:.2f}x) "
            f"{server:>8.2f} s ({server / warm[2]:.2f}x)"
        )
    print("(each write is made again before the Overview, so each column times the first read after its write)")

    many_small_writes(store, args.items, args.ingests)


if __name__ == "__main__":
    main()
