"""What the typed report contracts cost on the hot paths (issue 36 item 1), printed as figures.

* ``import backend.contracts`` in a fresh process (median of ``--repeat``): every command that computes pays it.
* ``trajaudit metrics --json`` as a fresh process, warm matrix cache, no kept answer (each run asks another
  ``--seed``, so it computes; ``backend/cli/answers.py``), median of ``--repeat``.
* ``backend.views.overview`` in-process on an open view (the call the Overview page's run makes), median.
* beside them, the two libraries the contracts could be written in: importing pydantic v2 and defining
  150 six-field models (``defer_build``), against msgspec's import and 150 ``Struct`` classes.

Usage: ``python benchmarks/contracts.py --store PATH [--models A,B] [--repeat 7]`` (a store from ``benchmarks/policies.py``
or ``trajaudit demo``). Run it before and after a change to the contracts and compare the lines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIELDS = (
    "    a: int\n    b: float | None\n    c: str\n    d: list[float]\n    e: dict[str, float | None]\n    f: str = ''\n"
)


def fresh(code: str, repeat: int, path: str = "") -> float:
    """Median seconds of ``code`` timed inside a fresh interpreter (its own start-up left out)."""
    timer = f"import time; t = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), path, os.environ.get("PYTHONPATH")) if p))
    runs = [
        float(
            subprocess.run([sys.executable, "-c", timer], capture_output=True, text=True, check=True, env=env).stdout
        )  # fmt: skip
        for _ in range(repeat)
    ]
    return statistics.median(runs)


def libraries(repeat: int) -> None:
    pyd = "from pydantic import BaseModel, ConfigDict\nclass B(BaseModel):\n    model_config = ConfigDict(defer_build=True)\n"
    msg = "import msgspec\n"
    for k in range(150):
        pyd += f"class M{k}(B):\n    '''doc'''\n{FIELDS}"
        msg += f"class M{k}(msgspec.Struct, kw_only=True):\n    '''doc'''\n{FIELDS}"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m_pyd.py").write_text(pyd)
        (Path(tmp) / "m_msg.py").write_text(msg)
        print(f"import pydantic + 150 models (defer_build): {fresh('import m_pyd', repeat, tmp) * 1e3:7.1f} ms")
        print(f"import msgspec + 150 Structs:                {fresh('import m_msg', repeat, tmp) * 1e3:7.1f} ms")


def metrics_process(store: str, models: str, repeat: int) -> float:
    runs = []
    for seed in range(repeat + 1):
        cmd = [sys.executable, "-c", "import sys; from backend.cli import main; sys.exit(main())"]
        t = time.perf_counter()
        subprocess.run([*cmd, "metrics", "--store", store, "--models", models, "--json", "--seed", str(1000 + seed + int(time.time()))],
                       cwd=REPO, capture_output=True, check=True)  # fmt: skip
        runs.append(time.perf_counter() - t)
    return statistics.median(runs[1:])  # the first may build the matrix cache


def overview_call(store: str, models: str, repeat: int) -> float:
    from backend import views
    from backend.cli import build_parser
    from backend.scope.view import args_view

    argv = ["metrics", "--store", store, "--models", models]
    view = args_view(build_parser(argv).parse_args(argv))
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        views.overview(view, bootstrap=1000, seed=0)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True)
    ap.add_argument("--models", default=",".join(f"bench-model-{k}" for k in range(4)))
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"contracts of {REPO}, store {args.store}")
    print(
        f"import backend.contracts:                    {fresh('import backend.contracts', args.repeat) * 1e3:7.1f} ms"
    )
    print(
        f"metrics --json (computed, fresh process):    {metrics_process(args.store, args.models, args.repeat) * 1e3:7.1f} ms"
    )
    print(
        f"views.overview (the Overview's call):        {overview_call(args.store, args.models, args.repeat) * 1e3:7.1f} ms"
    )
    libraries(args.repeat)


if __name__ == "__main__":
    main()
