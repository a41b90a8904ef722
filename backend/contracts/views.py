"""The views' reports (``backend/views.py``): what a page draws and its CLI twin prints with ``--json``."""

from typing import Literal, NotRequired, TypedDict

from backend.contracts.common import From, Interval, ItemMeta, QuietTransition, ScopeHeader, Transition

FlowKind = Literal["rescued", "harmed", "stable-correct", "stable-wrong"]
ItemSort = Literal["item", "task_type", "n_correct", "changes", "mean_confidence", "disagreement", "drop"]

# Families of keys: one key per configuration / model (see backend.contracts.schema.is_family).
AccuracyColumns = TypedDict("AccuracyColumns", {"accuracy[<config>]": float})
ModelAccuracyColumns = TypedDict("ModelAccuracyColumns", {"accuracy:<model>": float})


class BestFixed(TypedDict):
    """The best fixed configuration (ties: the cheapest).

    config: its label
    accuracy: its accuracy
    """

    config: str
    accuracy: float


class MetricsCI(TypedDict, total=False):
    """95% paired-bootstrap intervals shaped like the numbers they qualify; empty with --bootstrap 0.

    accuracy: per configuration, the accuracy's interval
    best_fixed: the best fixed accuracy's interval
    oracle_accuracy: the oracle accuracy's interval
    oracle_headroom: the headroom's interval
    visual_confusion_rate: the confusion rate's interval
    text_overwrite_rate: the overwrite rate's interval (null without text in the grid)
    text_overwrite_of_text_correct: that share's interval (null without text in the grid)
    mean_churn: the mean churn's interval (null with one configuration)
    """

    accuracy: dict[str, Interval | None]
    best_fixed: Interval | None
    oracle_accuracy: Interval | None
    oracle_headroom: Interval | None
    visual_confusion_rate: Interval | None
    text_overwrite_rate: Interval | None
    text_overwrite_of_text_correct: Interval | None
    mean_churn: Interval | None


class ContinuousBest(TypedDict):
    """The configuration of highest mean score (ties: the cheapest).

    config: its label
    mean_score: its mean score
    """

    config: str
    mean_score: float


class ScoreTransition(From):
    """Score changes between two configurations, on the items scored at every configuration (docs/metrics.md).

    from: configuration a
    to: configuration b
    improved: items whose score rises by more than the tolerance
    regressed: items whose score falls by more than the tolerance
    unchanged: items whose score changes by at most the tolerance
    improvement_rate: improved / items
    regression_rate: regressed / items
    mean_delta: mean over items of s(b) - s(a)
    sign_p: exact two-sided sign-test p-value of improved vs regressed
    """

    to: str
    improved: int
    regressed: int
    unchanged: int
    improvement_rate: float
    regression_rate: float
    mean_delta: float
    sign_p: float


class ContinuousCI(TypedDict, total=False):
    """95% bootstrap intervals of the score summaries; empty with --bootstrap 0.

    mean_score: per configuration, the mean score's interval
    oracle_gap: the oracle gap's interval
    regression_rate: one per transition, in the order of ``transitions``
    improvement_rate: one per transition, in the order of ``transitions``
    """

    mean_score: dict[str, Interval]
    oracle_gap: Interval
    regression_rate: list[Interval]
    improvement_rate: list[Interval]


class ContinuousMetrics(TypedDict):
    """Continuous-score summaries of one model on the items scored at every configuration.

    n_items: items scored at every configuration
    n_unscored: matched items missing a score somewhere
    tolerance: a change of at most this counts as unchanged
    mean_score: per configuration, the mean score
    best_fixed: the configuration of highest mean score
    oracle_mean: mean over items of the best score
    oracle_gap: oracle_mean minus the best mean score
    transitions: score changes between consecutive configurations
    ci: intervals of these numbers
    """

    n_items: int
    n_unscored: int
    tolerance: float
    mean_score: dict[str, float]
    best_fixed: ContinuousBest
    oracle_mean: float
    oracle_gap: float
    transitions: list[ScoreTransition]
    ci: ContinuousCI


class BinaryView(TypedDict):
    """How the scope's scored (open-ended) items enter accuracy (``--score-cutoff``; backend.scope.binary).

    score_cutoff: "stored" (each response's stored correct), "none" (scored items left out of accuracy) or T (correct = score >= T)
    n_scored_items: matched items with a score at some (model, configuration)
    n_mcqa_items: matched items with no score (multiple choice)
    n_scored_in_accuracy: scored items counted in the accuracy numbers (with "stored", those whose every response gave a verdict)
    verdict_cut: with "stored", [lo, hi] when every stored verdict equals score >= T for T in (lo, hi] (null: none does)
    """

    score_cutoff: str | float
    n_scored_items: int
    n_mcqa_items: int
    n_scored_in_accuracy: int
    verdict_cut: Interval | None


class ScoreFlows(TypedDict):
    """One model's score changes per transition (the Flows page's score section).

    model: the model drawn
    configs: the configurations, in order
    tolerance: a change of at most this counts as unchanged
    n_items: items scored at every configuration
    n_unscored: matched items missing a score somewhere
    transitions: per consecutive pair (or the pair asked for), items improved, regressed, unchanged
    """

    model: str
    configs: list[str]
    tolerance: float
    n_items: int
    n_unscored: int
    transitions: list[ScoreTransition]


class ScoreFlowItem(ItemMeta):
    """An item of the score flow asked for, largest change first.

    score_from: its score at the first configuration
    score_to: its score at the second configuration
    delta: score_to - score_from
    """

    score_from: float
    score_to: float
    delta: float


class ScoreFlowsReport(ScoreFlows):
    """``trajaudit flows --scores --json``: the score flows, and one flow's items with --from/--to/--kind.

    binary: how scored items enter accuracy (the scope's --score-cutoff)
    n_flow_items: items of the flow asked for (--kind only)
    items: those items, at most --limit (--kind only)
    scope: the scope these numbers belong to
    """

    binary: BinaryView
    n_flow_items: NotRequired[int]
    items: NotRequired[list[ScoreFlowItem]]
    scope: ScopeHeader


class ModelMetrics(TypedDict):
    """One model's MCQA metrics on the matched items and grid (docs/metrics.md); rates are fractions.

    accuracy: per configuration, the share of items right
    best_fixed: the best fixed configuration and its accuracy
    oracle_accuracy: share of items right at some configuration
    oracle_headroom: oracle_accuracy minus the best fixed accuracy
    visual_confusion_rate: share of items right at a cheaper and wrong at a costlier configuration
    text_overwrite_rate: share of items right with text only and wrong at some visual configuration (null without text)
    text_overwrite_of_text_correct: the same count over the items right with text only (null without text)
    terminal_regressions: items wrong at the costliest configuration and right at a cheaper one
    mean_churn: mean churn over consecutive transitions (null with one configuration)
    transitions: the transitions asked for (default: consecutive); beyond noise only with --beyond-noise
    ci: 95% intervals of these numbers
    continuous: continuous-score summaries, where the model has scores
    """

    accuracy: dict[str, float]
    best_fixed: BestFixed
    oracle_accuracy: float
    oracle_headroom: float
    visual_confusion_rate: float
    text_overwrite_rate: float | None
    text_overwrite_of_text_correct: float | None
    terminal_regressions: int
    mean_churn: float | None
    transitions: list[Transition | QuietTransition]
    ci: MetricsCI
    continuous: NotRequired[ContinuousMetrics]


class McqaMetrics(TypedDict):
    """Every MCQA metric per model on one matched matrix (``backend.analysis.metrics.mcqa_metrics``).

    grid: the configurations, cheapest first
    n_items: matched items
    n_excluded: items left out for lacking a response at some (model, config)
    models: per model, its metrics
    """

    grid: list[str]
    n_items: int
    n_excluded: int
    models: dict[str, ModelMetrics]


class TaskTypeRow(AccuracyColumns):
    """One task type's numbers for one model, with Wilson 95% intervals (null where not available).

    task_type: the task type ("(none)" for items without one)
    n: items of this type
    accuracy[<config>]: accuracy at that configuration
    best_fixed: the best accuracy over configurations
    oracle_accuracy: share right at some configuration
    oracle_headroom: oracle_accuracy minus best_fixed
    visual_confusion_rate: share visually confused
    text_overwrite_rate: share overwritten by frames (null without text in the grid)
    best_fixed_lo: Wilson lower bound of best_fixed
    best_fixed_hi: Wilson upper bound of best_fixed
    oracle_accuracy_lo: Wilson lower bound of oracle_accuracy
    oracle_accuracy_hi: Wilson upper bound of oracle_accuracy
    visual_confusion_rate_lo: Wilson lower bound of visual_confusion_rate
    visual_confusion_rate_hi: Wilson upper bound of visual_confusion_rate
    text_overwrite_rate_lo: Wilson lower bound of text_overwrite_rate
    text_overwrite_rate_hi: Wilson upper bound of text_overwrite_rate
    """

    task_type: str
    n: int
    best_fixed: float
    oracle_accuracy: float
    oracle_headroom: float
    visual_confusion_rate: float
    text_overwrite_rate: float | None
    best_fixed_lo: float | None
    best_fixed_hi: float | None
    oracle_accuracy_lo: float | None
    oracle_accuracy_hi: float | None
    visual_confusion_rate_lo: float | None
    visual_confusion_rate_hi: float | None
    text_overwrite_rate_lo: float | None
    text_overwrite_rate_hi: float | None


class Story(Transition):
    """The step a model's curve is flattest against its churn (``backend.analysis.story``; docs/metrics.md).

    n_items: matched items (net and churn are shares of these)
    imbalance: |rescued - harmed| / (rescued + harmed): 0 when the flips cancel, 1 when all go one way
    min_churn: the churn a step needed to be chosen
    eligible: whether the step reached min_churn (false: no step did; the least imbalanced step with a flip)
    """

    n_items: int
    imbalance: float
    min_churn: float
    eligible: bool


class OverviewNumbers(McqaMetrics):
    """The Overview's headline numbers and why items were left out (a report's ``overview``).

    excluded_reasons: per "<model> lacks <config>", the excluded items lacking that response
    story: per model, the step its curve is flattest against its churn (null: no item flips at any step)
    binary: how scored (open-ended) items enter accuracy (only when the scope has scored items)
    """

    excluded_reasons: dict[str, int]
    story: dict[str, Story | None]
    binary: NotRequired[BinaryView]


class OverviewReport(OverviewNumbers):
    """The Overview page and ``trajaudit metrics --json``.

    task_types: per model, one row per task type (largest first)
    scope: the scope these numbers belong to
    """

    task_types: dict[str, list[TaskTypeRow]]
    scope: ScopeHeader


class SankeyNode(TypedDict):
    """Items in one state at one configuration.

    id: 2k (right at the k-th configuration) or 2k + 1 (wrong there)
    config: the configuration
    state: "correct" or "wrong"
    count: items in that state
    share: count / items
    """

    id: int
    config: str
    state: Literal["correct", "wrong"]
    count: int
    share: float


class SankeyLink(Transition):
    """Items moving between two states of consecutive configurations; the transition numbers are the pair's.

    source: the node the link leaves
    target: the node it reaches
    kind: rescued, harmed, stable-correct or stable-wrong
    count: items on this link (within-noise flips left out with --beyond-noise)
    share: count / items
    hidden_within: within-noise flips left out of this link (--beyond-noise only)
    """

    source: int
    target: int
    kind: FlowKind
    count: int
    share: float
    hidden_within: NotRequired[int]


class FlowItem(ItemMeta):
    """An item of the flow asked for, with the confidence on each side.

    confidence_from: the chosen option's probability at the first configuration (null: not stored)
    confidence_to: the same at the second configuration
    """

    confidence_from: float | None
    confidence_to: float | None


class Sankey(TypedDict):
    """One model's correct/wrong states per configuration and the flows between them.

    model: the model drawn
    configs: the configurations drawn, in order
    n_items: matched items
    n_excluded: items left out for lacking a response somewhere
    nodes: two per configuration
    links: four per consecutive pair (counts may be 0)
    within_noise_hidden: true when within-noise flips are left out (--beyond-noise only)
    n_hidden: within-noise flips left out in total (--beyond-noise only)
    """

    model: str
    configs: list[str]
    n_items: int
    n_excluded: int
    nodes: list[SankeyNode]
    links: list[SankeyLink]
    within_noise_hidden: NotRequired[bool]
    n_hidden: NotRequired[int]


class FlowsSummary(Sankey):
    """The Sankey of one model with its trajectory classes (a report's ``flows``).

    trajectory_classes: items per trajectory class (stable-correct, monotone-gain, regressing, oscillating, stable-wrong)
    """

    trajectory_classes: dict[str, int]


class FlowsReport(FlowsSummary):
    """The Flows page and ``trajaudit flows --json``.

    n_flow_items: items of the flow asked for (--from/--to/--kind only)
    items: those items, at most --limit (--from/--to/--kind only)
    scope: the scope these numbers belong to
    """

    n_flow_items: NotRequired[int]
    items: NotRequired[list[FlowItem]]
    scope: ScopeHeader


class ItemsPageRow(TypedDict):
    """One item of the Items page, with every sort key.

    position: the item's index in the matched matrix
    benchmark: the benchmark
    item_id: the item's id
    task_type: the task type
    duration: the duration category
    question: the question text
    tags: the focus model's trajectory tags
    n_correct: configurations the focus model gets right
    changes: changes of correctness along the grid
    mean_confidence: mean confidence over the grid (null: none stored)
    disagreement: disagreement between the models (null with one model)
    drop: the largest fall of the focus model's score between consecutive configurations (null: not scored everywhere)
    confidence: per configuration of the grid, the confidence (null: not stored)
    """

    position: int
    benchmark: str
    item_id: str
    task_type: str | None
    duration: str | None
    question: str | None
    tags: list[str]
    n_correct: int
    changes: int
    mean_confidence: float | None
    disagreement: float | None
    drop: float | None
    confidence: list[float | None]


class ItemsPage(TypedDict):
    """The Items page and ``trajaudit items --page N --json``: one sorted page.

    model: the focus model
    sort: the sort key
    descending: true when sorted largest first
    page: the page shown (from 1)
    page_size: rows per page
    n_pages: pages in all
    rows: the page's items
    scope: the scope these rows belong to
    """

    model: str
    sort: ItemSort
    descending: bool
    page: int
    page_size: int
    n_pages: int
    rows: list[ItemsPageRow]
    scope: ScopeHeader


class ItemRow(TypedDict):
    """One item of ``trajaudit items --format json`` (the Items page's export).

    benchmark: the benchmark
    item_id: the item's id
    split: the benchmark split
    task_type: the task type
    video: the video id or path
    duration: the duration category
    domain: the domain
    question: the question text
    tags: the model's trajectory tags
    trajectory: per configuration, 1 right or 0 wrong
    confidence: per configuration, the chosen option's probability (null: not stored)
    annotation_tags: annotation tags joined by ";" (--annotations only)
    annotation_notes: "author: note" joined by " | " (--annotations only)
    n_annotations: annotations on the item (--annotations only)
    """

    benchmark: str
    item_id: str
    split: str | None
    task_type: str | None
    video: str | None
    duration: str | None
    domain: str | None
    question: str | None
    tags: list[str]
    trajectory: dict[str, int]
    confidence: dict[str, float | None]
    annotation_tags: NotRequired[str]
    annotation_notes: NotRequired[str]
    n_annotations: NotRequired[int]


class Intersection(TypedDict):
    """Items confused by exactly one set of models.

    models: the set
    n: its items
    """

    models: list[str]
    n: int


class ConfusionOverlap(TypedDict):
    """Which items each model finds visually confusing, and how much those sets overlap.

    models: the models, in order
    grid: the configurations
    n_items: matched items
    confused: per model, its confused items
    confused_by_all: items confused by every model
    confused_by_any: items confused by some model
    jaccard: [a][b] Jaccard index of the confused sets of models a and b (null: both empty)
    intersections: items per exact set of confused models, largest first
    """

    models: list[str]
    grid: list[str]
    n_items: int
    confused: dict[str, int]
    confused_by_all: int
    confused_by_any: int
    jaccard: list[list[float | None]]
    intersections: list[Intersection]


class Overlap(ConfusionOverlap):
    """The Compare page's overlap: the confused sets and the share every model shares.

    shared_share: confused_by_all / confused_by_any (null when none is confused)
    """

    shared_share: float | None


class DisagreementRow(ModelAccuracyColumns):
    """An item the models split on, most disagreed first.

    benchmark: the benchmark
    item_id: the item's id
    task_type: the task type
    question: the question text
    disagreement: mean over the grid of 1 - |2s - 1|, s the share of models right
    split_configs: configurations where the models do not all agree
    accuracy:<model>: share of the grid that model gets right on the item
    """

    benchmark: str
    item_id: str
    task_type: str | None
    question: str | None
    disagreement: float
    split_configs: int


class CompareReport(TypedDict):
    """The Compare page and ``trajaudit compare --json``.

    grid: the configurations, cheapest first
    n_items: matched items
    n_excluded: items left out for lacking a response somewhere
    metrics: per model, its metrics (as in ``metrics --json``; ``continuous`` where the model has scores)
    binary: how scored (open-ended) items enter accuracy (only when the scope has scored items)
    overlap: confused-item overlap (two models or more)
    disagreement: the items the models split on most, at most --top (two models or more)
    scope: the scope these numbers belong to
    """

    grid: list[str]
    n_items: int
    n_excluded: int
    metrics: dict[str, ModelMetrics]
    binary: NotRequired[BinaryView]
    overlap: NotRequired[Overlap]
    disagreement: NotRequired[list[DisagreementRow]]
    scope: ScopeHeader
