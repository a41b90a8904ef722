"""A selection's batch re-run: its requests, submitted together, their progress, and cancelling them.

Pages and ``trajaudit rerun --flow/--items`` re-run a selection (``backend.scope.selection``) as one
batch; how it then answers against a baseline is ``backend.views.batch_report``.
"""

from __future__ import annotations

from collections import Counter

from backend.contracts.runs import BatchProgress, RerunBatch
from backend.runtime import rerun
from store.errors import UserError
from store.queue import MAX_QUEUED, JobQueue
from store.rerun_request import RerunRequest


def batch_requests(
    model: str, benchmark: str, ids: list[str], config: str, seed: int | None = None, force: bool = False
) -> list[RerunRequest]:
    """The requests of a batch re-run: the selected items, each asked the same way."""
    return [RerunRequest(model, benchmark, item_id, config, seed, force) for item_id in ids]


def submit(root: str, requests: list[RerunRequest]) -> RerunBatch:
    """Re-run a batch (:func:`batch_requests`): every request is validated first, so a bad one queues nothing,
    and the new jobs are queued in one transaction, so a batch that does not fit the queue queues none.

    Items whose identical request is stored are answered from the store (unless ``force``);
    the others join a pending identical job or are queued. Returns the batch: job ids per item.
    """
    if not requests:
        raise UserError("the selection is empty: nothing to re-run")
    if len(requests) > MAX_QUEUED:
        raise UserError(
            f"a batch re-run takes at most {MAX_QUEUED} items (the queue's limit); the selection has {len(requests)}"
        )
    if len({(r.model, r.benchmark, r.config, r.seed, r.force) for r in requests}) > 1:
        raise UserError("a batch re-run asks every item the same way (one model, benchmark, config and seed)")
    validated = [rerun.validate(root, req) for req in requests]
    outs = rerun.place_many(root, validated)  # all or nothing against the queue's bound
    first = validated[0]
    return RerunBatch(
        model=first.model,
        benchmark=first.benchmark,
        config=first.config,
        seed=first.seed,
        item_ids=[o.item_id for o in outs],
        job_ids=[o.job_id for o in outs],
        from_store=sum(o.from_store for o in outs),
    )


def progress(root: str, batch: RerunBatch) -> BatchProgress:
    """Job states of a batch: counts per state, whether every job has ended, and ``failure``: the
    most frequent error of its failed jobs (one line, e.g. a model that cannot load), else None."""
    queue = JobQueue(root)
    jobs = {j: queue.get(j) for j in batch.job_ids if j is not None}
    states = ["done" if j is None else getattr(jobs[j], "state", "failed") for j in batch.job_ids]
    counts = {s: states.count(s) for s in ("queued", "running", "done", "failed", "cancelled")}
    errors = Counter(job.error for job in jobs.values() if job is not None and job.state == "failed" and job.error)
    return BatchProgress(
        n=len(states),
        counts=counts,
        finished=counts["queued"] + counts["running"] == 0,
        failure=errors.most_common(1)[0][0] if errors else None,
    )


def cancel(root: str, batch: RerunBatch) -> int:
    """Cancel the batch's queued jobs (running ones finish); how many were cancelled."""
    queue = JobQueue(root)
    pending = [j for j in batch.job_ids if j is not None and getattr(queue.get(j), "state", None) == "queued"]
    for job_id in pending:
        queue.cancel(job_id)
    return len(pending)
