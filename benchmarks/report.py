"""Time and size of ``trajaudit report`` on the demo store and on a store of 1M responses (issue 14).

* demo: the default demo store (480 items with videos, 4 models, ``build_demo``), the Overview's
  default view of one benchmark with 3 models and a gallery of 24 items;
* 1M: 4 models x 25k items x 10 configurations (``benchmarks/policies.py``'s store, reused when
  already built under ``--workdir``; no videos, so the gallery shows notes instead of frames).

For each it prints the wall and CPU time of the whole command (a fresh ``trajaudit report`` process,
imports included), then, in this process, the data (``report_data``) and rendering
(``html.render``) phases, and the file size. On a shared machine the CPU time is the steadier figure
(the wall time waits for the other processes; the load average is printed beside it). Targets: demo < 10 s and < 5 MB; 1M < 30 s.
Usage: ``python benchmarks/report.py [--workdir .bench/report] [--items 25000] [--skip-1m]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from backend.report import html  # noqa: E402
from backend.report.data import report_data  # noqa: E402
from backend.scope.resolve import Scope  # noqa: E402
from store.store import Store  # noqa: E402


def measure(name: str, store: Store, benchmark: str, models: list[str], out: Path) -> None:
    cmd = [
        str(Path(sys.executable).parent / "trajaudit"),
        "report",
        "--store",
        str(store.root),
        "--benchmark",
        benchmark,
        "--models",
        ",".join(models),
        "--gallery",
        "24",
        "--out",
        str(out),
    ]
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
    wall = time.perf_counter() - t
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    resolved = Scope(benchmark=benchmark, models=tuple(models)).resolve(store)
    t0 = time.perf_counter()
    data = report_data(store, resolved, gallery_items=24)
    t1 = time.perf_counter()
    text = html.render(data)
    t2 = time.perf_counter()
    n = store.query("SELECT count(*) AS n FROM responses").n[0]
    print(
        f"{name}: {n:,} responses, {data['scope']['n_items']:,} matched items, grid {','.join(data['scope']['grid'])}"
    )
    print(
        f"  trajaudit report (fresh process): {wall:.2f} s wall, {cpu:.2f} s CPU (load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores) -> {out.stat().st_size / 1e6:.2f} MB"
    )
    print(
        f"  in process: data {t1 - t0:.2f} s, HTML {t2 - t1:.2f} s, {len(text.encode()) / 1e6:.2f} MB, "
        f"{len(data['gallery'])} gallery items, {sum(len(s['jpeg_base64']) for g in data['gallery'] for s in g['frames'])} thumbnails"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=".bench/report")
    ap.add_argument("--items", type=int, default=25_000, help="items of the large store (x 4 models x 10 configs)")
    ap.add_argument("--skip-1m", action="store_true")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    demo = Store(work / "demo")
    if demo.is_empty():
        from backend.demo.synthetic import build_demo

        build_demo(demo.root, seed=0)
    measure(
        "demo", demo, "synthetic-videomme", ["synthetic-A-7B", "synthetic-B-13B", "synthetic-C-72B"], work / "demo.html"
    )
    if not args.skip_1m:
        from policies import MODELS, build

        measure("1M", build(work, args.items), "bench", MODELS, work / "1m.html")


if __name__ == "__main__":
    main()
