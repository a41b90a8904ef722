"""What a re-run asks: one item of one benchmark, answered by one model under one configuration.

The one request type of the re-run path: the re-run panel, ``trajaudit rerun`` and the intervention
audit build it, ``backend.runtime.rerun.validate`` normalises it, the queue stores it
(``store.queue.Job.request``), the worker runs it and its ``runs`` row records it. A leaf module, so
that analysis (which builds requests) and the queue (which stores them) share it without importing
each other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class RerunRequest:
    """One re-run request; once validated the label is canonical and ``seed`` is None unless the
    policy draws at random (``backend.runtime.rerun.validate``)."""

    model: str  # a registered model
    benchmark: str
    item_id: str
    config: str  # a configuration label
    seed: int | None = None  # a bare ``random`` policy's seed
    force: bool = False  # run even when an identical answer is stored

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON-ready fields, in declaration order (the re-run's ``runs.args``)."""
        return asdict(self)
