"""The demo store with a model that can re-run it: synthetic data plus a tiny random-weights model.

``backend.demo.synthetic.build_demo`` writes synthetic responses of four synthetic models; a re-run needs a
registered checkpoint. So the demo also builds a tiny, randomly initialised Qwen2.5-VL and
registers it under the first synthetic model's name (note "random weights: pipeline demo"): a
re-run's new point then joins that model's trajectory in the inspector, labelled as a
random-weights live re-run, and the whole loop (queue, worker, decode, adapter, store write) runs
on any CPU without downloading anything. Its ceiling covers the demo grid's largest budget.

The tiny model is built in a child process, because building it imports torch and the dashboard,
which calls this to build its demo store, never imports torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from backend.contracts.base import built
from backend.contracts.demo import DemoSummary
from backend.demo.synthetic import MAIN_GRID, MODELS, SUBSET_CONFIGS, build_demo
from backend.extras import missing_worker_extra
from backend.runtime import registry
from store.configs import parse
from store.errors import UserError

DEMO_MODEL = MODELS[0].name
DEMO_FAMILY = "qwen2_5_vl"
DEMO_MAX_FRAMES = max(parse(c).frames for c in MAIN_GRID + SUBSET_CONFIGS)
DATA_SHARE = 0.85  # of the progress bar: the synthetic data; the rest is the model build
_BUILD = "import sys; from backend.runtime.registry import register_demo_model as r; r(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))"


def register_demo_model_isolated(
    store_root: str | os.PathLike, name: str = DEMO_MODEL, family: str = DEMO_FAMILY, max_frames: int = DEMO_MAX_FRAMES
) -> registry.ModelSpec:
    """``registry.register_demo_model`` run in a child interpreter (torch stays out of this process)."""
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-c", _BUILD, str(store_root), name, family, str(max_frames)]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise UserError(f"building the demo model {name!r} failed (exit {done.returncode}):\n{tail}")
    return registry.get(store_root, name)


def build_demo_store(
    store_root: str | os.PathLike, *, progress: Callable[[float, str], None] | None = None, **kw
) -> DemoSummary:
    """``build_demo(store_root, **kw)``, then the random-weights demo model: ``demo --json``'s contract, whose
    ``demo_model`` is None in a core install without the worker extra (the store browses, re-runs need it)."""
    report = progress or (lambda fraction, message: None)
    summary = build_demo(store_root, progress=lambda f, msg: report(DATA_SHARE * f, msg), **kw)
    if missing_worker_extra():
        report(1.0, "done (no re-run model without the worker extra)")
        return built(summary | {"demo_model": None}, DemoSummary)
    report(DATA_SHARE, f"building the random-weights demo model {DEMO_MODEL}")
    spec = register_demo_model_isolated(summary["store"])  # the resolved root (--store may be omitted)
    report(1.0, "done")
    return built(summary | {"demo_model": spec}, DemoSummary)
