"""Pieces several reports share: the scope header, intervals, a transition, an item's metadata."""

from typing import NotRequired, TypedDict

Interval = tuple[float, float]
"""A 95% interval [lo, hi] (a JSON array of two numbers), in the unit of the number it qualifies."""

# Keys that are not Python names: a base in TypedDict's call syntax, described by each class using it.
From = TypedDict("From", {"from": str})


class ItemFilterSpec(TypedDict):
    """The sidebar's item filters (``backend.scope.filters.ItemFilter``); an empty list means no constraint.

    task_types: only items of these task types
    durations: only items of these duration categories
    domains: only items of these domains
    search: case-insensitive substring of question, options or item id (null: none)
    item_ids: only these item ids
    tags: only items carrying one of these annotation tags
    """

    task_types: list[str]
    durations: list[str]
    domains: list[str]
    search: str | None
    item_ids: list[str]
    tags: list[str]


class RunsInCell(TypedDict):
    """A (model, config) whose cells hold several runs (``backend.scope.runs``).

    model: the model
    config: the configuration
    runs: the runs stored there, first ingested first
    shown: the run the view reads there
    """

    model: str
    config: str
    runs: list[str]
    shown: str


class ScopeHeader(TypedDict):
    """Which grid, items and exclusions a report's numbers belong to (every view's ``scope`` key).

    benchmark: the one benchmark in scope (null only for a scope built without a store)
    benchmark_source: "given" (named with --benchmark) or "default" (not named: the largest benchmark the models share, as the dashboard opens)
    models: the models the items are matched over
    grid: the configurations of the grid, cheapest first
    grid_source: "default" (docs/metrics.md's default grid) or "given" (named with --grid)
    grid_excluded: configurations left out of the default grid, with the items each covers
    grid_excluded_why: why each of those was left out
    item_filter: the item filters applied
    tag: the trajectory tag items must carry (null: none)
    tag_model: the model whose trajectory the tag is read on (null without a tag)
    beyond_noise: true when flips within an item's repeat noise are left out
    include_reruns: true when live re-runs count as responses
    score_cutoff: how scored responses enter accuracy: "stored" (their stored correct), "none" (left out) or T (score >= T)
    run: the one run every cell is read from (--run; null: main, else the run ingested first)
    runs: the (model, config) pairs of the grid holding several runs, each with its runs and the run shown
    n_items: matched items (reports computed on a matrix)
    n_excluded: items left out for lacking a response at some (model, config) (reports computed on a matrix)
    """

    benchmark: str | None
    benchmark_source: str
    models: list[str]
    grid: list[str]
    grid_source: str
    grid_excluded: dict[str, int]
    grid_excluded_why: dict[str, str]
    item_filter: ItemFilterSpec
    tag: str | None
    tag_model: str | None
    beyond_noise: bool
    include_reruns: bool
    score_cutoff: str | float
    run: str | None
    runs: list[RunsInCell]
    n_items: NotRequired[int]
    n_excluded: NotRequired[int]


class Transition(From):
    """One transition ``a -> b`` on the matched items (docs/metrics.md): what flips, and whether by chance.

    from: configuration a
    to: configuration b
    rescued: items wrong at a and right at b
    harmed: items right at a and wrong at b
    net: (rescued - harmed) / items
    churn: (rescued + harmed) / items
    mcnemar_p: exact two-sided McNemar p-value of rescued vs harmed
    """

    to: str
    rescued: int
    harmed: int
    net: float
    churn: float
    mcnemar_p: float


class NoiseTransition(Transition):
    """A transition whose flips are split by the item's repeat noise (``backend.analysis.noise``).

    rescued_within: rescued items whose flip is within the item's repeat noise
    harmed_within: harmed items whose flip is within the item's repeat noise
    rescued_beyond: rescued items with repeats that never flip
    harmed_beyond: harmed items with repeats that never flip
    rescued_unmeasured: rescued items without repeats at either budget
    harmed_unmeasured: harmed items without repeats at either budget
    mcnemar_p_beyond: McNemar p-value of rescued vs harmed among the beyond-noise flips
    """

    rescued_within: int
    harmed_within: int
    rescued_beyond: int
    harmed_beyond: int
    rescued_unmeasured: int
    harmed_unmeasured: int
    mcnemar_p_beyond: float


class QuietTransition(NoiseTransition):
    """A transition counting only flips not within noise (``--beyond-noise``): rescued, harmed, net, churn, p redone.

    hidden_rescued: within-noise rescued flips left out
    hidden_harmed: within-noise harmed flips left out
    """

    hidden_rescued: int
    hidden_harmed: int


class ItemMeta(TypedDict):
    """One item's metadata as the matched matrix holds it (``items`` table columns).

    benchmark: the benchmark
    item_id: the item's id within the benchmark
    split: the benchmark split
    task_type: the task type (null: none given)
    duration: the duration category as the benchmark spells it
    domain: the domain
    sub_category: the sub-category
    question: the question text
    options: the options as stored (a JSON list of option texts)
    target: the right option letter (MCQA) or reference text (open-ended)
    answer_type: "mcqa" or "open"
    video: the video id or path under the video root
    duration_s: the video's length in seconds
    """

    benchmark: str
    item_id: str
    split: str | None
    task_type: str | None
    duration: str | None
    domain: str | None
    sub_category: str | None
    question: str | None
    options: str | None
    target: str | None
    answer_type: str | None
    video: str | None
    duration_s: float | None
