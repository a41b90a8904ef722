"""The audits (the Audits page): ``trajaudit audit noise|interventions|isocompute|crossmodel --json``."""

from typing import NotRequired, TypedDict

from backend.contracts.common import Interval, NoiseTransition, Transition


class NoiseConfig(TypedDict):
    """Repeat noise at one configuration's budget.

    config: the configuration
    max_repeats: most responses any item has at its budget
    n_items_measured: items with at least two repeats there
    mean_flip_rate: mean chance that two repeats disagree (null: none measured)
    share_noisy: share of measured items that flip under repeats (null: none measured)
    """

    config: str
    max_repeats: int
    n_items_measured: int
    mean_flip_rate: float | None
    share_noisy: float | None


class NoiseAudit(TypedDict):
    """``trajaudit audit noise --json``: per configuration and per item noise, transitions split by it.

    model: the model
    grid: the configurations
    n_items: matched items
    n_items_with_repeats: items with at least two repeats at some budget
    n_items_noisy: items that flip under repeats somewhere
    mean_item_flip_rate: mean over measured items of their mean flip rate (null: none measured)
    per_config: noise per configuration
    transitions: consecutive transitions, flips split within / beyond / unmeasured noise
    """

    model: str
    grid: list[str]
    n_items: int
    n_items_with_repeats: int
    n_items_noisy: int
    mean_item_flip_rate: float | None
    per_config: list[NoiseConfig]
    transitions: list[NoiseTransition]


class ProtocolConfig(TypedDict):
    """One configuration of the base grid against its counterpart under another protocol.

    config: the base configuration
    counterpart: the same budget under the protocol
    kappa: Cohen's kappa of correctness (null when undefined)
    agreement: share of items with the same correctness (null without items)
    rescued: items wrong at config and right at counterpart
    harmed: items right at config and wrong at counterpart
    """

    config: str
    counterpart: str
    kappa: float | None
    agreement: float | None
    rescued: int
    harmed: int


class TagChange(TypedDict):
    """Items carrying one trajectory tag under each protocol.

    base: under the base protocol
    protocol: under the other protocol
    both: under both
    gained: under the other protocol only
    lost: under the base protocol only
    """

    base: int
    protocol: int
    both: int
    gained: int
    lost: int


class Recovery(TypedDict):
    """The base grid's terminal regressions when the top budget is run under another protocol.

    policy: the top budget's label under that protocol
    protocol: the protocol
    n_items: matched items
    n_excluded: items left out for lacking a response somewhere
    n_terminal: terminal regressions under the base protocol
    n_recovered: of those, items right under the other protocol
    recovery_rate: n_recovered / n_terminal (null without terminal regressions)
    harm_rate: among items right at the base top, the share the other protocol gets wrong (null: none right)
    kappa_top: Cohen's kappa at the top budget (null when undefined)
    recovery_ci: 95% bootstrap interval of recovery_rate (null without bootstrap or regressions)
    recovery_wilson: Wilson 95% interval of recovery_rate (null without regressions)
    """

    policy: str
    protocol: str
    n_items: int
    n_excluded: int
    n_terminal: int
    n_recovered: int
    recovery_rate: float | None
    harm_rate: float | None
    kappa_top: float | None
    recovery_ci: Interval | None
    recovery_wilson: Interval | None


class Agreement(TypedDict):
    """One protocol the store holds at the grid's budgets, against the base protocol.

    protocol: the protocol (a sampling policy or pipeline tag)
    n_items: matched items
    n_excluded: items left out for lacking a response somewhere
    grid: the grid with each configuration replaced by its counterpart where there is one
    per_config: each replaced configuration
    kappa_pooled: Cohen's kappa over every replaced configuration (null when undefined)
    tag_changes: per trajectory tag, items carrying it under each protocol (empty without items)
    """

    protocol: str
    n_items: int
    n_excluded: int
    grid: list[str]
    per_config: list[ProtocolConfig]
    kappa_pooled: float | None
    tag_changes: dict[str, TagChange]


class ProtocolAgreement(Agreement):
    """A protocol's agreement with the base protocol, and what it recovers at the top budget.

    recovery: terminal regressions recovered at the top budget (null without a counterpart there)
    """

    recovery: Recovery | None


class EnqueueError(TypedDict):
    """A re-run request that could not be queued.

    item_id: the item
    error: why
    """

    item_id: str
    error: str


class Enqueued(TypedDict):
    """Re-runs queued for the terminal regressions (``--enqueue LABEL``).

    requested: requests made
    queued: jobs queued
    from_store: requests answered by a stored response
    job_ids: the jobs
    errors: requests refused
    """

    requested: int
    queued: int
    from_store: int
    job_ids: list[int]
    errors: list[EnqueueError]


class InterventionsAudit(TypedDict):
    """``trajaudit audit interventions --json``: agreement and recovery per protocol the store holds.

    model: the model
    grid: the base grid
    top: its costliest configuration
    base_protocol: the base grid's protocol
    protocols: one entry per other protocol
    enqueued: the re-runs queued (--enqueue only)
    """

    model: str
    grid: list[str]
    top: str
    base_protocol: str
    protocols: list[ProtocolAgreement]
    enqueued: NotRequired[Enqueued]


class IsoConfig(TypedDict):
    """One allocation of an iso-compute group.

    config: the configuration
    frames: its frames
    pixel_budget: frames x pixels per frame
    accuracy: its accuracy on the group's items
    unique_wins: items only it gets right
    """

    config: str
    frames: int
    pixel_budget: float
    accuracy: float
    unique_wins: int


class BestSingle(TypedDict):
    """The group's most accurate allocation.

    config: its label
    accuracy: its accuracy
    """

    config: str
    accuracy: float


class IsoGroup(TypedDict):
    """Allocations of (nearly) equal pixel budget on their matched items.

    configs: the allocations
    n_items: matched items
    n_excluded: items left out for lacking a response somewhere
    best_single: the most accurate allocation
    oracle_accuracy: share of items some allocation gets right
    complementarity: oracle_accuracy minus the best single accuracy
    patterns: items per set of allocations right ("all", "none" or "a+b")
    complementarity_ci: 95% bootstrap interval of complementarity (null with --bootstrap 0)
    """

    configs: list[IsoConfig]
    n_items: int
    n_excluded: int
    best_single: BestSingle
    oracle_accuracy: float
    complementarity: float
    patterns: dict[str, int]
    complementarity_ci: Interval | None


class IsocomputeAudit(TypedDict):
    """``trajaudit audit isocompute --json``: every iso-compute group of the model's configurations.

    model: the model
    tolerance: relative budget tolerance of a group
    default_pixels: pixels per frame of labels without "@<n>k" (null: such labels are not placed)
    groups: the groups found
    note: why there is none (only when none is found)
    """

    model: str
    tolerance: float
    default_pixels: int | None
    groups: list[IsoGroup]
    note: NotRequired[str]


class CrossTransition(Transition):
    """A transition from (model a, config a) to (model b, config b) on the same items.

    from_model: model a
    to_model: model b
    """

    from_model: str
    to_model: str


class FlowCounts(TypedDict):
    """Flows within one group of items.

    n: items in the group
    rescued: rescued items
    harmed: harmed items
    net: (rescued - harmed) / n
    churn: (rescued + harmed) / n
    mcnemar_p: McNemar p-value of rescued vs harmed
    """

    n: int
    rescued: int
    harmed: int
    net: float
    churn: float
    mcnemar_p: float


class BenchmarkFlows(FlowCounts):
    """Flows within one benchmark.

    benchmark: the benchmark
    """

    benchmark: str


class TaskTypeFlows(FlowCounts):
    """Flows within one task type.

    task_type: the task type ("(none)" for items without one)
    """

    task_type: str


class ItemRef(TypedDict):
    """An item of a flow (the Audits page adds task type and question).

    benchmark: the benchmark
    item_id: the item's id
    task_type: the task type (Audits page)
    question: the question text (Audits page)
    """

    benchmark: str
    item_id: str
    task_type: NotRequired[str | None]
    question: NotRequired[str | None]


class CrossmodelAudit(CrossTransition):
    """``trajaudit audit crossmodel --json``: flows between two models (or checkpoints) on the same items.

    n_items: matched items
    n_excluded: items left out for lacking a response somewhere
    accuracy_from: model a's accuracy at config a
    accuracy_to: model b's accuracy at config b
    by_benchmark: flows per benchmark
    by_task_type: flows per task type
    harmed_items: harmed items, at most --limit
    rescued_items: rescued items, at most --limit
    """

    n_items: int
    n_excluded: int
    accuracy_from: float
    accuracy_to: float
    by_benchmark: list[BenchmarkFlows]
    by_task_type: list[TaskTypeFlows]
    harmed_items: list[ItemRef]
    rescued_items: list[ItemRef]
