"""A whole sweep: plan, run the shards, check drift, account for the time, summarise.

The summary (``run_sweep``'s return value, ``trajaudit sweep --json``) holds every number the
sweep reports: cells done / skipped / failed, wall time, phase totals and shares, reuse counters
(frames decoded, processor calls, frames encoded, prefill tokens, each beside its cold count), and
with ``verify`` the paired drift check and, from the same cold/reused pairs, the per-reuse phase
share, component speed-up, ceiling and the measured speed-up.

A choice drift withdraws the sweep's rows from the store (the reused path is not exact for this
model, so nothing it produced is kept) and the summary says so; the CLI then exits non-zero.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tqdm import tqdm

from backend.contracts.base import asdict, validated
from backend.contracts.runs import PhaseShares, PhaseTotals, SweepCells, SweepReport, SweepVerify
from backend.runtime import logs, registry
from backend.runtime.sweep import accounting
from backend.runtime.sweep.engine import EngineCounters, Reuse
from backend.runtime.sweep.executors import run_local, run_ray
from backend.runtime.sweep.plan import DEFAULT_BATCH, build_plan
from backend.runtime.sweep.shard import ShardReport, ShardSettings
from backend.runtime.sweep.verify import drift
from store.configs import parse
from store.store import Store

log = logs.get("sweep")
EXECUTORS = ("local", "ray")
MAX_FAILURES_SHOWN = 20


@dataclass
class SweepRequest:
    store_root: str
    model: str
    benchmark: str
    configs: list[str]  # expanded, canonical labels (plan.expand_grid)
    item_ids: list[str] | None = None
    limit: int | None = None
    resume: bool = False
    batch_size: int = DEFAULT_BATCH
    reuse: Reuse = field(default_factory=Reuse)
    verify: int = 0
    verify_seed: int = 0
    executor: str = "local"
    workers: int | None = None
    ray_address: str | None = None
    video_root: str | None = None  # --executor ray: the videos' folder on the nodes
    device: str = "auto"
    random_fullsize: str | None = None
    progress: bool = True
    args: dict[str, Any] = field(default_factory=dict)


def new_sweep_id() -> str:
    return f"sweep-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def withdraw(store: Store, files: list[str]) -> None:
    """Retire a sweep's files in one write (readers stop seeing its rows at once)."""
    with store.writer() as w:
        for rel in files:
            w.retire(rel.split("/", 1)[0], [rel])


def run_sweep(req: SweepRequest) -> SweepReport:
    """Run the sweep described by ``req`` and return its report."""
    started = time.perf_counter()
    store = Store(req.store_root)
    registry.get(store.root, req.model)  # an unknown model fails before anything runs
    plan = build_plan(
        store, req.model, req.benchmark, req.configs, item_ids=req.item_ids, limit=req.limit, resume=req.resume
    )
    settings = ShardSettings(
        str(store.root),
        req.model,
        req.benchmark,
        new_sweep_id(),
        reuse=req.reuse,
        batch_size=req.batch_size,
        device=req.device,
        random_fullsize=req.random_fullsize,
        args=req.args,
    )
    log.info(f"{settings.sweep_id}: {plan.pending} cells to run ({plan.stored} stored), executor {req.executor}")
    bar = tqdm(
        total=plan.pending,
        unit="cell",
        desc="sweep",
        disable=not req.progress or not plan.pending,
        smoothing=0.1,
        dynamic_ncols=True,
    )
    try:
        if req.executor == "ray":
            reports, chosen, cold = run_ray(
                plan.groups,
                settings,
                bar.update,
                req.verify,
                req.verify_seed,
                req.workers,
                req.ray_address,
                req.video_root,
            )
        else:
            reports, chosen, cold = run_local(plan.groups, settings, bar.update, req.verify, req.verify_seed)
    finally:
        bar.close()
    summary = summarise(plan, settings, reports, time.perf_counter() - started, req)
    log.info(f"{settings.sweep_id}: {summary.cells.done} done, {summary.cells.failed} failed")
    # An approximate protocol is compared with its exact twin: its drift is the measurement, reported,
    # and its rows (labelled ``~prune``) stay; only an exact sweep's drift withdraws its rows.
    summary.approximate = any(not parse(label).is_exact for label in plan.configs)
    if chosen:
        modes = settings.reuse.enabled() + (["prune"] if summary.approximate else [])
        summary.verify = verification(chosen, cold, modes)
        if summary.verify.choice_drift and not summary.approximate:
            withdraw(store, [f for r in reports for f in r.files])
            summary.withdrawn = True
    return validated(summary)  # checked field by field once, here


def summarise(plan, settings: ShardSettings, reports: list[ShardReport], wall: float, req: SweepRequest) -> SweepReport:
    """The sweep's report before the drift check (``verify`` null, nothing withdrawn, not approximate)."""
    counters = EngineCounters()
    for r in reports:
        counters.add(r.counters)
    phase_totals = accounting.totals(o.timings for r in reports for o in r.outcomes)
    failures = [f for r in reports for f in r.failures]
    compute = max((r.compute_seconds for r in reports), default=0.0)
    done = sum(r.cells for r in reports)
    return SweepReport(
        sweep_id=settings.sweep_id,
        model=plan.model,
        benchmark=plan.benchmark,
        configs=plan.configs,
        executor=req.executor,
        shards=len(reports),
        reuse=settings.reuse.enabled(),
        random_fullsize=settings.random_fullsize,
        cells=SweepCells(
            grid=plan.n_items * len(plan.configs),
            skipped=plan.stored,
            pending=plan.pending,
            done=done,
            raced=sum(r.raced for r in reports),
            failed=len(failures),
        ),
        failures=failures[:MAX_FAILURES_SHOWN],
        batches=sum(r.batches for r in reports),
        wall_seconds=wall,
        load_seconds=max((r.load_seconds for r in reports), default=0.0),
        sweep_seconds=compute,
        # CPU time of the busiest shard's process: less moved than wall time by other work on a shared machine
        cpu_seconds=max((r.cpu_seconds for r in reports), default=0.0),
        cells_per_second=done / compute if compute > 0 else None,
        phase_totals=PhaseTotals(**phase_totals),
        # shares of the busiest shard's compute time for one shard; of the phases' sum across shards
        phase_shares=PhaseShares(**accounting.shares(phase_totals, compute if len(reports) == 1 else None)),
        counters=counters.report(),
        verify=None,
        withdrawn=False,
        approximate=False,
    )


def verification(chosen, cold, modes: list[str]) -> SweepVerify:
    """The drift check plus the phase accounting of the same cells, cold (exact twin) vs the sweep's path.

    ``modes``: the reuses on, plus ``prune`` for an approximate sweep; each gets its ceiling row."""
    reused_t = accounting.totals(o.timings for o in chosen)
    cold_t = accounting.totals(o.timings for o in cold)
    return SweepVerify(
        **asdict(drift(chosen, cold)),
        cold_phase_totals=PhaseTotals(**cold_t),
        reused_phase_totals=PhaseTotals(**reused_t),
        cold_phase_shares=PhaseShares(**accounting.shares(cold_t)),
        measured_speedup=accounting.speedup(cold_t, reused_t),
        reuse_ceilings=accounting.reuse_table(cold_t, reused_t, modes),
    )
