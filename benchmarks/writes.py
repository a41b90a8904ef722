"""The first read after a write (issue 24): ``metrics --json`` and the Overview's server-side view, warm and
after writes of each size, and many single-row ingests against the first ones.

On the generated store of ``benchmarks/policies.py`` (4 models x ``--items`` x 10 configurations; 250k items
is the 10M-response store), built under ``--workdir`` and reused:

* ``metrics --json`` as a fresh process (the CLI as a user runs it), and the Overview's server-side view
  in this long-lived process as the dashboard computes it (``Scope.resolve``, ``Resolved.load``,
  ``backend.views.overview`` with 1,000 bootstrap resamples), each:
  warm (nothing written since the last read: median of ``--repeat``), then the first read after
  a one-row ingest, after a 10k-row ingest (``trajaudit ingest`` of a CSV, as a fresh process: repeats of
  stored cells under a new run id) and after a re-run answered by the tiny demo model (below), each the
  median of ``--repeat`` samples with a write of its own before every sample (one sample moved a ratio by
  0.3-0.5x between runs on an idle machine); each in wall and CPU seconds (the process's, DuckDB's
  threads included: on a shared machine the wall time is mostly waiting for a core) with its ratio to warm (targets: 1.5x after one row, 2x after 10k rows);
* ``--ingests`` single-row ingests (``store.ingest.ingest_paths``, what ``trajaudit ingest`` calls),
  the mean of the last 100 against the first 100 (target within 1.5x), then a cold ``info --json``
  (a fresh process; the first read after them all, from the caches an ``info --json`` before them left).

The re-run is the one a researcher starts from the dashboard: ``backend.runtime.rerun.submit`` in this
process (as the page's re-run panel calls it, ``--force``: the cell has a logged answer), then a
``trajaudit worker --model bench-model-0 --once`` process answers it and writes its row, and the reads
are timed after that process has exited; the worker's own time (start, model load, decode, answer,
write) is printed apart and counted in no read. The generated store's items name videos that do not
exist, so before anything is timed the script makes the two items it re-runs (``RERUN_ITEMS``) really
re-runnable, once per store: the tiny random-weights demo model (``backend.demo.model``, as the demo
store registers it) is built and registered as ``bench-model-0`` with a ceiling covering the grid's
largest budget (so the default grid stays the same), and a generated clip is written under the video
root and linked to those items through the video catalog (``trajaudit videos link --paths``), the
catalog a real benchmark's videos are linked through.

Usage: ``python benchmarks/writes.py [--items 250000] [--workdir .bench/policies] [--ingests 2000]
[--only ingests]`` (``--ingests 0``: the reads only; ``--only ingests``: the many small writes only).
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
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from policies import GRID, MODELS, build  # noqa: E402

from backend import views  # noqa: E402
from backend.demo.model import DEMO_FAMILY, register_demo_model_isolated  # noqa: E402
from backend.demo.synthetic import write_clip  # noqa: E402
from backend.runtime import rerun  # noqa: E402
from backend.scope.resolve import Scope  # noqa: E402
from backend.scope.view import open_view  # noqa: E402
from backend.videos import catalog  # noqa: E402
from store import registry, retired  # noqa: E402
from store.configs import parse  # noqa: E402
from store.ingest import ingest_paths  # noqa: E402
from store.queue import JobQueue  # noqa: E402
from store.rerun_request import RerunRequest  # noqa: E402
from store.store import MANIFEST, Store  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from backend.cli import main; sys.exit(main())"]
RERUN_MODEL, RERUN_CONFIG = MODELS[0], "8f"
RERUN_ITEMS = ("q0000007", "q0000008")  # one re-run before the first metrics, one before the first Overview
CLIP = "bench-clips/clip.mp4"  # under the video root (<store>/videos)


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


def overview_s(store: Store) -> tuple[float, float]:
    """(wall, CPU) seconds of the Overview's server-side computation for the four models, as
    ``pages/common/data.py`` runs it (CPU: this process's, DuckDB's threads included)."""
    t, c = time.perf_counter(), time.process_time()
    resolved = Scope(benchmark="bench", models=tuple(MODELS)).resolve(store)
    views.overview(open_view(store, resolved), bootstrap=1000)
    return time.perf_counter() - t, time.process_time() - c


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


def first_read(write: Callable[[], object], read: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``read`` right after ``write``: one sample of the first read after a write."""
    write()
    return read()


def median_pair(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """The median wall and the median CPU seconds of (wall, CPU) samples (each median taken apart)."""
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def spread(samples: list[tuple[float, float]]) -> str:
    walls = sorted(s[0] for s in samples)
    return f"{walls[0]:.2f}-{walls[-1]:.2f} s"


def make_rerunnable(store: Store, tmp: Path) -> None:
    """The tiny demo model registered as ``RERUN_MODEL`` and a generated clip linked to ``RERUN_ITEMS``
    (see the module docstring); each step only where the store lacks it, before any timing."""
    if RERUN_MODEL not in registry.load(store.root):
        register_demo_model_isolated(store.root, RERUN_MODEL, DEMO_FAMILY, max(parse(c).frames for c in GRID))
    clip = store.root / "videos" / CLIP
    if not clip.exists():
        t = np.arange(32)[:, None, None, None]  # a bar sweeping across 32 frames: a clip with motion
        x = np.arange(160)[None, None, :, None]
        write_clip(clip, np.broadcast_to(np.where(np.abs(x - 5 * t) < 12, 230, 30), (32, 120, 160, 3)).astype(np.uint8))
    linked = catalog.lookup(store, "bench", list(RERUN_ITEMS))
    if len(linked) < len(RERUN_ITEMS) or (linked["status"] != "linked").any():
        paths = tmp / "clips.csv"
        paths.write_text("".join(f"{item},{Path(CLIP).name}\n" for item in RERUN_ITEMS))
        wall(
            [*CLI, "videos", "link", "--benchmark", "bench", "--dataset", str(clip.parent), "--paths", str(paths)]
            + ["--no-progress", "--store", str(store.root)]
        )


MODEL_S: list[tuple[float, float]] = []  # (wall, CPU) seconds of each re-run's worker process


def rerun_write(store: Store, item: str) -> None:
    """One re-run of ``item`` queued as the dashboard queues it and answered by a worker process (its time in
    ``MODEL_S``); SystemExit when the job did not end done."""
    out = rerun.submit(store.root, RerunRequest(RERUN_MODEL, "bench", item, RERUN_CONFIG, None, True))
    worker = [*CLI, "worker", "--model", RERUN_MODEL, "--once", "--device", "cpu", "--store", str(store.root)]
    MODEL_S.append(cpu_of(lambda: wall(worker)))
    job = JobQueue(store.root).get(int(out["job_id"]))
    if job is None or job.state != "done":
        raise SystemExit(f"re-run of {item} did not finish: {None if job is None else (job.state, job.error)}")


def many_small_writes(store: Store, n_items: int, n: int) -> None:
    """``n`` single-row ingests, the last 100 against the first 100, then a cold and a warm ``info --json``.

    One untimed ingest comes first: the first write after a pause deletes the retired files whose grace
    period ran out meanwhile (and moves a store's older in-manifest retired list to ``retired/``), a
    one-off cost of the pause, not of the writes before it."""
    tmp, stamp = Path(tempfile.mkdtemp(prefix="ingests-")), time.strftime("%H%M%S")
    ingest_paths(store, [write_csv(tmp, repeats(n_items, 10_001, 1, f"first-{stamp}"))])
    before = cpu_of(lambda: wall([*CLI, "info", "--json", "--store", str(store.root)]))  # its caches, as of now
    print(
        f"info --json before them: {before[0]:.2f} s (CPU {before[1]:.2f} s; "
        "a store never read before builds its caches here)"
    )
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
    make_rerunnable(store, tmp)
    wall(metrics_cmd(store)), overview_s(store)  # the caches of the current version
    runs = [cpu_of(lambda: wall(metrics_cmd(store))) for _ in range(args.repeat)]
    views_ = [overview_s(store) for _ in range(args.repeat)]
    warm = (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        statistics.median(v[0] for v in views_),
        statistics.median(v[1] for v in views_),
    )
    print(f"{'read':<28} {'metrics --json: wall':>22} {'(CPU)':>14} {'overview (server)':>20} {'(CPU)':>14}")
    print(f"{'warm':<28} {warm[0]:>20.2f} s {warm[1]:>8.2f} s {warm[2]:>18.2f} s {warm[3]:>8.2f} s")
    stamp, reruns, serial = time.strftime("%H%M%S"), itertools.cycle(RERUN_ITEMS), itertools.count()

    def ingest(first: int, n: int) -> float:
        """``trajaudit ingest`` of ``n`` repeats from cell ``first`` under a run id of their own (a new write each time)."""
        rows = repeats(args.items, first, n, f"w{n}-{stamp}-{next(serial)}")
        return wall([*CLI, "ingest", str(write_csv(tmp, rows)), "--store", str(store.root)])

    writes = {
        "after a one-row ingest": lambda: ingest(0, 1),
        "after a 10k-row ingest": lambda: ingest(1, 10_000),
        "after a re-run (tiny model)": lambda: rerun_write(store, next(reruns)),
    }
    for label, write in writes.items():
        cli = [first_read(write, lambda: cpu_of(lambda: wall(metrics_cmd(store)))) for _ in range(args.repeat)]
        server = [first_read(write, lambda: overview_s(store)) for _ in range(args.repeat)]
        (w, c), (sw, sc) = median_pair(cli), median_pair(server)
        print(
            f"{label:<28} {w:>7.2f} s ({w / warm[0]:.2f}x) {c:>7.2f} s ({c / warm[1]:.2f}x) "
            f"{sw:>8.2f} s ({sw / warm[2]:.2f}x) {sc:>7.2f} s ({sc / warm[3]:.2f}x)   "
            f"[wall {spread(cli)}; {spread(server)}]"
        )
    print(
        f"(medians of {args.repeat}: each sample is the first read after a write of its own, so every write is "
        "made 2 x --repeat times; [the samples' wall range])"
    )
    print(
        f"the re-runs' worker processes ({RERUN_CONFIG}, start + model load + decode + answer + write; in no read): "
        + ", ".join(f"{w:.2f} s (CPU {c:.2f} s)" for w, c in MODEL_S)
    )

    if args.ingests:  # --ingests 0: the reads only
        many_small_writes(store, args.items, args.ingests)


if __name__ == "__main__":
    main()
