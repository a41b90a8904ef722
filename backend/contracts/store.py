"""The store, its queue, registry and annotations: ``trajaudit info``, ``jobs``, ``check``, ``repair``,
``models`` and ``annotate`` with ``--json``."""

from typing import Literal, TypedDict

JobState = Literal["queued", "running", "done", "failed", "cancelled"]


class StoreContents(TypedDict):
    """What the store holds (``backend.scope.matrix.available``); main runs only unless said.

    models: models with main-run responses
    benchmarks: benchmarks with main-run responses
    configs: per model and benchmark, its configurations, cheapest first
    coverage: per model, benchmark and configuration, the items with a response
    model_items: per model and benchmark, the items with some response
    reruns: live re-runs apart: per model, benchmark and configuration, the items re-run
    task_types: the task types of the items
    durations: the duration categories of the items
    domains: the domains of the items
    n_responses: main-run responses
    n_rerun_responses: live re-run responses
    n_items: items
    """

    models: list[str]
    benchmarks: list[str]
    configs: dict[str, dict[str, list[str]]]
    coverage: dict[str, dict[str, dict[str, int]]]
    model_items: dict[str, dict[str, int]]
    reruns: dict[str, dict[str, dict[str, int]]]
    task_types: list[str]
    durations: list[str]
    domains: list[str]
    n_responses: int
    n_rerun_responses: int
    n_items: int


class InfoReport(StoreContents):
    """``trajaudit info --json`` (the sidebar's choices come from the same contents).

    store_version: the manifest's version
    store: the store folder
    frames: per model, benchmark and visual configuration, main-run responses per frames source ("logged", "reconstructed:<sampler>", "unknown")
    """

    store_version: int
    store: str
    frames: dict[str, dict[str, dict[str, dict[str, int]]]]


class JobRecord(TypedDict):
    """One re-run job (``store.queue.Job``); times are ISO-8601 UTC; ``jobs --cancel ID --json`` prints one.

    id: the job's number
    model: the model
    benchmark: the benchmark
    item_id: the item
    config: the configuration label
    seed: the sampling seed (null: the policy's default)
    force: true to run even when a stored response answers it
    state: queued, running, done, failed or cancelled
    created_at: when it was queued
    started_at: when a worker claimed it (null: not yet)
    finished_at: when it ended (null: not yet)
    worker_id: the worker that claimed it
    lease_expires_at: when the worker's claim lapses unless renewed
    attempts: claims so far
    error: why it failed
    result_ref: where its response is stored
    """

    id: int
    model: str
    benchmark: str
    item_id: str
    config: str
    seed: int | None
    force: bool
    state: JobState
    created_at: str
    started_at: str | None
    finished_at: str | None
    worker_id: str | None
    lease_expires_at: str | None
    attempts: int
    error: str | None
    result_ref: str | None


class JobRow(JobRecord):
    """A job with its timings (the Workers page's table).

    waited_s: seconds queued until claimed (or until now)
    ran_s: seconds since claimed until it ended (or until now; null: not claimed)
    """

    waited_s: float
    ran_s: float | None


class WorkerRow(TypedDict):
    """A worker that sent a heartbeat recently.

    worker_id: the worker's id
    model: the model it serves
    device: its device
    current_job: the job it runs (null: idle)
    pid: its process id
    started_at: when it started (ISO-8601 UTC)
    seen_at: its last heartbeat (ISO-8601 UTC)
    age_s: seconds since that heartbeat
    """

    worker_id: str
    model: str
    device: str | None
    current_job: int | None
    pid: int | None
    started_at: str
    seen_at: str
    age_s: float


class RemoteActor(TypedDict):
    """A dispatcher's actor on a Ray node (``trajaudit dispatch``), listed while its heartbeat is current.

    worker_id: its id in the queue (its jobs' worker_id)
    model: the model it serves
    dispatcher: the dispatcher that started it
    node_ip: the node's address (null: not placed yet)
    hostname: the node's host name (null: not placed yet)
    pid: its process id on that node (null: not placed yet)
    device: cuda or cpu (null: loading)
    gpu: the GPU's name (null: it runs on a CPU)
    gpu_ids: the GPUs Ray gave it
    resources: the Ray resources it asked for
    state: loading, ready or dead (a replacement is started for a dead one)
    waiting: why it is not placed on a node yet, once that has lasted a while (null: placed, or not yet said)
    jobs_done: its jobs whose answer it returned and the dispatcher stored
    jobs_failed: its jobs that failed
    started_at: when the dispatcher started it (Unix seconds)
    """

    worker_id: str
    model: str
    dispatcher: str
    node_ip: str | None
    hostname: str | None
    pid: int | None
    device: str | None
    gpu: str | None
    gpu_ids: list[str]
    resources: dict[str, float]
    state: Literal["loading", "ready", "dead"]
    waiting: str | None
    jobs_done: int
    jobs_failed: int
    started_at: float


class StartedBy(TypedDict):
    """Who started a local worker process (null fields in records of older versions).

    parent_pid: the process whose exit stops the worker
    user: the login name
    started_at: when (Unix seconds)
    idle_timeout_s: idle seconds after which it stops
    """

    parent_pid: int | None
    user: str | None
    started_at: float | None
    idle_timeout_s: float | None


class LocalWorker(TypedDict):
    """A worker process this store started (``backend.runtime.worker_pool.local_worker``).

    model: the model it serves
    log: its log file
    pid: its process id (null: none)
    worker_id: its id once online
    device: its device
    log_tail: the log's last lines when it exited
    reason: why it exited, in one line (its last error line, else the log's last line; null unless exited)
    started_by: who started it (null: this store started none)
    state: online, starting (loading the model), exited or none
    """

    model: str
    log: str
    pid: int | None
    worker_id: str | None
    device: str | None
    log_tail: list[str]
    reason: str | None
    started_by: StartedBy | None
    state: Literal["online", "starting", "exited", "none"]


class JobsOverview(TypedDict):
    """The Workers page and ``trajaudit jobs --json``: the queue at a glance.

    counts: jobs per state
    jobs: the newest jobs (at most --limit)
    workers: workers online
    local: worker processes this store started
    remote: remote actors of the dispatchers (trajaudit dispatch) with a current heartbeat
    """

    counts: dict[str, int]
    jobs: list[JobRow]
    workers: list[WorkerRow]
    local: list[LocalWorker]
    remote: list[RemoteActor]


class StoreProblem(TypedDict):
    """One thing wrong with the store (``store.health.Problem``).

    file: the file, relative to the store
    table: its table (null: not a table's file)
    problem: what is wrong
    rows: the rows it held, where recorded
    """

    file: str
    table: str | None
    problem: str
    rows: int | None


class CheckReport(TypedDict):
    """``trajaudit check --json`` (``store.health.Report``).

    store: the store folder
    sound: true when nothing is wrong
    version: the manifest's version (null: unreadable)
    files: files the manifest lists
    rows: per table, rows recorded
    problems: what is wrong
    orphans: files an interrupted write left (harmless)
    """

    store: str
    sound: bool
    version: int | None
    files: int
    rows: dict[str, int]
    problems: list[StoreProblem]
    orphans: list[str]


class RepairReport(TypedDict):
    """``trajaudit repair --json`` (``store.health.RepairReport``).

    store: the store folder
    changed: true when something was repaired
    rebuilt_manifest: true when the manifest was rebuilt from the files on disk
    version: the manifest's version afterwards
    dropped: files dropped from the manifest, and why
    responses_lost: responses in the dropped files
    responses_lost_unknown: dropped response files whose row count was never recorded
    moved_to_damaged: where the dropped files were moved
    removed_orphans: temporary files an interrupted write left, and links out of the store, removed
    taken: files a rebuilt manifest lists
    restored_from: the write-log entry a lost or corrupt manifest was restored from (null: not restored)
    rolled_forward: committed writes the manifest did not show yet, published
    kept_rows: rows each table holds afterwards
    set_aside: files of writes that never committed, moved to damaged/, with their rows
    retired_recorded: retired files found unrecorded, now recorded for deletion after the grace period
    """

    store: str
    changed: bool
    rebuilt_manifest: bool
    version: int | None
    dropped: list[StoreProblem]
    responses_lost: int
    responses_lost_unknown: int
    moved_to_damaged: list[str]
    removed_orphans: list[str]
    taken: list[str]
    restored_from: str | None
    rolled_forward: int
    kept_rows: dict[str, int]
    set_aside: list[StoreProblem]
    retired_recorded: list[str]


class ModelEntry(TypedDict):
    """A registered model (``store.registry.ModelSpec``): ``models list --json`` prints each, ``models add|remove|demo`` the one.

    name: the name workers and re-runs use
    family: the adapter family (qwen2_5_vl, ...)
    path: the local checkpoint folder (absolute, or relative to the store)
    dtype: auto or a torch dtype name
    device: auto, cuda or cpu
    max_frames: the largest frame budget accepted
    default_pixels: pixels per frame for labels without @<n>k (null: the processor's default)
    note: free text
    """

    name: str
    family: str
    path: str
    dtype: str
    device: str
    max_frames: int
    default_pixels: int | None
    note: str


class Annotation(TypedDict):
    """One annotation (``annotate add|delete --json`` print it, ``annotate list --json`` the live ones, newest first).

    annotation_id: its id
    benchmark: the benchmark
    item_id: the item
    model: the model it is about (null: every model)
    tag: its tag (``annotate tags``)
    note: free text (null: none)
    author: who wrote it
    created_at: when (ISO-8601 UTC)
    """

    annotation_id: str
    benchmark: str
    item_id: str
    model: str | None
    tag: str
    note: str | None
    author: str
    created_at: str


class VideoExample(TypedDict):
    """An item whose video is not available (``backend.videos``).

    item_id: the item
    path: its video file, relative to the video root (null: not linked)
    """

    item_id: str
    path: str | None


class VideoLinkExamples(TypedDict):
    """A few items of each problem a link found.

    missing: items whose file is not there
    unreadable: items whose file is not a readable video
    """

    missing: list[VideoExample]
    unreadable: list[VideoExample]


class VideoLinkReport(TypedDict):
    """``trajaudit videos link --json`` (``backend.videos.link.link``): what a link stored.

    benchmark: the benchmark linked
    layout: the published layout read, or template / paths
    dataset: the dataset folder (resolved)
    video_root: the video root the paths are relative to
    items: items the link maps to a file
    files: distinct files among them (each probed once)
    linked: items whose file was found and readable
    missing: items whose file is not there
    unreadable: items whose file is not a readable video
    stored_items: items the store holds for the benchmark
    matched_items: stored items the link covers
    skipped_links: mapped files skipped as a symlink loop or a link that cannot be resolved (their items unlinked)
    skipped_examples: a few of the items skipped so
    examples: a few items of each problem
    store_version: the store's version after the write
    """

    benchmark: str
    layout: str
    dataset: str
    video_root: str
    items: int
    files: int
    linked: int
    missing: int
    unreadable: int
    stored_items: int
    matched_items: int
    skipped_links: int
    skipped_examples: list[VideoExample]
    examples: VideoLinkExamples
    store_version: int


class VideoCheckExamples(VideoLinkExamples):
    """A few items of each state that is not linked.

    unlinked: stored items the catalog has no file for (path null)
    """

    unlinked: list[VideoExample]


class BenchmarkVideos(TypedDict):
    """One benchmark's video coverage: every item of the store and the catalog counted once.

    benchmark: the benchmark
    items: items in the store or the catalog
    linked: items whose file is there and was readable when linked
    missing: items whose file is not there (now or when linked)
    unreadable: items whose file is not a readable video
    unlinked: stored items with no catalog row
    examples: a few items of each state that is not linked
    """

    benchmark: str
    items: int
    linked: int
    missing: int
    unreadable: int
    unlinked: int
    examples: VideoCheckExamples


class VideoCheckReport(TypedDict):
    """``trajaudit videos check --json`` (``backend.videos.check.check``).

    video_root: the video root paths are relative to
    benchmarks: per benchmark (name order), its coverage
    """

    video_root: str
    benchmarks: list[BenchmarkVideos]
