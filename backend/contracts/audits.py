"""The audits (the Audits page): ``trajaudit audit noise|interventions|isocompute|crossmodel --json``."""

from __future__ import annotations

from typing import Annotated

from backend.contracts.base import UNSET, Contract, UnsetType, doc
from backend.contracts.common import Interval, QuietTransition, Transition


class NoiseConfig(Contract, kw_only=True):
    """Repeat noise at one configuration's budget."""

    config: Annotated[str, doc("the configuration")]
    max_repeats: Annotated[int, doc("most responses any item has at its budget")]
    n_items_measured: Annotated[int, doc("items with at least two repeats there")]
    mean_flip_rate: Annotated[float | None, doc("mean chance that two repeats disagree (null: none measured)")]
    share_noisy: Annotated[float | None, doc("share of measured items that flip under repeats (null: none measured)")]


class NoiseAudit(Contract, kw_only=True):
    """``trajaudit audit noise --json``: per configuration and per item noise, transitions split by it."""

    model: Annotated[str, doc("the model")]
    grid: Annotated[list[str], doc("the configurations")]
    n_items: Annotated[int, doc("matched items")]
    n_items_with_repeats: Annotated[int, doc("items with at least two repeats at some budget")]
    n_items_noisy: Annotated[int, doc("items that flip under repeats somewhere")]
    mean_item_flip_rate: Annotated[
        float | None, doc("mean over measured items of their mean flip rate (null: none measured)")
    ]
    per_config: Annotated[list[NoiseConfig], doc("noise per configuration")]
    transitions: Annotated[
        list[QuietTransition], doc("consecutive transitions, flips split within / beyond / unmeasured noise")
    ]


class ProtocolConfig(Contract, kw_only=True):
    """One configuration of the base grid against its counterpart under another protocol."""

    config: Annotated[str, doc("the base configuration")]
    counterpart: Annotated[str, doc("the same budget under the protocol")]
    kappa: Annotated[float | None, doc("Cohen's kappa of correctness (null when undefined)")]
    agreement: Annotated[float | None, doc("share of items with the same correctness (null without items)")]
    rescued: Annotated[int, doc("items wrong at config and right at counterpart")]
    harmed: Annotated[int, doc("items right at config and wrong at counterpart")]


class TagChange(Contract, kw_only=True):
    """Items carrying one trajectory tag under each protocol."""

    base: Annotated[int, doc("under the base protocol")]
    protocol: Annotated[int, doc("under the other protocol")]
    both: Annotated[int, doc("under both")]
    gained: Annotated[int, doc("under the other protocol only")]
    lost: Annotated[int, doc("under the base protocol only")]


class Recovery(Contract, kw_only=True):
    """The base grid's terminal regressions when the top budget is run under another protocol."""

    policy: Annotated[str, doc("the top budget's label under that protocol")]
    protocol: Annotated[str, doc("the protocol")]
    n_items: Annotated[int, doc("matched items")]
    n_excluded: Annotated[int, doc("items left out for lacking a response somewhere")]
    n_terminal: Annotated[int, doc("terminal regressions under the base protocol")]
    n_recovered: Annotated[int, doc("of those, items right under the other protocol")]
    recovery_rate: Annotated[float | None, doc("n_recovered / n_terminal (null without terminal regressions)")]
    harm_rate: Annotated[
        float | None,
        doc("among items right at the base top, the share the other protocol gets wrong (null: none right)"),
    ]
    kappa_top: Annotated[float | None, doc("Cohen's kappa at the top budget (null when undefined)")]
    recovery_ci: Annotated[
        Interval | None, doc("95% bootstrap interval of recovery_rate (null without bootstrap or regressions)")
    ]
    recovery_wilson: Annotated[Interval | None, doc("Wilson 95% interval of recovery_rate (null without regressions)")]


class Agreement(Contract, kw_only=True):
    """One protocol the store holds at the grid's budgets, against the base protocol."""

    protocol: Annotated[str, doc("the protocol (a sampling policy or pipeline tag)")]
    n_items: Annotated[int, doc("matched items")]
    n_excluded: Annotated[int, doc("items left out for lacking a response somewhere")]
    grid: Annotated[list[str], doc("the grid with each configuration replaced by its counterpart where there is one")]
    per_config: Annotated[list[ProtocolConfig], doc("each replaced configuration")]
    kappa_pooled: Annotated[float | None, doc("Cohen's kappa over every replaced configuration (null when undefined)")]
    tag_changes: Annotated[
        dict[str, TagChange], doc("per trajectory tag, items carrying it under each protocol (empty without items)")
    ]


class ProtocolAgreement(Agreement, kw_only=True):
    """A protocol's agreement with the base protocol, and what it recovers at the top budget."""

    recovery: Annotated[
        Recovery | None, doc("terminal regressions recovered at the top budget (null without a counterpart there)")
    ]


class EnqueueError(Contract, kw_only=True):
    """A re-run request that could not be queued."""

    item_id: Annotated[str, doc("the item")]
    error: Annotated[str, doc("why")]


class Enqueued(Contract, kw_only=True):
    """Re-runs queued for the terminal regressions (``--enqueue LABEL``)."""

    requested: Annotated[int, doc("requests made")]
    queued: Annotated[int, doc("jobs queued")]
    from_store: Annotated[int, doc("requests answered by a stored response")]
    job_ids: Annotated[list[int], doc("the jobs")]
    errors: Annotated[list[EnqueueError], doc("requests refused")]


class InterventionsAudit(Contract, kw_only=True):
    """``trajaudit audit interventions --json``: agreement and recovery per protocol the store holds."""

    model: Annotated[str, doc("the model")]
    grid: Annotated[list[str], doc("the base grid")]
    top: Annotated[str, doc("its costliest configuration")]
    base_protocol: Annotated[str, doc("the base grid's protocol")]
    protocols: Annotated[list[ProtocolAgreement], doc("one entry per other protocol")]
    enqueued: Annotated[Enqueued | UnsetType, doc("the re-runs queued (--enqueue only)")] = UNSET


class IsoConfig(Contract, kw_only=True):
    """One allocation of an iso-compute group."""

    config: Annotated[str, doc("the configuration")]
    frames: Annotated[int, doc("its frames")]
    pixel_budget: Annotated[float, doc("frames x pixels per frame")]
    accuracy: Annotated[float, doc("its accuracy on the group's items")]
    unique_wins: Annotated[int, doc("items only it gets right")]


class BestSingle(Contract, kw_only=True):
    """The group's most accurate allocation."""

    config: Annotated[str, doc("its label")]
    accuracy: Annotated[float, doc("its accuracy")]


class IsoGroup(Contract, kw_only=True):
    """Allocations of (nearly) equal pixel budget on their matched items."""

    configs: Annotated[list[IsoConfig], doc("the allocations")]
    n_items: Annotated[int, doc("matched items")]
    n_excluded: Annotated[int, doc("items left out for lacking a response somewhere")]
    best_single: Annotated[BestSingle, doc("the most accurate allocation")]
    oracle_accuracy: Annotated[float, doc("share of items some allocation gets right")]
    complementarity: Annotated[float, doc("oracle_accuracy minus the best single accuracy")]
    patterns: Annotated[dict[str, int], doc('items per set of allocations right ("all", "none" or "a+b")')]
    complementarity_ci: Annotated[
        Interval | None, doc("95% bootstrap interval of complementarity (null with --bootstrap 0)")
    ]


class IsocomputeAudit(Contract, kw_only=True):
    """``trajaudit audit isocompute --json``: every iso-compute group of the model's configurations."""

    model: Annotated[str, doc("the model")]
    tolerance: Annotated[float, doc("relative budget tolerance of a group")]
    default_pixels: Annotated[
        int | None, doc('pixels per frame of labels without "@<n>k" (null: such labels are not placed)')
    ]
    groups: Annotated[list[IsoGroup], doc("the groups found")]
    note: Annotated[str | UnsetType, doc("why there is none (only when none is found)")] = UNSET


class CrossTransition(Transition, kw_only=True):
    """A transition from (model a, config a) to (model b, config b) on the same items."""

    from_model: Annotated[str, doc("model a")]
    to_model: Annotated[str, doc("model b")]


class FlowCounts(Contract, kw_only=True):
    """Flows within one group of items."""

    n: Annotated[int, doc("items in the group")]
    rescued: Annotated[int, doc("rescued items")]
    harmed: Annotated[int, doc("harmed items")]
    net: Annotated[float, doc("(rescued - harmed) / n")]
    churn: Annotated[float, doc("(rescued + harmed) / n")]
    mcnemar_p: Annotated[float, doc("McNemar p-value of rescued vs harmed")]


class BenchmarkFlows(FlowCounts, kw_only=True):
    """Flows within one benchmark."""

    benchmark: Annotated[str, doc("the benchmark")]


class TaskTypeFlows(FlowCounts, kw_only=True):
    """Flows within one task type."""

    task_type: Annotated[str, doc('the task type ("(none)" for items without one)')]


class ItemRef(Contract, kw_only=True):
    """An item of a flow (the Audits page adds task type and question)."""

    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item's id")]
    task_type: Annotated[str | None | UnsetType, doc("the task type (Audits page)")] = UNSET
    question: Annotated[str | None | UnsetType, doc("the question text (Audits page)")] = UNSET


class CrossmodelAudit(CrossTransition, kw_only=True):
    """``trajaudit audit crossmodel --json``: flows between two models (or checkpoints) on the same items."""

    n_items: Annotated[int, doc("matched items")]
    n_excluded: Annotated[int, doc("items left out for lacking a response somewhere")]
    accuracy_from: Annotated[float, doc("model a's accuracy at config a")]
    accuracy_to: Annotated[float, doc("model b's accuracy at config b")]
    by_benchmark: Annotated[list[BenchmarkFlows], doc("flows per benchmark")]
    by_task_type: Annotated[list[TaskTypeFlows], doc("flows per task type")]
    harmed_items: Annotated[list[ItemRef], doc("harmed items, at most --limit")]
    rescued_items: Annotated[list[ItemRef], doc("rescued items, at most --limit")]
