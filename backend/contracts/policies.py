"""Adaptive budget policies (the Policies page): ``trajaudit cascade`` and ``trajaudit predictor``."""

from typing import Literal, NotRequired, TypedDict

from backend.contracts.common import Interval, ScopeHeader

Policy = Literal["fixed", "oracle", "predictor", "cascade"]


class CascadePoint(TypedDict):
    """The confidence cascade at one threshold, on the items with confidences at every rung.

    threshold: answer at the first rung whose confidence reaches it, else at the top
    n_items: items with confidences at every rung
    accuracy: accuracy of the answers taken
    mean_frames_shared: mean frames with frame sharing (the rung stopped at)
    mean_frames_unshared: mean frames without sharing (every rung visited)
    cost_vs_top_shared: mean_frames_shared over the top rung's frames (null: a top of 0 frames)
    cost_vs_top_unshared: mean_frames_unshared over the top rung's frames (null: a top of 0 frames)
    """

    threshold: float
    n_items: int
    accuracy: float
    mean_frames_shared: float
    mean_frames_unshared: float
    cost_vs_top_shared: float | None
    cost_vs_top_unshared: float | None


class CascadeAtThreshold(CascadePoint):
    """``trajaudit cascade --threshold T --json`` (``backend.analysis.cascade.evaluate``).

    ladder: the budgets, cheapest first
    n_excluded: items left out for lacking a response at some rung
    n_without_confidence: items left out for lacking a confidence at some rung
    denominator: the items every policy is compared on, in words ("on 136 items, those with a confidence ...")
    accuracy_ci: 95% bootstrap interval of the accuracy (absent with --bootstrap 0)
    """

    ladder: list[str]
    n_excluded: int
    n_without_confidence: int
    denominator: str
    accuracy_ci: NotRequired[Interval]


class CascadeMatch(CascadePoint):
    """The cheapest frontier point as accurate as the fixed top rung, with paired intervals.

    saving: 1 - cost_vs_top_shared (null: a top of 0 frames)
    accuracy_ci: 95% interval of its accuracy (absent with --bootstrap 0)
    delta_vs_top_ci: 95% interval of its accuracy minus the top rung's (absent with --bootstrap 0)
    saving_ci: 95% interval of its saving (absent with --bootstrap 0)
    """

    saving: float | None
    accuracy_ci: NotRequired[Interval]
    delta_vs_top_ci: NotRequired[Interval]
    saving_ci: NotRequired[Interval]


class FixedBudget(TypedDict):
    """One rung answered at for every item.

    config: the rung
    accuracy: its accuracy on the ladder's items (null without items)
    frames: its frames
    cost_vs_top: frames over the top rung's (null: a top of 0 frames)
    """

    config: str
    accuracy: float | None
    frames: int
    cost_vs_top: float | None


class CascadeSweep(TypedDict):
    """The cascade's frontier over thresholds (``backend.analysis.cascade.sweep``).

    ladder: the budgets, cheapest first
    n_items: items with confidences at every rung
    n_excluded: items left out for lacking a response at some rung
    n_without_confidence: items left out for lacking a confidence at some rung
    denominator: the items every policy is compared on, in words (the fixed budgets and the cascade alike)
    top_accuracy: the fixed top rung's accuracy on those items
    fixed: each rung as a fixed budget
    frontier: one point per threshold
    matching: the cheapest point matching the top's accuracy (null when none does)
    """

    ladder: list[str]
    n_items: int
    n_excluded: int
    n_without_confidence: int
    denominator: str
    top_accuracy: float
    fixed: list[FixedBudget]
    frontier: list[CascadePoint]
    matching: CascadeMatch | None


class CascadeThresholdReport(CascadeAtThreshold):
    """``trajaudit cascade --threshold T --json`` and the Policies page's chosen threshold.

    scope: the scope these numbers belong to
    """

    scope: ScopeHeader


class CascadeSweepReport(CascadeSweep):
    """``trajaudit cascade --sweep --json`` and the Policies page's frontier.

    scope: the scope these numbers belong to
    """

    scope: ScopeHeader


class PredictorRow(TypedDict):
    """One policy on the accuracy-vs-frames frontier.

    policy: fixed, oracle, predictor or cascade
    label: the rung, "cheapest correct", "argmax", "q=<level>" or "t=<threshold>"
    n_items: items it is evaluated on
    accuracy: its accuracy
    mean_frames: mean frames it spends (shared cost for the cascade)
    cost_vs_top: mean_frames over the top rung's frames (null: a top of 0 frames)
    """

    policy: Policy
    label: str
    n_items: int
    accuracy: float
    mean_frames: float
    cost_vs_top: float | None


class Predictor(TypedDict):
    """The cross-validated budget predictor (``backend.analysis.predictor.report``).

    model: the model
    ladder: the budgets, cheapest first
    n_items: items every row is scored on: those with a confidence at every rung where any has one (the cascade's), else every item with a response at every rung
    n_excluded: items left out for lacking a response at some rung
    n_without_confidence: items with a response at every rung left out for lacking a confidence at some rung
    denominator: n_items in words, as the page's chart states it
    folds: cross-validation folds (grouped by video)
    seed: the folds' seed
    n_groups: groups the folds split (videos, and items without one)
    n_videos: of those, groups that are videos
    target_share: per rung, the share of items whose cheapest sufficient budget it is
    never_correct_share: share of items right at no rung
    target_hit_rate: share of items whose predicted rung (argmax) is their cheapest sufficient one
    frontier: fixed budgets, the oracle, the predictor and the cascade
    cascade_note: why no cascade rows are given (null when they are)
    """

    model: str
    ladder: list[str]
    n_items: int
    n_excluded: int
    n_without_confidence: int
    denominator: str
    folds: int
    seed: int
    n_groups: int
    n_videos: int
    target_share: dict[str, float]
    never_correct_share: float
    target_hit_rate: float
    frontier: list[PredictorRow]
    cascade_note: str | None


class PredictorReport(Predictor):
    """``trajaudit predictor --json`` and the Policies page's predictor.

    scope: the scope these numbers belong to
    """

    scope: ScopeHeader
