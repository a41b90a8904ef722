"""The pages' one door to the runtime: submit re-runs, follow their progress, cancel them.

The dashboard imports nothing else from ``backend.runtime`` (``tests/test_layers.py``). What a page
may do with models, jobs, batches and local workers is the list below, so the queue, the worker
pool or the registry can change behind it without a page noticing. Nothing here computes: each
name is the runtime's own function or value, under the name a page reads best.
"""

from __future__ import annotations

from backend.runtime.lifeline import identity as process_identity
from backend.runtime.registry import ModelSpec, list_models
from backend.runtime.registry import load as registered
from backend.runtime.rerun import FINAL_STATES, JOB_STATES, RerunRequest, cancel, submit, submit_many
from backend.runtime.sampling import NAMES as SAMPLING_POLICIES
from backend.runtime.sampling import spell as spell_policy
from backend.runtime.selection import batch_requests
from backend.runtime.selection import cancel as cancel_batch
from backend.runtime.selection import progress as batch_progress
from backend.runtime.selection import submit as submit_batch
from backend.runtime.worker_pool import ensure_local_worker, job_status, local_worker, stop_local_workers, worker_log
from backend.runtime.worker_pool import overview as queue_overview
from backend.videos.decode import thumbnails, timestamps
from store.configs import LOGGED
from store.queue import QueueReadOnly

__all__ = [
    "FINAL_STATES",
    "JOB_STATES",
    "LOGGED",
    "SAMPLING_POLICIES",
    "ModelSpec",
    "QueueReadOnly",
    "RerunRequest",
    "batch_progress",
    "batch_requests",
    "cancel",
    "cancel_batch",
    "ensure_local_worker",
    "job_status",
    "list_models",
    "local_worker",
    "process_identity",
    "queue_overview",
    "registered",
    "spell_policy",
    "stop_local_workers",
    "submit",
    "submit_batch",
    "submit_many",
    "thumbnails",
    "timestamps",
    "worker_log",
]
