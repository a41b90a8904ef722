"""The dispatcher's ceiling: 64 actors with a fake slow model on one dispatcher, the store's one writer.

Why: with re-runs computed on a Ray cluster (``trajaudit dispatch``), every answer passes through
one process on the store's machine (claim, read the item, write the rows, mark the job done). This
measures how many answers per second that process sustains, where it (not the actors) becomes the
limit, and how the store-write batch size (``--write-batch``) moves that point.

What stands in for what. The real :class:`~backend.runtime.dispatch.Dispatcher` runs unchanged on a
real store and queue; only Ray is replaced, by threads (``FakeRay``): each of the 64 "actors" is a
registered model whose ``answer`` sleeps ``--delay`` seconds and returns a canned answer, so the
actors cost the dispatcher nothing but their wait and the figures are the dispatcher's own costs.
(Ray's local mode is deprecated, and 64 real actor processes do not fit a 2-core machine.) Jobs are
text-only, so no frames are decoded or shipped: the answer rows, store writes and queue updates are
the real ones.

For each delay (the model's time per answer) and write batch, it prints the ideal rate (64 / delay),
the measured rate, the dispatcher's CPU time per answer and the rate that allows on one free core
(``ceiling_per_cpu_s``: on a shared machine the wall-clock rate understates it), the share of the
dispatcher's time spent writing (``writer_busy``: claims and reads take the rest), rows per store
write, and whether the run was dispatcher-bound (measured under 80% of the ideal rate). The single
writer becomes the limit once 64 / delay exceeds the ceiling. Usage: ``python benchmarks/dispatch.py [--actors 64] [--jobs 384]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.runtime import registry, rerun  # noqa: E402
from backend.runtime.dispatch import Dispatcher  # noqa: E402
from backend.runtime.dispatch_actor import ActorInfo  # noqa: E402
from backend.runtime.inference.base import InferenceResult  # noqa: E402
from backend.runtime.inference.cell import ColdCell  # noqa: E402
from backend.runtime.inference.records import ModelContext, library_versions  # noqa: E402
from store.rerun_request import RerunRequest  # noqa: E402
from store.store import Store  # noqa: E402

OPTIONS = ["A. One.", "B. Two.", "C. Three.", "D. Four."]
RESULT = InferenceResult("B", "B", {"A": 0.1, "B": 0.6, "C": 0.2, "D": 0.1}, 0.6, 0.9, None, {"prompt": 12}, {}, None)


class FakeActor:
    """Stands in for ``ModelActor``: loads instantly, answers after ``delay`` seconds (a slow model)."""

    def __init__(self, pool: cf.ThreadPoolExecutor, delay: float, spec):
        self.pool, self.delay, self.spec = pool, delay, spec
        self.load = SimpleNamespace(remote=lambda: pool.submit(self._load))
        self.answer = SimpleNamespace(remote=lambda payload: pool.submit(self._answer))

    def _load(self) -> ActorInfo:
        context = ModelContext(self.spec.name, "fake", "/nodes/ckpt", "fake", library_versions(), "cpu", "float32")
        return ActorInfo("node-1", "10.0.0.1", "node-1", 1, [], None, context)

    def _answer(self) -> ColdCell:
        time.sleep(self.delay)
        return ColdCell(RESULT, np.empty(0, dtype=np.int64), None, None, {})


class FakeRay:
    """The part of the ``ray`` module the dispatcher uses, over a thread pool."""

    class exceptions:  # noqa: N801  (mirrors ray.exceptions)
        class RayError(Exception):
            pass

        class RayTaskError(RayError):
            cause = None

    def __init__(self, actors: int, delay: float):
        self.pool = cf.ThreadPoolExecutor(max_workers=actors + 4)
        self.delay = delay

    def is_initialized(self) -> bool:
        return True

    def cluster_resources(self) -> dict:
        return {"CPU": 64.0}

    def remote(self, **options):
        fake = self

        class Handle:
            @staticmethod
            def options(**_):
                return SimpleNamespace(remote=lambda spec, *args: FakeActor(fake.pool, fake.delay, spec))

        return lambda cls: Handle

    def wait(self, refs, num_returns: int, timeout: float):
        when = cf.FIRST_COMPLETED if num_returns == 1 else cf.ALL_COMPLETED
        cf.wait(refs, timeout=timeout, return_when=when)
        return [r for r in refs if r.done()], [r for r in refs if not r.done()]

    def get(self, ref):
        return ref.result()

    def kill(self, handle) -> None:
        pass


def build(root: Path, actors: int, jobs: int) -> None:
    """A store of ``jobs`` text-only items and ``actors`` registered models (their checkpoint outside it)."""
    items = pd.DataFrame(
        {
            "benchmark": "bench",
            "split": "short",
            "item_id": [f"q{i}" for i in range(jobs)],
            "question": "How many?",
            "options": json.dumps(OPTIONS),
            "target": "B",
            "answer_type": "mcqa",
            "video": None,
            "written_at": datetime.now(UTC),
        }
    )
    Store(root).append({"items": items})
    ckpt = root.parent / "ckpt"
    ckpt.mkdir(exist_ok=True)
    (ckpt / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    for k in range(actors):
        registry.add(root, registry.ModelSpec(f"m{k:02d}", "qwen2_5_vl", str(ckpt)))
    requests = [RerunRequest(f"m{i % actors:02d}", "bench", f"q{i}", "text") for i in range(jobs)]
    rerun.place_many(root, [rerun.validate(root, r) for r in requests])


def measure(actors: int, jobs: int, delay: float, batch: int, workdir: Path) -> dict:
    root = workdir / f"store-{delay}-{batch}"
    root.mkdir(parents=True)
    build(root, actors, jobs)
    fake = FakeRay(actors, delay)
    dispatcher = Dispatcher(root, write_batch=batch, poll_s=0.05, ray=fake, log=lambda line: None)
    cpu = time.process_time()
    stats = dispatcher.run(once=True)
    cpu = time.process_time() - cpu  # the dispatcher's own work: the stand-in actors sleep
    fake.pool.shutdown()
    assert stats.done == jobs, stats
    ideal = actors / delay
    rate = stats.answers_per_second
    return {
        "delay_s": delay,
        "write_batch": batch,
        "ideal_per_s": round(ideal, 1),
        "answers_per_s": rate,
        "share_of_ideal": round(rate / ideal, 2),
        "cpu_ms_per_answer": round(1000 * cpu / jobs, 1),
        "ceiling_per_cpu_s": round(jobs / cpu, 1),
        "writer_busy": stats.writer_busy,
        "rows_per_write": stats.rows_per_write,
        "writes": stats.writes,
        "dispatcher_bound": rate < 0.8 * ideal,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actors", type=int, default=64)
    parser.add_argument("--jobs", type=int, default=384, help="jobs per run (the queue holds at most 1,000)")
    parser.add_argument("--delays", default="2,0.5,0.1", help="seconds per answer of the fake model")
    parser.add_argument("--batches", default="1,8,64", help="--write-batch values")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-dispatch-"))
    rows = []
    try:
        for delay in (float(d) for d in args.delays.split(",")):
            for batch in (int(b) for b in args.batches.split(",")):
                rows.append(measure(args.actors, args.jobs, delay, batch, workdir))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{args.actors} actors, {args.jobs} jobs per run, one dispatcher\n")
    table = pd.DataFrame(rows).astype(str)
    print("| " + " | ".join(table.columns) + " |")
    print("|" + "---|" * len(table.columns))
    for row in table.itertuples(index=False):
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
