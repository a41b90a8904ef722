"""The shareable report's data: ``trajaudit report --format json`` (what the HTML and the tables draw)."""

from typing import Literal, NotRequired, TypedDict

from backend.contracts.common import ScopeHeader
from backend.contracts.explain import ExplainReport
from backend.contracts.policies import CascadeSweep, PredictorRow
from backend.contracts.views import FlowsSummary, Overlap, OverviewNumbers, TaskTypeRow


class ReportMeta(TypedDict):
    """Where the report comes from and how to rebuild it.

    store: the store folder
    store_version: the manifest's version
    command: the command that rebuilds this report
    metrics_command: the ``metrics --json`` command giving the same numbers
    versions: per library (trajaudit, numpy, pandas, duckdb, plotly, scipy, pillow), its version ("not installed")
    generated_at: when (ISO-8601 UTC, seconds; $SOURCE_DATE_EPOCH when set)
    """

    store: str
    store_version: int
    command: str
    metrics_command: str
    versions: dict[str, str]
    generated_at: str


class ReportTaskTypes(TypedDict):
    """The focus model's numbers per task type.

    model: the focus model
    rows: one row per task type (largest first)
    """

    model: str
    rows: list[TaskTypeRow]


class PolicySection(TypedDict):
    """The focus model's cascade frontier beside fixed budgets and the oracle, or why it is not available.

    available: false when the scope has no budget ladder with confidences
    why: why it is not available (only when not)
    model: the focus model (only when available)
    reference: the fixed budgets and the oracle (only when available)
    sweep: the cascade's threshold sweep (only when available)
    """

    available: bool
    why: NotRequired[str]
    model: NotRequired[str]
    reference: NotRequired[list[PredictorRow]]
    sweep: NotRequired[CascadeSweep]


class GalleryTrajectory(TypedDict):
    """One model's answers to a gallery item over the grid (one entry per configuration).

    correct: 1 right, 0 wrong
    answer: the answers (null: none read)
    confidence: the answers' probabilities, 3 decimals (null: not available)
    """

    correct: list[int]
    answer: list[str | None]
    confidence: list[float | None]


class FrameStrip(TypedDict):
    """The thumbnails of the frames one visual configuration saw.

    config: the configuration
    models: whose frames these are
    source: "logged" (given by the response's source), "reconstructed" (by the named harness sampler) or "unknown"
    n_frames: frames the configuration saw (null: unknown)
    shown: the frame indices shown (at most 8, evenly spread)
    timestamps: their times in seconds (null without the video)
    jpeg_base64: their JPEG thumbnails, base64 (empty without the video)
    note: how the indices are known, or why they are not
    """

    config: str
    models: list[str]
    source: Literal["logged", "reconstructed", "unknown"]
    n_frames: int | None
    shown: list[int]
    timestamps: list[float] | None
    jpeg_base64: list[str]
    note: str


class GalleryNote(TypedDict):
    """An annotation on a gallery item.

    author: who wrote it
    tag: its tag
    model: the model it is about (null: every model)
    note: free text (null: none)
    """

    author: str | None
    tag: str | None
    model: str | None
    note: str | None


class GalleryItem(TypedDict):
    """One of the most informative items, ready to draw.

    benchmark: the benchmark
    item_id: the item's id
    task_type: the task type (null: none)
    duration: the duration category (null: none)
    question: the question text (null: none)
    options: the option texts
    target: the right answer (null: none)
    reasons: why it was picked (terminal regression, visually confused, disagreement)
    trajectories: per model, its answers over the grid
    video_problem: why no frames are shown (null: the video was found)
    frames: one strip per visual configuration of the grid
    annotations: its live annotations, oldest first
    """

    benchmark: str
    item_id: str
    task_type: str | None
    duration: str | None
    question: str | None
    options: list[str]
    target: str | None
    reasons: list[str]
    trajectories: dict[str, GalleryTrajectory]
    video_problem: str | None
    frames: list[FrameStrip]
    annotations: list[GalleryNote]


class ReportData(TypedDict):
    """``trajaudit report --format json`` (``backend.report.data.report_data``): everything the report shows.

    meta: where it comes from and how to rebuild it
    scope: the scope these numbers belong to
    colours: per model of the scope, its colour (#rrggbb)
    overview: the headline numbers (as in ``metrics --json``, without scope and task types)
    task_types: the focus model's numbers per task type
    flows: the focus model's Sankey (as in ``flows --json``, without scope); null with one configuration
    overlap: confused-item overlap (null with one model)
    policy: the focus model's cascade frontier, or why not
    explain: the focus model's largest harmed consecutive flow, explained (as in ``explain --json``; null: none harmed)
    gallery: the most informative items, at most --gallery
    """

    meta: ReportMeta
    scope: ScopeHeader
    colours: dict[str, str]
    overview: OverviewNumbers
    task_types: ReportTaskTypes
    flows: FlowsSummary | None
    overlap: Overlap | None
    policy: PolicySection
    explain: ExplainReport | None
    gallery: list[GalleryItem]
