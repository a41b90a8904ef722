"""The store, its queue, registry and annotations: ``trajaudit info``, ``jobs``, ``check``, ``repair``,
``models`` and ``annotate`` with ``--json``.

A record the store hands out is its own contract, defined once in ``store/`` (which cannot import
``backend/``): ``check``'s ``store.health.Report``, ``repair``'s ``store.health.RepairReport``, a registered
model's ``store.registry.ModelSpec`` (``catalog.REPORTS`` names them: importing them here would load the
store's Parquet plumbing into every reader of this module) and a queue job's ``store.jobs.JobRecord``
(light, re-exported here). ``StoreContents`` is what ``backend.scope.matrix.available`` builds (and keeps in
the store's cache folder); ``info --json`` prints it as ``InfoReport``."""

from __future__ import annotations

from typing import Annotated, Literal

from backend.contracts.base import Contract, doc
from store.jobs import JobRecord, JobState, WorkerFields

__all__ = ["JobRecord", "JobState"]  # the queue's record, printed as it is


class StoreContents(Contract, kw_only=True):
    """What the store holds (``backend.scope.matrix.available``); main runs only unless said."""

    models: Annotated[list[str], doc("models with main-run responses")]
    benchmarks: Annotated[list[str], doc("benchmarks with main-run responses")]
    configs: Annotated[
        dict[str, dict[str, list[str]]], doc("per model and benchmark, its configurations, cheapest first")
    ]
    coverage: Annotated[
        dict[str, dict[str, dict[str, int]]],
        doc("per model, benchmark and configuration, the items with a response"),
    ]
    model_items: Annotated[dict[str, dict[str, int]], doc("per model and benchmark, the items with some response")]
    reruns: Annotated[
        dict[str, dict[str, dict[str, int]]],
        doc("live re-runs apart: per model, benchmark and configuration, the items re-run"),
    ]
    task_types: Annotated[list[str], doc("the task types of the items")]
    durations: Annotated[list[str], doc("the duration categories of the items")]
    domains: Annotated[list[str], doc("the domains of the items")]
    n_responses: Annotated[int, doc("main-run responses")]
    n_rerun_responses: Annotated[int, doc("live re-run responses")]
    n_items: Annotated[int, doc("items")]


class InfoReport(StoreContents, kw_only=True):
    """``trajaudit info --json`` (the sidebar's choices come from the same contents)."""

    store_version: Annotated[int, doc("the manifest's version")]
    store: Annotated[str, doc("the store folder")]
    frames: Annotated[
        dict[str, dict[str, dict[str, dict[str, int]]]],
        doc(
            "per model, benchmark and visual configuration, main-run responses per frames source "
            '("logged", "reconstructed:<sampler>", "unknown")'
        ),
    ]


class JobRow(JobRecord, kw_only=True):
    """A job with its timings (the Workers page's table)."""

    waited_s: Annotated[float, doc("seconds queued until claimed (or until now)")]
    ran_s: Annotated[float | None, doc("seconds since claimed until it ended (or until now; null: not claimed)")]


class WorkerRow(WorkerFields[str], kw_only=True):
    """A worker that sent a heartbeat recently (``store.queue.WorkerInfo``'s fields, times ISO-8601 UTC)."""

    age_s: Annotated[float, doc("seconds since that heartbeat")]


class RemoteActor(Contract, kw_only=True):
    """A dispatcher's actor on a Ray node (``trajaudit dispatch``), listed while its heartbeat is current."""

    worker_id: Annotated[str, doc("its id in the queue (its jobs' worker_id)")]
    model: Annotated[str, doc("the model it serves")]
    dispatcher: Annotated[str, doc("the dispatcher that started it")]
    node_ip: Annotated[str | None, doc("the node's address (null: not placed yet)")]
    hostname: Annotated[str | None, doc("the node's host name (null: not placed yet)")]
    pid: Annotated[int | None, doc("its process id on that node (null: not placed yet)")]
    device: Annotated[str | None, doc("cuda or cpu (null: loading)")]
    gpu: Annotated[str | None, doc("the GPU's name (null: it runs on a CPU)")]
    gpu_ids: Annotated[list[str], doc("the GPUs Ray gave it")]
    resources: Annotated[dict[str, float], doc("the Ray resources it asked for")]
    state: Annotated[
        Literal["loading", "ready", "dead"],
        doc("loading, ready or dead (a replacement is started for a dead one)"),
    ]
    waiting: Annotated[
        str | None,
        doc("why it is not placed on a node yet, once that has lasted a while (null: placed, or not yet said)"),
    ]
    jobs_done: Annotated[int, doc("its jobs whose answer it returned and the dispatcher stored")]
    jobs_failed: Annotated[int, doc("its jobs that failed")]
    started_at: Annotated[float, doc("when the dispatcher started it (Unix seconds)")]


class StartedBy(Contract, kw_only=True):
    """Who started a local worker process (null fields in records of older versions)."""

    parent_pid: Annotated[int | None, doc("the process whose exit stops the worker")]
    user: Annotated[str | None, doc("the login name")]
    started_at: Annotated[float | None, doc("when (Unix seconds)")]
    idle_timeout_s: Annotated[float | None, doc("idle seconds after which it stops")]


class LocalWorker(Contract, kw_only=True):
    """A worker process this store started (``backend.runtime.worker_pool.local_worker``)."""

    model: Annotated[str, doc("the model it serves")]
    log: Annotated[str, doc("its log file")]
    pid: Annotated[int | None, doc("its process id (null: none)")]
    worker_id: Annotated[str | None, doc("its id once online")]
    device: Annotated[str | None, doc("its device")]
    log_tail: Annotated[list[str], doc("the log's last lines when it exited")]
    reason: Annotated[
        str | None,
        doc("why it exited, in one line (its last error line, else the log's last line; null unless exited)"),
    ]
    started_by: Annotated[StartedBy | None, doc("who started it (null: this store started none)")]
    state: Annotated[
        Literal["online", "starting", "exited", "none"],
        doc("online, starting (loading the model), exited or none"),
    ]


class LocalWorkerStart(LocalWorker, kw_only=True):
    """A local worker asked for by a re-run (``backend.runtime.worker_pool.ensure_local_worker``)."""

    started: Annotated[bool, doc("true when this request started it (its state is then starting)")]


class JobsOverview(Contract, kw_only=True):
    """The Workers page and ``trajaudit jobs --json``: the queue at a glance."""

    counts: Annotated[dict[str, int], doc("jobs per state")]
    jobs: Annotated[list[JobRow], doc("the newest jobs (at most --limit)")]
    workers: Annotated[list[WorkerRow], doc("workers online")]
    local: Annotated[list[LocalWorker], doc("worker processes this store started")]
    remote: Annotated[
        list[RemoteActor],
        doc("remote actors of the dispatchers (trajaudit dispatch) with a current heartbeat"),
    ]


class Annotation(Contract, kw_only=True):
    """One annotation (``annotate add|delete --json`` print it, ``annotate list --json`` the live ones, newest first)."""

    annotation_id: Annotated[str, doc("its id")]
    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item")]
    model: Annotated[str | None, doc("the model it is about (null: every model)")]
    tag: Annotated[str, doc("its tag (``annotate tags``)")]
    note: Annotated[str | None, doc("free text (null: none)")]
    author: Annotated[str, doc("who wrote it")]
    created_at: Annotated[str, doc("when (ISO-8601 UTC)")]


class VideoExample(Contract, kw_only=True):
    """An item whose video is not available (``backend.videos``)."""

    item_id: Annotated[str, doc("the item")]
    path: Annotated[str | None, doc("its video file, relative to the video root (null: not linked)")]


class VideoLinkExamples(Contract, kw_only=True):
    """A few items of each problem a link found."""

    missing: Annotated[list[VideoExample], doc("items whose file is not there")]
    unreadable: Annotated[list[VideoExample], doc("items whose file is not a readable video")]


class VideoLinkReport(Contract, kw_only=True):
    """``trajaudit videos link --json`` (``backend.videos.link.link``): what a link stored."""

    benchmark: Annotated[str, doc("the benchmark linked")]
    layout: Annotated[str, doc("the published layout read, or template / paths")]
    dataset: Annotated[str, doc("the dataset folder (resolved)")]
    video_root: Annotated[str, doc("the video root the paths are relative to")]
    items: Annotated[int, doc("items the link maps to a file")]
    files: Annotated[int, doc("distinct files among them (each probed once)")]
    linked: Annotated[int, doc("items whose file was found and readable")]
    missing: Annotated[int, doc("items whose file is not there")]
    unreadable: Annotated[int, doc("items whose file is not a readable video")]
    stored_items: Annotated[int, doc("items the store holds for the benchmark")]
    matched_items: Annotated[int, doc("stored items the link covers")]
    skipped_links: Annotated[
        int,
        doc("mapped files skipped as a symlink loop or a link that cannot be resolved (their items unlinked)"),
    ]
    skipped_examples: Annotated[list[VideoExample], doc("a few of the items skipped so")]
    examples: Annotated[VideoLinkExamples, doc("a few items of each problem")]
    store_version: Annotated[int, doc("the store's version after the write")]


class VideoCheckExamples(VideoLinkExamples, kw_only=True):
    """A few items of each state that is not linked."""

    unlinked: Annotated[list[VideoExample], doc("stored items the catalog has no file for (path null)")]


class BenchmarkVideos(Contract, kw_only=True):
    """One benchmark's video coverage: every item of the store and the catalog counted once."""

    benchmark: Annotated[str, doc("the benchmark")]
    items: Annotated[int, doc("items in the store or the catalog")]
    linked: Annotated[int, doc("items whose file is there and was readable when linked")]
    missing: Annotated[int, doc("items whose file is not there (now or when linked)")]
    unreadable: Annotated[int, doc("items whose file is not a readable video")]
    unlinked: Annotated[int, doc("stored items with no catalog row")]
    examples: Annotated[VideoCheckExamples, doc("a few items of each state that is not linked")]


class VideoCheckReport(Contract, kw_only=True):
    """``trajaudit videos check --json`` (``backend.videos.check.check``)."""

    video_root: Annotated[str, doc("the video root paths are relative to")]
    benchmarks: Annotated[list[BenchmarkVideos], doc("per benchmark (name order), its coverage")]


class CompactReport(Contract, kw_only=True):
    """``trajaudit compact --json``: what a compaction merged, and the store version it published."""

    merged: Annotated[
        dict[str, int],
        doc("per table merged, the number of its files merged into one (1: a file rewritten in smaller row groups)"),
    ]
    store_version: Annotated[int, doc("the store's version after the compaction")]
