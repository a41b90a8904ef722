"""``trajaudit explain --json``: what a flow, a tag or a list of items has in common (``backend.analysis.explain``)."""

from typing import Literal, TypedDict

from backend.contracts.common import Interval, ScopeHeader

TargetKind = Literal["flow", "state", "tag", "items"]


class ExplainTarget(TypedDict):
    """What is explained.

    kind: "flow", "state" (a Sankey node), "tag" or "items"
    args: flow: [from, to, kind]; state: [config, correct|wrong]; tag: [tag]; items: the listed ids
    describe: how the pages name it
    """

    kind: TargetKind
    args: list[str]
    describe: str


class ExplainSlice(TypedDict):
    """One slice of the scope (one attribute value, or two) against the selection.

    attributes: the attributes fixed (one or two)
    values: their values, in the same order
    label: "attribute = value" joined by " & "
    n_slice: scope items in the slice
    n_selected: of them, the selected ones
    rate: n_selected / n_slice
    base_rate: the selection's share of the whole scope
    lift: rate / base_rate
    lift_ci: the rate's Wilson 95% interval over base_rate (null: empty slice)
    diff: rate minus the rate in the rest of the scope
    diff_ci: Newcombe's hybrid score 95% interval of diff (null when the slice is the whole scope)
    p: Fisher's exact two-sided p of the 2x2 table slice/rest x selected/not
    q: Benjamini-Hochberg q over every slice tested (n_tests)
    survives: q under the verdict's q_level (0.05): the slices the chart highlights
    small: n_slice under min_size (ranked after every other slice)
    item_ids: the selected items in the slice, for its link (null above 500)
    """

    attributes: list[str]
    values: list[str]
    label: str
    n_slice: int
    n_selected: int
    rate: float | None
    base_rate: float | None
    lift: float | None
    lift_ci: Interval | None
    diff: float | None
    diff_ci: Interval | None
    p: float
    q: float
    survives: bool
    small: bool
    item_ids: list[str] | None


class Verdict(TypedDict):
    """How many slices survive the Benjamini-Hochberg correction: the panel's first line.

    q_level: the level a slice's q must be under to survive (0.05)
    n_surviving: slices tested (single values and pairs, every one, not only those listed) whose q is under it
    n_tests: slices in the family (the report's n_tests)
    text: the sentence, e.g. "No slice survives Benjamini-Hochberg at q < 0.05 (112 tested)"
    """

    q_level: float
    n_surviving: int
    n_tests: int
    text: str


class ParserEffects(TypedDict):
    """Selected items whose raw output could not be read as a letter (parser, not vision).

    configs: the configurations checked (a flow's two, else the grid)
    empty: items with an empty (or whitespace) raw output there
    degenerate: items with one character repeated (two or more) there
    unparsed: items with text but no letter extracted there
    affected: items with any of the three
    excluded: true when --exclude-unparsed left the affected items out of the selection
    """

    configs: list[str]
    empty: int
    degenerate: int
    unparsed: int
    affected: int
    excluded: bool


class LetterPrior(TypedDict):
    """The chosen letters at one configuration against the targets' letters.

    config: the configuration
    chosen: items per chosen letter
    no_answer: items with no letter extracted
    chi2: chi-square statistic of the 2 x letters table chosen vs targets (null: fewer than two letters)
    dof: its degrees of freedom
    p: its p-value
    """

    config: str
    chosen: dict[str, int]
    no_answer: int
    chi2: float | None
    dof: int | None
    p: float | None


# "from" is not a Python name: a base in TypedDict's call syntax, described by AnswerMoves.
AnswerMovesFrom = TypedDict("AnswerMovesFrom", {"from": dict[str, int]})


class AnswerMoves(AnswerMovesFrom):
    """Where a flow's answers went: the letter at each side.

    from: items per letter ("no answer" included) at the flow's first configuration
    to: the same at its second configuration
    to_target: items whose answer at the second configuration is the target
    to_other_letter: items moved to another letter
    to_no_answer: items with no letter at the second configuration
    same_letter: items with the same letter at both sides
    """

    to: dict[str, int]
    to_target: int
    to_other_letter: int
    to_no_answer: int
    same_letter: int


class AnswerBehaviour(TypedDict):
    """The letter prior per configuration and, for a flow, where its answers went.

    letters: the option letters in play
    targets: items per target letter
    prior: per configuration, chosen letters vs targets
    moved: a flow's answer moves (null for a tag or items)
    """

    letters: list[str]
    targets: dict[str, int]
    prior: list[LetterPrior]
    moved: AnswerMoves | None


class AgreementPair(TypedDict):
    """Two models' selections (the same flow or tag) on the matched items.

    a: the first model
    b: the second model
    n_a: items selected in a
    n_b: items selected in b
    overlap: items selected in both
    expected: the hypergeometric expectation of the overlap, n_a n_b / N
    p: upper-tail hypergeometric p, P[overlap >= observed]
    jaccard: overlap / items selected in either (null: none)
    kappa: Cohen's kappa of the two selections (null: undefined)
    """

    a: str
    b: str
    n_a: int
    n_b: int
    overlap: int
    expected: float
    p: float
    jaccard: float | None
    kappa: float | None


class Agreement(TypedDict):
    """The same flow, state or tag across the scope's models.

    models: the models
    pairs: every pair of models
    n_every: items selected in every model
    every: those items' ids (at most 500), a selection to open
    """

    models: list[str]
    pairs: list[AgreementPair]
    n_every: int
    every: list[str]


class Explanation(TypedDict):
    """What ``backend.analysis.explain.report`` computes: ``ExplainReport`` without its scope.

    model: the model whose flow, tag or items are explained
    target: what is explained
    n_scope: items in the scope (the matched items)
    n_selected: items selected (after --exclude-unparsed)
    base_rate: n_selected / n_scope
    min_size: slices of fewer scope items are marked small
    n_tests: slices in the Benjamini-Hochberg family (single values plus every value pair of min_size items)
    verdict: how many slices survive Benjamini-Hochberg at q < 0.05, in a sentence
    pair_search: how the two-attribute slices were found (null with --no-pairs)
    attributes: the attributes tested (those with two values or more)
    slices: single-attribute slices, best first, at most --top
    pairs: two-attribute slices, best first, at most --top
    parser: selected items whose raw output was empty, degenerate or unparsed
    answers: the letter prior and a flow's answer moves
    agreement: the same selection across models (two models or more; null for listed items)
    untested: what could not be tested here, and why (e.g. no item attribute to slice by)
    """

    model: str
    target: ExplainTarget
    n_scope: int
    n_selected: int
    base_rate: float | None
    min_size: int
    n_tests: int
    verdict: Verdict
    pair_search: str | None
    attributes: list[str]
    slices: list[ExplainSlice]
    pairs: list[ExplainSlice]
    parser: ParserEffects
    answers: AnswerBehaviour
    agreement: Agreement | None
    untested: list[str]


class ExplainReport(Explanation):
    """The "Why these items?" panel and ``trajaudit explain --json``.

    scope: the scope these numbers belong to
    """

    scope: ScopeHeader
