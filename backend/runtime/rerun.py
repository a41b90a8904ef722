"""Re-run requests: validate, answer from the store when possible, else enqueue; read results back.

Everything a request could get wrong is checked here, before anything is queued, so a bad request
never reaches a worker: the model is registered, the item exists, the label parses and names a
known sampling policy, the frame budget fits the model's ceiling, pixels per frame are positive
(``store.configs``), the seed is an integer in 0..2**63-1 and the item's video resolves inside the video root (text-only needs no video).

A seed only matters to a policy that draws at random; for the others it is normalised to None, so
"the same request" means the same model, benchmark, item and label (and seed, for a bare
``random``). Such a request whose answer is already stored is answered from the store (logged
``run="main"`` rows first, else the newest re-run) unless ``force``; one already queued or running
is not queued twice.

One request type travels the whole way: ``RerunRequest`` (``store.rerun_request``) is what a caller
builds, what :func:`validate` returns normalised, what the queue stores (``Job.request``), what the
worker runs and what its ``runs`` row records.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from backend.contracts.audits import Enqueued, EnqueueError
from backend.contracts.base import built
from backend.contracts.runs import RerunOutcome
from backend.runtime import logged_frames, registry
from backend.runtime.sampling import policy_name
from backend.videos import catalog
from backend.videos.decode import default_video_root, probe, resolve_video
from store.configs import ConfigLabelError, parse, takes_seed
from store.errors import UserError
from store.queue import MAX_QUEUED, STATES, Job, JobQueue
from store.rerun_request import RerunRequest
from store.schema import order_key_sql
from store.store import Store

FINAL_STATES = ("done", "failed", "cancelled")
JOB_STATES = STATES  # every state a job passes through, in order (pages list them without touching the queue)
MAX_SEED = 2**63 - 1  # responses.seed and the queue's seed column are signed 64-bit
_RESULT_COLUMNS = (
    "run, origin, answer, correct, confidence, score, option_probs, letter_mass, frames, pixels, policy, seed, "
    "frame_indices, raw_output, flags, provenance, written_at"
)
RESULT_KEYS = tuple(c.strip() for c in _RESULT_COLUMNS.split(","))


def parse_seed(seed: object) -> int | None:
    """A non-negative integer seed from an int or its decimal spelling; None stays None."""
    if seed is None or (isinstance(seed, str) and not seed.strip()):
        return None
    if isinstance(seed, bool):
        raise UserError(f"seed must be a non-negative integer (got {seed!r})")
    if isinstance(seed, int):
        value = seed
    elif isinstance(seed, str) and seed.strip().isdecimal():
        value = int(seed.strip())
    else:
        raise UserError(f"seed must be a non-negative integer (got {seed!r})")
    if not 0 <= value <= MAX_SEED:
        raise UserError(f"seed must be a non-negative integer at most {MAX_SEED} (signed 64-bit); got {value}")
    return value


def _effective_seed(label: str, policy: str, seed: int | None) -> int | None:
    name, named_seed = policy_name(policy)
    if name != "random":
        return None
    if named_seed is not None and seed is not None and seed != named_seed:
        raise UserError(f"config {label!r} names seed {named_seed} but --seed {seed} was given")
    return parse_seed(named_seed) if named_seed is not None else (seed or 0)


def validate(store_root: str | os.PathLike, request: RerunRequest) -> RerunRequest:
    """Check a request against the registry, the store and the video root; ``UserError`` if it cannot run.

    Returns it normalised: the canonical label, the seed the policy uses (None unless it draws at
    random; a seed given as its decimal spelling is read), ``force`` a bool.
    """
    model, benchmark, item_id, config = request.model, request.benchmark, str(request.item_id), request.config
    spec = registry.get(store_root, model)
    try:
        cfg = parse(config)
    except ConfigLabelError as exc:
        raise UserError(str(exc)) from exc
    if cfg.tag is not None and cfg.pixels is None:
        raise UserError(
            f"config {config!r} carries the scale-grid tag {cfg.tag!r}, which names no reproducible protocol; "
            f"ask for a label such as '{cfg.frames}f' or '{cfg.frames}f@<n>k'"
        )
    if cfg.fps is not None:
        raise UserError(
            f"config {config!r} names a frame rate, which fixes no frame count to re-run; ask for a budget sampled "
            f"at that rate, such as '64f/fps-{cfg.fps:g}'"
        )
    if cfg.frames > spec.max_frames:
        raise UserError(
            f"config {cfg.label!r} asks for {cfg.frames} frames, above the ceiling of model {model!r}: "
            f"max_frames = {spec.max_frames} in the registry"
        )
    eff_seed = _effective_seed(cfg.label, cfg.policy, parse_seed(request.seed))
    store = Store(store_root)
    item = store.query("SELECT video FROM items WHERE benchmark = ? AND item_id = ?", [benchmark, item_id])
    if item.empty:
        raise UserError(f"unknown item {item_id!r} in benchmark {benchmark!r} (not in the store's items table)")
    if not cfg.is_text:
        fallback = item["video"].iloc[0]
        video, status = catalog.video_for(store, benchmark, item_id, None if pd.isna(fallback) else str(fallback))
        try:
            path = resolve_video(default_video_root(store_root), video)
        except UserError as exc:
            raise UserError(catalog.notice(benchmark, item_id, status, str(exc))) from None
        if logged_frames.is_logged(cfg):
            given = logged_frames.logged_indices(store, model, benchmark, item_id, cfg)
            logged_frames.check_inside(given, probe(path).n_frames, f"{benchmark}/{item_id}")
    return replace(request, item_id=item_id, config=cfg.label, seed=eff_seed, force=bool(request.force))


def _plain(value: object) -> Any:
    """A cell as plain Python: NA/NaN -> None, NumPy scalars and arrays -> int/float/list."""
    if isinstance(value, (np.ndarray, list, tuple)):
        return [_plain(v) for v in value]
    if value is None or pd.isna(value):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _result_dict(row: pd.Series) -> dict:
    """A stored responses row as the re-run result (option_probs, provenance decoded from JSON)."""
    out = {k: _plain(v) for k, v in row.items()}
    out["option_probs"] = json.loads(out["option_probs"]) if out["option_probs"] else None
    out["provenance"] = json.loads(out["provenance"]) if out["provenance"] else {}
    out["timings"] = out["provenance"].get("timings")
    out["written_at"] = None if out["written_at"] is None else out["written_at"].isoformat()
    return out


def stored_result(store_root: str | os.PathLike, req: RerunRequest) -> dict | None:
    """The stored answer to an identical request: the logged ``main`` run first, else the newest re-run.

    The seed column is compared only for a bare ``random`` label; any other label says everything
    (``random-s3`` carries its seed, and ingested rows often leave the column empty).
    """
    seed = req.seed if takes_seed(parse(req.config).policy) else None
    df = Store(store_root).query(
        f"SELECT {_RESULT_COLUMNS} FROM responses WHERE model = ? AND benchmark = ? AND item_id = ? AND config = ? "
        f"AND (?::BIGINT IS NULL OR seed = ?::BIGINT) ORDER BY run = 'main' DESC, {order_key_sql()} DESC LIMIT 1",
        [req.model, req.benchmark, req.item_id, req.config, seed, seed],
    )
    return None if df.empty else _result_dict(df.iloc[0])


def job_result(store_root: str | os.PathLike, job: Job) -> dict | None:
    """The response a done job wrote (looked up by the key in ``result_ref``)."""
    if not job.result_ref:
        return None
    key = json.loads(job.result_ref)
    df = Store(store_root).query(
        f"SELECT {_RESULT_COLUMNS} FROM responses WHERE model = ? AND benchmark = ? AND item_id = ? AND config = ? "
        "AND run = ? LIMIT 1",
        [key["model"], key["benchmark"], key["item_id"], key["config"], key["run"]],
    )
    return None if df.empty else _result_dict(df.iloc[0])


def outcome(req: RerunRequest, job: Job | None, result: dict | None, timed_out: bool = False) -> RerunOutcome:
    """The JSON the CLI prints and the page shows: the request, job id/state, and the result fields."""
    out = {
        "from_store": job is None,
        "job_id": None if job is None else job.id,
        "state": "done" if job is None else job.state,
        "error": None if job is None else job.error,
        "timed_out": timed_out,
        "model": req.model,
        "benchmark": req.benchmark,
        "item_id": req.item_id,
        "config": req.config,
        "seed": req.seed,
    }
    # every result key, null until there is an answer: one shape for a queued, failed and answered request
    empty = dict.fromkeys((*(k for k in RESULT_KEYS if k != "seed"), "timings"))
    return built(out | empty | (result or {}), RerunOutcome)  # checked field by field once, here


def place_many(
    store_root: str | os.PathLike, reqs: list[RerunRequest], max_queued: int = MAX_QUEUED
) -> list[RerunOutcome]:
    """Validated requests' outcomes, all or nothing: each answered from the store, joined to an
    identical pending job, or queued; the new jobs go in one queue transaction, so a batch that does
    not fit the free slots queues none (``UserError`` saying how many slots are free)."""
    hits = [None if req.force else stored_result(store_root, req) for req in reqs]
    rest = [req for req, hit in zip(reqs, hits, strict=True) if hit is None]
    jobs = iter(JobQueue(store_root).enqueue_many(rest, max_queued) if rest else [])
    return [
        outcome(req, None, hit) if hit is not None else outcome(req, next(jobs), None)
        for req, hit in zip(reqs, hits, strict=True)
    ]


def place(store_root: str | os.PathLike, req: RerunRequest, max_queued: int = MAX_QUEUED) -> RerunOutcome:
    """A validated request's outcome: answered from the store, joined to an identical pending job, or queued."""
    return place_many(store_root, [req], max_queued)[0]


def submit(store_root: str | os.PathLike, request: RerunRequest, max_queued: int = MAX_QUEUED) -> RerunOutcome:
    """Validate, then answer from the store, join an identical pending job, or enqueue a new one."""
    return place(store_root, validate(store_root, request), max_queued)


def submit_many(store_root: str | os.PathLike, requests: list[RerunRequest]) -> Enqueued:
    """Submit each request in turn: validated, stored answers reused, duplicates joined.

    A request that cannot run (no video, queue full) is reported, not fatal; when every request
    fails the first reason is raised, since it is then about the intervention, not one item.
    """
    outcomes: list[RerunOutcome] = []
    errors: list[EnqueueError] = []
    for req in requests:  # one queue transaction each; bounded by the queue's capacity
        try:
            outcomes.append(submit(store_root, req))
        except UserError as exc:
            errors.append(EnqueueError(item_id=req.item_id, error=str(exc)))
    if requests and not outcomes:
        raise UserError(f"no re-run could be queued: {errors[0].error}")
    stored = sum(o.from_store for o in outcomes)
    return Enqueued(
        requested=len(requests),
        queued=len(outcomes) - stored,
        from_store=stored,
        job_ids=[o.job_id for o in outcomes if o.job_id is not None],
        errors=errors,
    )


def wait(
    store_root: str | os.PathLike, job_id: int, timeout_s: float | None = None, poll_s: float = 0.5
) -> RerunOutcome:
    """Poll the job until it is done, failed or cancelled (or ``timeout_s`` passes); its outcome."""
    queue = JobQueue(store_root)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        job = queue.get(job_id)
        if job is None:
            raise UserError(f"no job {job_id} in {Path(store_root) / 'jobs.sqlite'}")
        req = job.request
        if job.state in FINAL_STATES:
            return outcome(req, job, job_result(store_root, job) if job.state == "done" else None)
        if deadline is not None and time.monotonic() >= deadline:
            return outcome(req, job, None, timed_out=True)
        time.sleep(poll_s)


def cancel(store_root: str | os.PathLike, job_id: int) -> Job:
    """Cancel a queued job (``trajaudit jobs --cancel``, the Workers page, the re-run panel); UserError otherwise."""
    return JobQueue(store_root).cancel(job_id)
