"""The views' reports (``backend/views.py``): what a page draws and its CLI twin prints with ``--json``."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from backend.contracts.base import UNSET, Contract, UnsetType, doc, field
from backend.contracts.common import Interval, ItemMeta, QuietTransition, ScopeHeader, Transition

FlowKind = Literal["rescued", "harmed", "stable-correct", "stable-wrong"]
ItemSort = Literal["item", "task_type", "n_correct", "changes", "mean_confidence", "disagreement", "drop"]

TableCell = str | int | float | None
"""A cell of a table row whose columns follow the grid or the models (``DataFrame.to_dict("records")``)."""


class BestFixed(Contract, kw_only=True):
    """The best fixed configuration (ties: the cheapest)."""

    config: Annotated[str, doc("its label")]
    accuracy: Annotated[float, doc("its accuracy")]


class MetricsCI(Contract, kw_only=True):
    """95% paired-bootstrap intervals shaped like the numbers they qualify; empty with --bootstrap 0."""

    accuracy: Annotated[dict[str, Interval | None] | UnsetType, doc("per configuration, the accuracy's interval")] = (
        UNSET
    )
    best_fixed: Annotated[Interval | None | UnsetType, doc("the best fixed accuracy's interval")] = UNSET
    oracle_accuracy: Annotated[Interval | None | UnsetType, doc("the oracle accuracy's interval")] = UNSET
    oracle_headroom: Annotated[Interval | None | UnsetType, doc("the headroom's interval")] = UNSET
    visual_confusion_rate: Annotated[Interval | None | UnsetType, doc("the confusion rate's interval")] = UNSET
    text_overwrite_rate: Annotated[
        Interval | None | UnsetType, doc("the overwrite rate's interval (null without text in the grid)")
    ] = UNSET
    text_overwrite_of_text_correct: Annotated[
        Interval | None | UnsetType, doc("that share's interval (null without text in the grid)")
    ] = UNSET
    mean_churn: Annotated[
        Interval | None | UnsetType, doc("the mean churn's interval (null with one configuration)")
    ] = UNSET


class ContinuousBest(Contract, kw_only=True):
    """The configuration of highest mean score (ties: the cheapest)."""

    config: Annotated[str, doc("its label")]
    mean_score: Annotated[float, doc("its mean score")]


class ScoreTransition(Contract, kw_only=True):
    """Score changes between two configurations, on the items scored at every configuration (docs/metrics.md)."""

    from_: Annotated[str, doc("configuration a")] = field(name="from")
    to: Annotated[str, doc("configuration b")]
    improved: Annotated[int, doc("items whose score rises by more than the tolerance")]
    regressed: Annotated[int, doc("items whose score falls by more than the tolerance")]
    unchanged: Annotated[int, doc("items whose score changes by at most the tolerance")]
    improvement_rate: Annotated[float, doc("improved / items")]
    regression_rate: Annotated[float, doc("regressed / items")]
    mean_delta: Annotated[float, doc("mean over items of s(b) - s(a)")]
    sign_p: Annotated[float, doc("exact two-sided sign-test p-value of improved vs regressed")]


class ContinuousCI(Contract, kw_only=True):
    """95% bootstrap intervals of the score summaries; empty with --bootstrap 0."""

    mean_score: Annotated[dict[str, Interval] | UnsetType, doc("per configuration, the mean score's interval")] = UNSET
    oracle_gap: Annotated[Interval | UnsetType, doc("the oracle gap's interval")] = UNSET
    regression_rate: Annotated[
        list[Interval] | UnsetType, doc("one per transition, in the order of ``transitions``")
    ] = UNSET
    improvement_rate: Annotated[
        list[Interval] | UnsetType, doc("one per transition, in the order of ``transitions``")
    ] = UNSET


class ContinuousMetrics(Contract, kw_only=True):
    """Continuous-score summaries of one model on the items scored at every configuration."""

    n_items: Annotated[int, doc("items scored at every configuration")]
    n_unscored: Annotated[int, doc("matched items missing a score somewhere")]
    tolerance: Annotated[float, doc("a change of at most this counts as unchanged")]
    mean_score: Annotated[dict[str, float], doc("per configuration, the mean score")]
    best_fixed: Annotated[ContinuousBest, doc("the configuration of highest mean score")]
    oracle_mean: Annotated[float, doc("mean over items of the best score")]
    oracle_gap: Annotated[float, doc("oracle_mean minus the best mean score")]
    transitions: Annotated[list[ScoreTransition], doc("score changes between consecutive configurations")]
    ci: Annotated[ContinuousCI, doc("intervals of these numbers")]


class BinaryView(Contract, kw_only=True):
    """How the scope's scored (open-ended) items enter accuracy (``--score-cutoff``; backend.scope.binary)."""

    score_cutoff: Annotated[
        str | float,
        doc(
            '"stored" (each response\'s stored correct), "none" (scored items left out of accuracy) or T (correct = score >= T)'
        ),
    ]
    n_scored_items: Annotated[int, doc("matched items with a score at some (model, configuration)")]
    n_mcqa_items: Annotated[int, doc("matched items with no score (multiple choice)")]
    n_scored_in_accuracy: Annotated[
        int,
        doc('scored items counted in the accuracy numbers (with "stored", those whose every response gave a verdict)'),
    ]
    verdict_cut: Annotated[
        Interval | None,
        doc('with "stored", [lo, hi] when every stored verdict equals score >= T for T in (lo, hi] (null: none does)'),
    ]


class ScoreFlows(Contract, kw_only=True):
    """One model's score changes per transition (the Flows page's score section)."""

    model: Annotated[str, doc("the model drawn")]
    configs: Annotated[list[str], doc("the configurations, in order")]
    tolerance: Annotated[float, doc("a change of at most this counts as unchanged")]
    n_items: Annotated[int, doc("items scored at every configuration")]
    n_unscored: Annotated[int, doc("matched items missing a score somewhere")]
    transitions: Annotated[
        list[ScoreTransition], doc("per consecutive pair (or the pair asked for), items improved, regressed, unchanged")
    ]


class ScoreFlowItem(ItemMeta, kw_only=True):
    """An item of the score flow asked for, largest change first."""

    score_from: Annotated[float, doc("its score at the first configuration")]
    score_to: Annotated[float, doc("its score at the second configuration")]
    delta: Annotated[float, doc("score_to - score_from")]


class ScoreFlowsReport(ScoreFlows, kw_only=True):
    """``trajaudit flows --scores --json``: the score flows, and one flow's items with --from/--to/--kind."""

    binary: Annotated[BinaryView, doc("how scored items enter accuracy (the scope's --score-cutoff)")]
    n_flow_items: Annotated[int | UnsetType, doc("items of the flow asked for (--kind only)")] = UNSET
    items: Annotated[list[ScoreFlowItem] | UnsetType, doc("those items, at most --limit (--kind only)")] = UNSET
    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]


class ModelMetrics(Contract, kw_only=True):
    """One model's MCQA metrics on the matched items and grid (docs/metrics.md); rates are fractions."""

    accuracy: Annotated[dict[str, float], doc("per configuration, the share of items right")]
    best_fixed: Annotated[BestFixed, doc("the best fixed configuration and its accuracy")]
    oracle_accuracy: Annotated[float, doc("share of items right at some configuration")]
    oracle_headroom: Annotated[float, doc("oracle_accuracy minus the best fixed accuracy")]
    visual_confusion_rate: Annotated[
        float, doc("share of items right at a cheaper and wrong at a costlier configuration")
    ]
    text_overwrite_rate: Annotated[
        float | None,
        doc("share of items right with text only and wrong at some visual configuration (null without text)"),
    ]
    text_overwrite_of_text_correct: Annotated[
        float | None, doc("the same count over the items right with text only (null without text)")
    ]
    terminal_regressions: Annotated[int, doc("items wrong at the costliest configuration and right at a cheaper one")]
    mean_churn: Annotated[float | None, doc("mean churn over consecutive transitions (null with one configuration)")]
    transitions: Annotated[
        list[QuietTransition],
        doc("the transitions asked for (default: consecutive); beyond noise only with --beyond-noise"),
    ]
    ci: Annotated[MetricsCI, doc("95% intervals of these numbers")]
    continuous: Annotated[
        ContinuousMetrics | UnsetType, doc("continuous-score summaries, where the model has scores")
    ] = UNSET


class McqaMetrics(Contract, kw_only=True):
    """Every MCQA metric per model on one matched matrix (``backend.analysis.metrics.mcqa_metrics``)."""

    grid: Annotated[list[str], doc("the configurations, cheapest first")]
    n_items: Annotated[int, doc("matched items")]
    n_excluded: Annotated[int, doc("items left out for lacking a response at some (model, config)")]
    models: Annotated[dict[str, ModelMetrics], doc("per model, its metrics")]


TaskTypeRow = Annotated[
    dict[str, TableCell],
    Meta(
        description="One task type's numbers for one model, with Wilson 95% intervals (null where not available): "
        'task_type (the task type, "(none)" for items without one), n (items of this type), '
        "accuracy[<config>] (one column per configuration), best_fixed (the best accuracy over configurations), "
        "oracle_accuracy (share right at some configuration), oracle_headroom (oracle_accuracy minus best_fixed), "
        "visual_confusion_rate (share visually confused), text_overwrite_rate (share overwritten by frames, null "
        "without text in the grid), then <metric>_lo and <metric>_hi (Wilson bounds) of best_fixed, oracle_accuracy, "
        "visual_confusion_rate and text_overwrite_rate"
    ),
]
"""A table row (its accuracy columns follow the grid): the pages draw it as a table, the CLI prints it as is."""


class Story(Transition, kw_only=True):
    """The step a model's curve is flattest against its churn (``backend.analysis.story``; docs/metrics.md)."""

    n_items: Annotated[int, doc("matched items (net and churn are shares of these)")]
    imbalance: Annotated[
        float, doc("|rescued - harmed| / (rescued + harmed): 0 when the flips cancel, 1 when all go one way")
    ]
    min_churn: Annotated[float, doc("the churn a step needed to be chosen")]
    eligible: Annotated[
        bool, doc("whether the step reached min_churn (false: no step did; the least imbalanced step with a flip)")
    ]


class OverviewNumbers(McqaMetrics, kw_only=True):
    """The Overview's headline numbers and why items were left out (a report's ``overview``)."""

    excluded_reasons: Annotated[
        dict[str, int], doc('per "<model> lacks <config>", the excluded items lacking that response')
    ]
    story: Annotated[
        dict[str, Story | None],
        doc("per model, the step its curve is flattest against its churn (null: no item flips at any step)"),
    ]
    binary: Annotated[
        BinaryView | UnsetType,
        doc("how scored (open-ended) items enter accuracy (only when the scope has scored items)"),
    ] = UNSET


class OverviewReport(OverviewNumbers, kw_only=True):
    """The Overview page and ``trajaudit metrics --json``."""

    task_types: Annotated[dict[str, list[TaskTypeRow]], doc("per model, one row per task type (largest first)")]
    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]


class SankeyNode(Contract, kw_only=True):
    """Items in one state at one configuration."""

    id: Annotated[int, doc("2k (right at the k-th configuration) or 2k + 1 (wrong there)")]
    config: Annotated[str, doc("the configuration")]
    state: Annotated[Literal["correct", "wrong"], doc('"correct" or "wrong"')]
    count: Annotated[int, doc("items in that state")]
    share: Annotated[float, doc("count / items")]


class SankeyLink(Transition, kw_only=True):
    """Items moving between two states of consecutive configurations; the transition numbers are the pair's."""

    source: Annotated[int, doc("the node the link leaves")]
    target: Annotated[int, doc("the node it reaches")]
    kind: Annotated[FlowKind, doc("rescued, harmed, stable-correct or stable-wrong")]
    count: Annotated[int, doc("items on this link (within-noise flips left out with --beyond-noise)")]
    share: Annotated[float, doc("count / items")]
    hidden_within: Annotated[int | UnsetType, doc("within-noise flips left out of this link (--beyond-noise only)")] = (
        UNSET
    )


class FlowItem(ItemMeta, kw_only=True):
    """An item of the flow asked for, with the confidence on each side."""

    confidence_from: Annotated[
        float | None, doc("the chosen option's probability at the first configuration (null: not stored)")
    ]
    confidence_to: Annotated[float | None, doc("the same at the second configuration")]


class Sankey(Contract, kw_only=True):
    """One model's correct/wrong states per configuration and the flows between them."""

    model: Annotated[str, doc("the model drawn")]
    configs: Annotated[list[str], doc("the configurations drawn, in order")]
    n_items: Annotated[int, doc("matched items")]
    n_excluded: Annotated[int, doc("items left out for lacking a response somewhere")]
    nodes: Annotated[list[SankeyNode], doc("two per configuration")]
    links: Annotated[list[SankeyLink], doc("four per consecutive pair (counts may be 0)")]
    within_noise_hidden: Annotated[
        bool | UnsetType, doc("true when within-noise flips are left out (--beyond-noise only)")
    ] = UNSET
    n_hidden: Annotated[int | UnsetType, doc("within-noise flips left out in total (--beyond-noise only)")] = UNSET


class FlowsSummary(Sankey, kw_only=True):
    """The Sankey of one model with its trajectory classes (a report's ``flows``)."""

    trajectory_classes: Annotated[
        dict[str, int],
        doc("items per trajectory class (stable-correct, monotone-gain, regressing, oscillating, stable-wrong)"),
    ]


class FlowsReport(FlowsSummary, kw_only=True):
    """The Flows page and ``trajaudit flows --json``."""

    n_flow_items: Annotated[int | UnsetType, doc("items of the flow asked for (--from/--to/--kind only)")] = UNSET
    items: Annotated[list[FlowItem] | UnsetType, doc("those items, at most --limit (--from/--to/--kind only)")] = UNSET
    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]


class ItemsPageRow(Contract, kw_only=True):
    """One item of the Items page, with every sort key."""

    position: Annotated[int, doc("the item's index in the matched matrix")]
    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item's id")]
    task_type: Annotated[str | None, doc("the task type")]
    duration: Annotated[str | None, doc("the duration category")]
    question: Annotated[str | None, doc("the question text")]
    tags: Annotated[list[str], doc("the focus model's trajectory tags")]
    n_correct: Annotated[int, doc("configurations the focus model gets right")]
    changes: Annotated[int, doc("changes of correctness along the grid")]
    mean_confidence: Annotated[float | None, doc("mean confidence over the grid (null: none stored)")]
    disagreement: Annotated[float | None, doc("disagreement between the models (null with one model)")]
    drop: Annotated[
        float | None,
        doc(
            "the largest fall of the focus model's score between consecutive configurations (null: not scored everywhere)"
        ),
    ]
    confidence: Annotated[list[float | None], doc("per configuration of the grid, the confidence (null: not stored)")]


class ItemsPage(Contract, kw_only=True):
    """The Items page and ``trajaudit items --page N --json``: one sorted page."""

    model: Annotated[str, doc("the focus model")]
    sort: Annotated[ItemSort, doc("the sort key")]
    descending: Annotated[bool, doc("true when sorted largest first")]
    page: Annotated[int, doc("the page shown (from 1)")]
    page_size: Annotated[int, doc("rows per page")]
    n_pages: Annotated[int, doc("pages in all")]
    rows: Annotated[list[ItemsPageRow], doc("the page's items")]
    scope: Annotated[ScopeHeader, doc("the scope these rows belong to")]


class ItemRow(Contract, kw_only=True):
    """One item of ``trajaudit items --format json`` (the Items page's export)."""

    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item's id")]
    split: Annotated[str | None, doc("the benchmark split")]
    task_type: Annotated[str | None, doc("the task type")]
    video: Annotated[str | None, doc("the video id or path")]
    duration: Annotated[str | None, doc("the duration category")]
    domain: Annotated[str | None, doc("the domain")]
    question: Annotated[str | None, doc("the question text")]
    tags: Annotated[list[str], doc("the model's trajectory tags")]
    trajectory: Annotated[dict[str, int], doc("per configuration, 1 right or 0 wrong")]
    confidence: Annotated[
        dict[str, float | None], doc("per configuration, the chosen option's probability (null: not stored)")
    ]
    annotation_tags: Annotated[str | UnsetType, doc('annotation tags joined by ";" (--annotations only)')] = UNSET
    annotation_notes: Annotated[str | UnsetType, doc('"author: note" joined by " | " (--annotations only)')] = UNSET
    n_annotations: Annotated[int | UnsetType, doc("annotations on the item (--annotations only)")] = UNSET


class Intersection(Contract, kw_only=True):
    """Items confused by exactly one set of models."""

    models: Annotated[list[str], doc("the set")]
    n: Annotated[int, doc("its items")]


class ConfusionOverlap(Contract, kw_only=True):
    """Which items each model finds visually confusing, and how much those sets overlap."""

    models: Annotated[list[str], doc("the models, in order")]
    grid: Annotated[list[str], doc("the configurations")]
    n_items: Annotated[int, doc("matched items")]
    confused: Annotated[dict[str, int], doc("per model, its confused items")]
    confused_by_all: Annotated[int, doc("items confused by every model")]
    confused_by_any: Annotated[int, doc("items confused by some model")]
    jaccard: Annotated[
        list[list[float | None]], doc("[a][b] Jaccard index of the confused sets of models a and b (null: both empty)")
    ]
    intersections: Annotated[list[Intersection], doc("items per exact set of confused models, largest first")]


class Overlap(ConfusionOverlap, kw_only=True):
    """The Compare page's overlap: the confused sets and the share every model shares."""

    shared_share: Annotated[float | None, doc("confused_by_all / confused_by_any (null when none is confused)")]


DisagreementRow = Annotated[
    dict[str, TableCell],
    Meta(
        description="An item the models split on, most disagreed first: benchmark, item_id, task_type, question, "
        "disagreement (mean over the grid of 1 - |2s - 1|, s the share of models right), split_configs "
        "(configurations where the models do not all agree), accuracy:<model> (one column per model: share of "
        "the grid that model gets right on the item)"
    ),
]
"""A table row (one accuracy column per model)."""


class CompareReport(Contract, kw_only=True):
    """The Compare page and ``trajaudit compare --json``."""

    grid: Annotated[list[str], doc("the configurations, cheapest first")]
    n_items: Annotated[int, doc("matched items")]
    n_excluded: Annotated[int, doc("items left out for lacking a response somewhere")]
    metrics: Annotated[
        dict[str, ModelMetrics],
        doc("per model, its metrics (as in ``metrics --json``; ``continuous`` where the model has scores)"),
    ]
    binary: Annotated[
        BinaryView | UnsetType,
        doc("how scored (open-ended) items enter accuracy (only when the scope has scored items)"),
    ] = UNSET
    overlap: Annotated[Overlap | UnsetType, doc("confused-item overlap (two models or more)")] = UNSET
    disagreement: Annotated[
        list[DisagreementRow] | UnsetType, doc("the items the models split on most, at most --top (two models or more)")
    ] = UNSET
    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]
