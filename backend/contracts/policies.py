"""Adaptive budget policies (the Policies page): ``trajaudit cascade`` and ``trajaudit predictor``."""

from __future__ import annotations

from typing import Annotated, Literal

from backend.contracts.base import UNSET, Contract, UnsetType, doc
from backend.contracts.common import Interval, ScopeHeader

Policy = Literal["fixed", "oracle", "predictor", "cascade"]


class CascadePoint(Contract, kw_only=True):
    """The confidence cascade at one threshold, on the items with confidences at every rung."""

    threshold: Annotated[float, doc("answer at the first rung whose confidence reaches it, else at the top")]
    n_items: Annotated[int, doc("items with confidences at every rung")]
    accuracy: Annotated[float, doc("accuracy of the answers taken")]
    mean_frames_shared: Annotated[float, doc("mean frames with frame sharing (the rung stopped at)")]
    mean_frames_unshared: Annotated[float, doc("mean frames without sharing (every rung visited)")]
    cost_vs_top_shared: Annotated[
        float | None,
        doc("mean_frames_shared over the top rung's frames (null: a top of 0 frames)"),
    ]
    cost_vs_top_unshared: Annotated[
        float | None,
        doc("mean_frames_unshared over the top rung's frames (null: a top of 0 frames)"),
    ]


class CascadeAtThreshold(CascadePoint, kw_only=True):
    """``trajaudit cascade --threshold T --json`` (``backend.analysis.cascade.evaluate``)."""

    ladder: Annotated[list[str], doc("the budgets, cheapest first")]
    n_excluded: Annotated[int, doc("items left out for lacking a response at some rung")]
    n_without_confidence: Annotated[int, doc("items left out for lacking a confidence at some rung")]
    denominator: Annotated[
        str,
        doc('the items every policy is compared on, in words ("on 136 items, those with a confidence ...")'),
    ]
    accuracy_ci: Annotated[
        Interval | UnsetType,
        doc("95% bootstrap interval of the accuracy (absent with --bootstrap 0)"),
    ] = UNSET


class CascadeMatch(CascadePoint, kw_only=True):
    """The cheapest frontier point as accurate as the fixed top rung, with paired intervals."""

    saving: Annotated[float | None, doc("1 - cost_vs_top_shared (null: a top of 0 frames)")]
    accuracy_ci: Annotated[
        Interval | UnsetType,
        doc("95% interval of its accuracy (absent with --bootstrap 0)"),
    ] = UNSET
    delta_vs_top_ci: Annotated[
        Interval | UnsetType,
        doc("95% interval of its accuracy minus the top rung's (absent with --bootstrap 0)"),
    ] = UNSET
    saving_ci: Annotated[Interval | UnsetType, doc("95% interval of its saving (absent with --bootstrap 0)")] = UNSET


class FixedBudget(Contract, kw_only=True):
    """One rung answered at for every item."""

    config: Annotated[str, doc("the rung")]
    accuracy: Annotated[float | None, doc("its accuracy on the ladder's items (null without items)")]
    frames: Annotated[int, doc("its frames")]
    cost_vs_top: Annotated[float | None, doc("frames over the top rung's (null: a top of 0 frames)")]


class CascadeSweep(Contract, kw_only=True):
    """The cascade's frontier over thresholds (``backend.analysis.cascade.sweep``)."""

    ladder: Annotated[list[str], doc("the budgets, cheapest first")]
    n_items: Annotated[int, doc("items with confidences at every rung")]
    n_excluded: Annotated[int, doc("items left out for lacking a response at some rung")]
    n_without_confidence: Annotated[int, doc("items left out for lacking a confidence at some rung")]
    denominator: Annotated[
        str,
        doc("the items every policy is compared on, in words (the fixed budgets and the cascade alike)"),
    ]
    top_accuracy: Annotated[float, doc("the fixed top rung's accuracy on those items")]
    fixed: Annotated[list[FixedBudget], doc("each rung as a fixed budget")]
    frontier: Annotated[list[CascadePoint], doc("one point per threshold")]
    matching: Annotated[
        CascadeMatch | None,
        doc("the cheapest point matching the top's accuracy (null when none does)"),
    ]


class CascadeThresholdReport(CascadeAtThreshold, kw_only=True):
    """``trajaudit cascade --threshold T --json`` and the Policies page's chosen threshold."""

    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]


class CascadeSweepReport(CascadeSweep, kw_only=True):
    """``trajaudit cascade --sweep --json`` and the Policies page's frontier."""

    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]


class PredictorRow(Contract, kw_only=True):
    """One policy on the accuracy-vs-frames frontier."""

    policy: Annotated[Policy, doc("fixed, oracle, predictor or cascade")]
    label: Annotated[str, doc('the rung, "cheapest correct", "argmax", "q=<level>" or "t=<threshold>"')]
    n_items: Annotated[int, doc("items it is evaluated on")]
    accuracy: Annotated[float, doc("its accuracy")]
    mean_frames: Annotated[float, doc("mean frames it spends (shared cost for the cascade)")]
    cost_vs_top: Annotated[float | None, doc("mean_frames over the top rung's frames (null: a top of 0 frames)")]


class Predictor(Contract, kw_only=True):
    """The cross-validated budget predictor (``backend.analysis.predictor.report``)."""

    model: Annotated[str, doc("the model")]
    ladder: Annotated[list[str], doc("the budgets, cheapest first")]
    n_items: Annotated[
        int,
        doc(
            "items every row is scored on: those with a confidence at every rung where any has one (the cascade's), else every item with a response at every rung"
        ),
    ]
    n_excluded: Annotated[int, doc("items left out for lacking a response at some rung")]
    n_without_confidence: Annotated[
        int,
        doc("items with a response at every rung left out for lacking a confidence at some rung"),
    ]
    denominator: Annotated[str, doc("n_items in words, as the page's chart states it")]
    folds: Annotated[int, doc("cross-validation folds (grouped by video)")]
    seed: Annotated[int, doc("the folds' seed")]
    n_groups: Annotated[int, doc("groups the folds split (videos, and items without one)")]
    n_videos: Annotated[int, doc("of those, groups that are videos")]
    target_share: Annotated[
        dict[str, float],
        doc("per rung, the share of items whose cheapest sufficient budget it is"),
    ]
    never_correct_share: Annotated[float, doc("share of items right at no rung")]
    target_hit_rate: Annotated[
        float,
        doc("share of items whose predicted rung (argmax) is their cheapest sufficient one"),
    ]
    frontier: Annotated[list[PredictorRow], doc("fixed budgets, the oracle, the predictor and the cascade")]
    cascade_note: Annotated[str | None, doc("why no cascade rows are given (null when they are)")]


class PredictorReport(Predictor, kw_only=True):
    """``trajaudit predictor --json`` and the Policies page's predictor."""

    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]
