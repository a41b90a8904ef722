"""A re-run job and a worker as the queue's tables hold them (``store.queue``) and as the commands print them.

Apart from the queue so a reader of the records (``backend.contracts``, the Workers page) imports no queue: only the
runtime uses the queue itself (``tests/test_layers.py``). One list of fields per record, two time types
(``Time``): Unix seconds in the objects the queue hands out, ISO-8601 UTC text in what a command prints.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, ClassVar, Generic, Literal, TypeVar

from msgspec.structs import asdict

from store.contract import Contract, doc
from store.rerun_request import RerunRequest

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
R = TypeVar("R", bound=Contract)
Time = TypeVar("Time")
"""A queue row's time: Unix seconds (``float``) in the objects the queue hands out (arithmetic on them is
cheap), ISO-8601 UTC text (``str``) in the records a command prints (``Job.record``, ``WorkerInfo.record``)."""


def _records(row: Contract, cls: type[R], times: tuple[str, ...]) -> R:
    """``row`` as ``cls``, its ``times`` as ISO-8601 text (a field the two lack in common fails here)."""
    fields = asdict(row)
    return cls(**(fields | {k: _iso(fields[k]) for k in times}))


class JobFields(Contract, Generic[Time], kw_only=True):
    """One re-run job (a row of the ``jobs`` table)."""

    id: Annotated[int, doc("the job's number")]
    model: Annotated[str, doc("the model")]
    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item")]
    config: Annotated[str, doc("the configuration label")]
    seed: Annotated[int | None, doc("the sampling seed (null: the policy's default)")]
    force: Annotated[bool, doc("true to run even when a stored response answers it")]
    state: Annotated[JobState, doc("queued, running, done, failed or cancelled")]
    created_at: Annotated[Time, doc("when it was queued")]
    started_at: Annotated[Time | None, doc("when a worker claimed it (null: not yet)")]
    finished_at: Annotated[Time | None, doc("when it ended (null: not yet)")]
    worker_id: Annotated[str | None, doc("the worker that claimed it")]
    lease_expires_at: Annotated[Time | None, doc("when the worker's claim lapses unless renewed")]
    attempts: Annotated[int, doc("claims so far")]
    error: Annotated[str | None, doc("why it failed")]
    result_ref: Annotated[str | None, doc("where its response is stored")]


class JobRecord(JobFields[str], kw_only=True):
    """One re-run job as printed (``jobs --cancel ID --json``, ``jobs --json``'s ``jobs``): times ISO-8601 UTC."""


class Job(JobFields[float], kw_only=True):
    """One row of the ``jobs`` table as the queue hands it out: times in Unix seconds."""

    TIMES: ClassVar[tuple[str, ...]] = ("created_at", "started_at", "finished_at", "lease_expires_at")

    @property
    def run(self) -> str:
        """The ``run`` (and ``run_id``) this job's result is stored under: one per job, never "main"."""
        return f"rerun-{self.id}"

    @property
    def request(self) -> RerunRequest:
        """What the job asks (the request it was queued for)."""
        return RerunRequest(self.model, self.benchmark, self.item_id, self.config, self.seed, self.force)

    def record(self) -> JobRecord:
        """The job as its contract prints it."""
        return _records(self, JobRecord, self.TIMES)


class WorkerFields(Contract, Generic[Time], kw_only=True):
    """A worker that sent a heartbeat (a row of the ``workers`` table)."""

    worker_id: Annotated[str, doc("the worker's id")]
    model: Annotated[str, doc("the model it serves")]
    device: Annotated[str | None, doc("its device")]
    current_job: Annotated[int | None, doc("the job it runs (null: idle)")]
    pid: Annotated[int | None, doc("its process id")]
    started_at: Annotated[Time, doc("when it started")]
    seen_at: Annotated[Time, doc("its last heartbeat")]


class WorkerInfo(WorkerFields[float], kw_only=True):
    """One row of the ``workers`` table as the queue hands it out: times in Unix seconds."""

    TIMES: ClassVar[tuple[str, ...]] = ("started_at", "seen_at")

    def record(self) -> WorkerFields[str]:
        """The worker as its contract prints it (``backend.contracts.store.WorkerRow`` adds its age)."""
        return _records(self, WorkerFields[str], self.TIMES)


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat()
