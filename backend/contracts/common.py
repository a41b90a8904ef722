"""Pieces several reports share: the scope header, intervals, a transition, an item's metadata."""

from __future__ import annotations

from typing import Annotated

from backend.contracts.base import UNSET, Contract, UnsetType, doc, field

Interval = tuple[float, float]
"""A 95% interval [lo, hi] (a JSON array of two numbers), in the unit of the number it qualifies."""


class ItemFilterSpec(Contract, kw_only=True):
    """The sidebar's item filters (``backend.scope.filters.ItemFilter``); an empty list means no constraint."""

    task_types: Annotated[list[str], doc("only items of these task types")]
    durations: Annotated[list[str], doc("only items of these duration categories")]
    domains: Annotated[list[str], doc("only items of these domains")]
    search: Annotated[str | None, doc("case-insensitive substring of question, options or item id (null: none)")]
    item_ids: Annotated[list[str], doc("only these item ids")]
    tags: Annotated[list[str], doc("only items carrying one of these annotation tags")]


class RunsInCell(Contract, kw_only=True):
    """A (model, config) whose cells hold several runs (``backend.scope.runs``)."""

    model: Annotated[str, doc("the model")]
    config: Annotated[str, doc("the configuration")]
    runs: Annotated[list[str], doc("the runs stored there, first ingested first")]
    shown: Annotated[str, doc("the run the view reads there")]


class ScopeHeader(Contract, kw_only=True):
    """Which grid, items and exclusions a report's numbers belong to (every view's ``scope`` key)."""

    benchmark: Annotated[str | None, doc("the one benchmark in scope (null only for a scope built without a store)")]
    benchmark_source: Annotated[
        str,
        doc(
            '"given" (named with --benchmark) or "default" (not named: the largest benchmark the models share, as the dashboard opens)'
        ),
    ]
    models: Annotated[list[str], doc("the models the items are matched over")]
    grid: Annotated[list[str], doc("the configurations of the grid, cheapest first")]
    grid_source: Annotated[str, doc('"default" (docs/metrics.md\'s default grid) or "given" (named with --grid)')]
    grid_excluded: Annotated[
        dict[str, int], doc("configurations left out of the default grid, with the items each covers")
    ]
    grid_excluded_why: Annotated[dict[str, str], doc("why each of those was left out")]
    item_filter: Annotated[ItemFilterSpec, doc("the item filters applied")]
    tag: Annotated[str | None, doc("the trajectory tag items must carry (null: none)")]
    tag_model: Annotated[str | None, doc("the model whose trajectory the tag is read on (null without a tag)")]
    beyond_noise: Annotated[bool, doc("true when flips within an item's repeat noise are left out")]
    include_reruns: Annotated[bool, doc("true when live re-runs count as responses")]
    score_cutoff: Annotated[
        str | float,
        doc(
            'how scored responses enter accuracy: "stored" (their stored correct), "none" (left out) or T (score >= T)'
        ),
    ]
    run: Annotated[
        str | None, doc("the one run every cell is read from (--run; null: main, else the run ingested first)")
    ]
    runs: Annotated[
        list[RunsInCell],
        doc("the (model, config) pairs of the grid holding several runs, each with its runs and the run shown"),
    ]
    n_items: Annotated[int | UnsetType, doc("matched items (reports computed on a matrix)")] = UNSET
    n_excluded: Annotated[
        int | UnsetType,
        doc("items left out for lacking a response at some (model, config) (reports computed on a matrix)"),
    ] = UNSET


class Transition(Contract, kw_only=True):
    """One transition ``a -> b`` on the matched items (docs/metrics.md): what flips, and whether by chance."""

    from_: Annotated[str, doc("configuration a")] = field(name="from")
    to: Annotated[str, doc("configuration b")]
    rescued: Annotated[int, doc("items wrong at a and right at b")]
    harmed: Annotated[int, doc("items right at a and wrong at b")]
    net: Annotated[float, doc("(rescued - harmed) / items")]
    churn: Annotated[float, doc("(rescued + harmed) / items")]
    mcnemar_p: Annotated[float, doc("exact two-sided McNemar p-value of rescued vs harmed")]


class QuietTransition(Transition, kw_only=True):
    """A transition with, where noise is asked about, its flips split by the item's repeat noise: ``audit noise``
    (every flip counted, the split set) and ``metrics --beyond-noise`` (only flips not within noise counted: rescued,
    harmed, net, churn and p redone; the split and the hidden flips set); without either, none of the fields below.

    One class, not a union of a plain and a split transition: msgspec takes a union of objects only with a tag
    key, which the JSON does not have."""

    rescued_within: Annotated[int | UnsetType, doc("rescued flips within the item's repeat noise")] = UNSET
    harmed_within: Annotated[int | UnsetType, doc("harmed flips within the item's repeat noise")] = UNSET
    rescued_beyond: Annotated[int | UnsetType, doc("rescued items with repeats that never flip")] = UNSET
    harmed_beyond: Annotated[int | UnsetType, doc("harmed items with repeats that never flip")] = UNSET
    rescued_unmeasured: Annotated[int | UnsetType, doc("rescued items without repeats at either budget")] = UNSET
    harmed_unmeasured: Annotated[int | UnsetType, doc("harmed items without repeats at either budget")] = UNSET
    mcnemar_p_beyond: Annotated[float | UnsetType, doc("McNemar p-value among the beyond-noise flips")] = UNSET
    hidden_rescued: Annotated[int | UnsetType, doc("within-noise rescued flips left out (--beyond-noise)")] = UNSET
    hidden_harmed: Annotated[int | UnsetType, doc("within-noise harmed flips left out (--beyond-noise)")] = UNSET


class ItemMeta(Contract, kw_only=True):
    """One item's metadata as the matched matrix holds it (``items`` table columns)."""

    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item's id within the benchmark")]
    split: Annotated[str | None, doc("the benchmark split")]
    task_type: Annotated[str | None, doc("the task type (null: none given)")]
    duration: Annotated[str | None, doc("the duration category as the benchmark spells it")]
    domain: Annotated[str | None, doc("the domain")]
    sub_category: Annotated[str | None, doc("the sub-category")]
    question: Annotated[str | None, doc("the question text")]
    options: Annotated[str | None, doc("the options as stored (a JSON list of option texts)")]
    target: Annotated[str | None, doc("the right option letter (MCQA) or reference text (open-ended)")]
    answer_type: Annotated[str | None, doc('"mcqa" or "open"')]
    video: Annotated[str | None, doc("the video id or path under the video root")]
    duration_s: Annotated[float | None, doc("the video's length in seconds")]
