"""The shareable report's data: ``trajaudit report --format json`` (what the HTML and the tables draw)."""

from __future__ import annotations

from typing import Annotated

from backend.contracts.base import UNSET, Contract, UnsetType, doc
from backend.contracts.common import ScopeHeader
from backend.contracts.explain import ExplainReport
from backend.contracts.inspector import FramesSeen
from backend.contracts.policies import CascadeSweep, PredictorRow
from backend.contracts.views import FlowsSummary, Overlap, OverviewNumbers, TaskTypeRow


class ReportMeta(Contract, kw_only=True):
    """Where the report comes from and how to rebuild it."""

    store: Annotated[str, doc("the store folder")]
    store_version: Annotated[int, doc("the manifest's version")]
    command: Annotated[str, doc("the command that rebuilds this report")]
    metrics_command: Annotated[str, doc("the ``metrics --json`` command giving the same numbers")]
    versions: Annotated[
        dict[str, str],
        doc('per library (trajaudit, numpy, pandas, duckdb, plotly, scipy, pillow), its version ("not installed")'),
    ]
    generated_at: Annotated[str, doc("when (ISO-8601 UTC, seconds; $SOURCE_DATE_EPOCH when set)")]


class ReportTaskTypes(Contract, kw_only=True):
    """The focus model's numbers per task type."""

    model: Annotated[str, doc("the focus model")]
    rows: Annotated[list[TaskTypeRow], doc("one row per task type (largest first)")]


class PolicySection(Contract, kw_only=True):
    """The focus model's cascade frontier beside fixed budgets and the oracle, or why it is not available."""

    available: Annotated[bool, doc("false when the scope has no budget ladder with confidences")]
    why: Annotated[str | UnsetType, doc("why it is not available (only when not)")] = UNSET
    model: Annotated[str | UnsetType, doc("the focus model (only when available)")] = UNSET
    reference: Annotated[
        list[PredictorRow] | UnsetType, doc("the fixed budgets and the oracle (only when available)")
    ] = UNSET
    sweep: Annotated[CascadeSweep | UnsetType, doc("the cascade's threshold sweep (only when available)")] = UNSET


class GalleryTrajectory(Contract, kw_only=True):
    """One model's answers to a gallery item over the grid (one entry per configuration)."""

    correct: Annotated[list[int], doc("1 right, 0 wrong")]
    answer: Annotated[list[str | None], doc("the answers (null: none read)")]
    confidence: Annotated[list[float | None], doc("the answers' probabilities, 3 decimals (null: not available)")]


class FrameStrip(FramesSeen, kw_only=True):
    """The thumbnails of the frames one visual configuration saw."""

    n_frames: Annotated[int | None, doc("frames the configuration saw (null: unknown)")]
    shown: Annotated[list[int], doc("the frame indices shown (at most 8, evenly spread)")]
    timestamps: Annotated[list[float] | None, doc("their times in seconds (null without the video)")]
    jpeg_base64: Annotated[list[str], doc("their JPEG thumbnails, base64 (empty without the video)")]
    note: Annotated[str, doc("how the indices are known, or why they are not")]


class GalleryNote(Contract, kw_only=True):
    """An annotation on a gallery item."""

    author: Annotated[str | None, doc("who wrote it")]
    tag: Annotated[str | None, doc("its tag")]
    model: Annotated[str | None, doc("the model it is about (null: every model)")]
    note: Annotated[str | None, doc("free text (null: none)")]


class GalleryItem(Contract, kw_only=True):
    """One of the most informative items, ready to draw."""

    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item's id")]
    task_type: Annotated[str | None, doc("the task type (null: none)")]
    duration: Annotated[str | None, doc("the duration category (null: none)")]
    question: Annotated[str | None, doc("the question text (null: none)")]
    options: Annotated[list[str], doc("the option texts")]
    target: Annotated[str | None, doc("the right answer (null: none)")]
    reasons: Annotated[list[str], doc("why it was picked (terminal regression, visually confused, disagreement)")]
    trajectories: Annotated[dict[str, GalleryTrajectory], doc("per model, its answers over the grid")]
    video_problem: Annotated[str | None, doc("why no frames are shown (null: the video was found)")]
    frames: Annotated[list[FrameStrip], doc("one strip per visual configuration of the grid")]
    annotations: Annotated[list[GalleryNote], doc("its live annotations, oldest first")]


class ReportData(Contract, kw_only=True):
    """``trajaudit report --format json`` (``backend.report.data.report_data``): everything the report shows."""

    meta: Annotated[ReportMeta, doc("where it comes from and how to rebuild it")]
    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]
    colours: Annotated[dict[str, str], doc("per model of the scope, its colour (#rrggbb)")]
    overview: Annotated[
        OverviewNumbers, doc("the headline numbers (as in ``metrics --json``, without scope and task types)")
    ]
    task_types: Annotated[ReportTaskTypes, doc("the focus model's numbers per task type")]
    flows: Annotated[
        FlowsSummary | None,
        doc("the focus model's Sankey (as in ``flows --json``, without scope); null with one configuration"),
    ]
    overlap: Annotated[Overlap | None, doc("confused-item overlap (null with one model)")]
    policy: Annotated[PolicySection, doc("the focus model's cascade frontier, or why not")]
    explain: Annotated[
        ExplainReport | None,
        doc(
            "the focus model's largest harmed consecutive flow, explained (as in ``explain --json``; null: none harmed)"
        ),
    ]
    gallery: Annotated[list[GalleryItem], doc("the most informative items, at most --gallery")]
