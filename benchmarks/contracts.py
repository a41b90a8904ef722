"""What the typed report contracts cost on the hot paths (issue 36 item 1), printed as figures side by side.

For each tree given (``--tree``, default this checkout), round by round so a load spell hits them alike:

* importing the contract module ``metrics`` prints (``backend.contracts.views``), and every contract module,
  in a fresh process: a command pays the first, only the docs and tests the second;
* ``trajaudit metrics --json`` as a fresh process, warm matrix cache, no kept answer (each run asks another
  ``--seed``, so it computes and validates its report; ``backend/cli/answers.py``);
* of such a command, the time spent importing the contract modules and msgspec (their own times in
  ``-X importtime``, summed);
* ``backend.views.overview`` on an open view (the call the Overview page's run makes), in a fresh process.

Every child runs with its bytecode cached (``PYTHONPYCACHEPREFIX``, one warm-up first), as an installed
package does: with ``PYTHONDONTWRITEBYTECODE`` set, each import would recompile the contract modules and the
figure would be mostly the compiler's. Beside them, the two libraries the contracts could be written in:
importing pydantic v2 and defining 150 six-field models (``defer_build``), against msgspec and 150 ``Struct``s.

Usage: ``python benchmarks/contracts.py --store PATH [--models A,B] [--repeat 7] [--tree DIR ...]`` (a store
from ``benchmarks/policies.py`` or ``trajaudit demo``; a tree is a checkout or ``git archive`` of the repo).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIELDS = (
    "    a: int\n    b: float | None\n    c: str\n    d: list[float]\n    e: dict[str, float | None]\n    f: str = ''\n"
)
MODULES = ("audits", "common", "explain", "inspector", "policies", "report", "runs", "store", "views")
OVERVIEW = """
import statistics, sys, time
from backend import views
from backend.cli import build_parser
from backend.scope.view import args_view
argv = ["metrics", "--store", sys.argv[1], "--models", sys.argv[2]]
view = args_view(build_parser(argv).parse_args(argv))
runs = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    views.overview(view, bootstrap=1000, seed=0)
    runs.append(time.perf_counter() - t)
print(statistics.median(runs))
"""


def env(tree: Path, path: str = "") -> dict[str, str]:
    """The child's environment: the tree first on the path, bytecode cached under a prefix of its own."""
    out = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(tree), path) if p))
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "trajaudit-bench-pyc" / tree.name)
    return out


def timed(code: str, tree: Path, path: str = "") -> float:
    """Seconds of ``code`` timed inside a fresh interpreter (its own start-up left out)."""
    timer = f"import time; t = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
    run = subprocess.run([sys.executable, "-c", timer], capture_output=True, text=True, check=True, env=env(tree, path))
    return float(run.stdout)


def metrics_process(tree: Path, store: str, models: str) -> float:
    """Seconds of one computed ``metrics --json`` (a seed never asked before, so no kept answer serves it)."""
    cmd = [sys.executable, "-c", "import sys; from backend.cli import main; sys.exit(main())", "metrics"]
    seed = str(time.time_ns() % 10**9)
    t = time.perf_counter()
    subprocess.run([*cmd, "--store", store, "--models", models, "--json", "--seed", seed],
                   cwd=tree, capture_output=True, check=True, env=env(tree))  # fmt: skip
    return time.perf_counter() - t


CONTRACT_MODULES = ("backend.contracts", "msgspec", "store.contract", "store.jobs")


def contract_imports(tree: Path, store: str, models: str) -> float:
    """Seconds a computed ``metrics --json`` spends importing the contracts and msgspec: the sum of their own
    (self) times in ``-X importtime``, a figure the machine's load stretches far less than the command's wall time."""
    cmd = [sys.executable, "-X", "importtime", "-c", "import sys; from backend.cli import main; sys.exit(main())"]
    argv = ["metrics", "--store", store, "--models", models, "--json", "--seed", str(time.time_ns() % 10**9)]
    run = subprocess.run([*cmd, *argv], cwd=tree, capture_output=True, text=True, check=True, env=env(tree))
    own = 0
    for line in run.stderr.splitlines():  # "import time: <self us> | <cumulative us> | <module>"
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip().startswith(CONTRACT_MODULES):
            own += int(parts[0].split(":")[1])
    return own / 1e6


def overview_call(tree: Path, store: str, models: str, repeat: int) -> float:
    """Median seconds of ``views.overview`` in one fresh process (its first call warms the scope)."""
    run = subprocess.run([sys.executable, "-c", OVERVIEW, store, models, str(repeat)],
                         cwd=tree, capture_output=True, text=True, check=True, env=env(tree))  # fmt: skip
    return float(run.stdout)


def libraries(repeat: int) -> None:
    pyd = "from pydantic import BaseModel, ConfigDict\nclass B(BaseModel):\n    model_config = ConfigDict(defer_build=True)\n"
    msg = "import msgspec\n"
    for k in range(150):
        pyd += f"class M{k}(B):\n    '''doc'''\n{FIELDS}"
        msg += f"class M{k}(msgspec.Struct, kw_only=True):\n    '''doc'''\n{FIELDS}"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m_pyd.py").write_text(pyd)
        (Path(tmp) / "m_msg.py").write_text(msg)
        for name, mod in (
            ("import pydantic + 150 models (defer_build)", "m_pyd"),
            ("import msgspec + 150 Structs", "m_msg"),
        ):
            timed(f"import {mod}", REPO, tmp)  # writes its bytecode
            ms = statistics.median(timed(f"import {mod}", REPO, tmp) for _ in range(repeat)) * 1e3
            print(f"{name:44s} {ms:7.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True)
    ap.add_argument("--models", default=",".join(f"bench-model-{k}" for k in range(4)))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--tree", action="append", type=Path, help="a tree to measure (repeat it; default this checkout)")
    args = ap.parse_args()
    trees = [t.resolve() for t in args.tree or [REPO]]
    every = "import " + ", ".join(f"backend.contracts.{m}" for m in MODULES)
    probes: dict[str, Callable[[Path], float]] = {
        "import backend.contracts.views": lambda t: timed("import backend.contracts.views", t),
        "import every contract module": lambda t: timed(every, t),
        "metrics --json (computed, fresh process)": lambda t: metrics_process(t, args.store, args.models),
        "  of it, importing contracts and msgspec": lambda t: contract_imports(t, args.store, args.models),
        "views.overview (the Overview's call)": lambda t: overview_call(t, args.store, args.models, 3),
    }
    for tree in trees:  # bytecode written, the matrix cache built
        metrics_process(tree, args.store, args.models)
    runs: dict[tuple[str, Path], list[float]] = {(p, t): [] for p in probes for t in trees}
    for _ in range(args.repeat):
        for name, probe in probes.items():
            for tree in trees:
                runs[name, tree].append(probe(tree))
    print(f"store {args.store}; median (min-max) of {args.repeat} rounds, the trees alternating within each")
    for name in probes:
        cells = "  ".join(
            f"{t.name}: {statistics.median(v) * 1e3:6.1f} ({min(v) * 1e3:.0f}-{max(v) * 1e3:.0f}) ms"
            for t in trees
            for v in [runs[name, t]]
        )
        print(f"{name:44s} {cells}")
    libraries(args.repeat)


if __name__ == "__main__":
    main()
