"""``trajaudit explain --json``: what a flow, a tag or a list of items has in common (``backend.analysis.explain``)."""

from __future__ import annotations

from typing import Annotated, Literal

from backend.contracts.base import Contract, doc, field
from backend.contracts.common import Interval, ScopeHeader

TargetKind = Literal["flow", "state", "tag", "items"]


class ExplainTarget(Contract, kw_only=True):
    """What is explained."""

    kind: Annotated[TargetKind, doc('"flow", "state" (a Sankey node), "tag" or "items"')]
    args: Annotated[
        list[str],
        doc("flow: [from, to, kind]; state: [config, correct|wrong]; tag: [tag]; items: the listed ids"),
    ]
    describe: Annotated[str, doc("how the pages name it")]


class ExplainSlice(Contract, kw_only=True):
    """One slice of the scope (one attribute value, or two) against the selection."""

    attributes: Annotated[list[str], doc("the attributes fixed (one or two)")]
    values: Annotated[list[str], doc("their values, in the same order")]
    label: Annotated[str, doc('"attribute = value" joined by " & "')]
    n_slice: Annotated[int, doc("scope items in the slice")]
    n_selected: Annotated[int, doc("of them, the selected ones")]
    rate: Annotated[float | None, doc("n_selected / n_slice")]
    base_rate: Annotated[float | None, doc("the selection's share of the whole scope")]
    lift: Annotated[float | None, doc("rate / base_rate")]
    lift_ci: Annotated[Interval | None, doc("the rate's Wilson 95% interval over base_rate (null: empty slice)")]
    diff: Annotated[float | None, doc("rate minus the rate in the rest of the scope")]
    diff_ci: Annotated[
        Interval | None,
        doc("Newcombe's hybrid score 95% interval of diff (null when the slice is the whole scope)"),
    ]
    p: Annotated[float, doc("Fisher's exact two-sided p of the 2x2 table slice/rest x selected/not")]
    q: Annotated[float, doc("Benjamini-Hochberg q over every slice tested (n_tests)")]
    survives: Annotated[bool, doc("q under the verdict's q_level (0.05): the slices the chart highlights")]
    small: Annotated[bool, doc("n_slice under min_size (ranked after every other slice)")]
    item_ids: Annotated[list[str] | None, doc("the selected items in the slice, for its link (null above 500)")]


class Verdict(Contract, kw_only=True):
    """How many slices survive the Benjamini-Hochberg correction: the panel's first line."""

    q_level: Annotated[float, doc("the level a slice's q must be under to survive (0.05)")]
    n_surviving: Annotated[
        int,
        doc("slices tested (single values and pairs, every one, not only those listed) whose q is under it"),
    ]
    n_tests: Annotated[int, doc("slices in the family (the report's n_tests)")]
    text: Annotated[str, doc('the sentence, e.g. "No slice survives Benjamini-Hochberg at q < 0.05 (112 tested)"')]


class ParserEffects(Contract, kw_only=True):
    """Selected items whose raw output could not be read as a letter (parser, not vision)."""

    configs: Annotated[list[str], doc("the configurations checked (a flow's two, else the grid)")]
    empty: Annotated[int, doc("items with an empty (or whitespace) raw output there")]
    degenerate: Annotated[int, doc("items with one character repeated (two or more) there")]
    unparsed: Annotated[int, doc("items with text but no letter extracted there")]
    affected: Annotated[int, doc("items with any of the three")]
    excluded: Annotated[bool, doc("true when --exclude-unparsed left the affected items out of the selection")]


class LetterPrior(Contract, kw_only=True):
    """The chosen letters at one configuration against the targets' letters."""

    config: Annotated[str, doc("the configuration")]
    chosen: Annotated[dict[str, int], doc("items per chosen letter")]
    no_answer: Annotated[int, doc("items with no letter extracted")]
    chi2: Annotated[
        float | None,
        doc("chi-square statistic of the 2 x letters table chosen vs targets (null: fewer than two letters)"),
    ]
    dof: Annotated[int | None, doc("its degrees of freedom")]
    p: Annotated[float | None, doc("its p-value")]


class AnswerMoves(Contract, kw_only=True):
    """Where a flow's answers went: the letter at each side."""

    from_: Annotated[
        dict[str, int], doc('items per letter ("no answer" included) at the flow\'s first configuration')
    ] = field(name="from")
    to: Annotated[dict[str, int], doc("the same at its second configuration")]
    to_target: Annotated[int, doc("items whose answer at the second configuration is the target")]
    to_other_letter: Annotated[int, doc("items moved to another letter")]
    to_no_answer: Annotated[int, doc("items with no letter at the second configuration")]
    same_letter: Annotated[int, doc("items with the same letter at both sides")]


class AnswerBehaviour(Contract, kw_only=True):
    """The letter prior per configuration and, for a flow, where its answers went."""

    letters: Annotated[list[str], doc("the option letters in play")]
    targets: Annotated[dict[str, int], doc("items per target letter")]
    prior: Annotated[list[LetterPrior], doc("per configuration, chosen letters vs targets")]
    moved: Annotated[AnswerMoves | None, doc("a flow's answer moves (null for a tag or items)")]


class AgreementPair(Contract, kw_only=True):
    """Two models' selections (the same flow or tag) on the matched items."""

    a: Annotated[str, doc("the first model")]
    b: Annotated[str, doc("the second model")]
    n_a: Annotated[int, doc("items selected in a")]
    n_b: Annotated[int, doc("items selected in b")]
    overlap: Annotated[int, doc("items selected in both")]
    expected: Annotated[float, doc("the hypergeometric expectation of the overlap, n_a n_b / N")]
    p: Annotated[float, doc("upper-tail hypergeometric p, P[overlap >= observed]")]
    jaccard: Annotated[float | None, doc("overlap / items selected in either (null: none)")]
    kappa: Annotated[float | None, doc("Cohen's kappa of the two selections (null: undefined)")]


class Agreement(Contract, kw_only=True):
    """The same flow, state or tag across the scope's models."""

    models: Annotated[list[str], doc("the models")]
    pairs: Annotated[list[AgreementPair], doc("every pair of models")]
    n_every: Annotated[int, doc("items selected in every model")]
    every: Annotated[list[str], doc("those items' ids (at most 500), a selection to open")]


class Explanation(Contract, kw_only=True):
    """What ``backend.analysis.explain.report`` computes: ``ExplainReport`` without its scope."""

    model: Annotated[str, doc("the model whose flow, tag or items are explained")]
    target: Annotated[ExplainTarget, doc("what is explained")]
    n_scope: Annotated[int, doc("items in the scope (the matched items)")]
    n_selected: Annotated[int, doc("items selected (after --exclude-unparsed)")]
    base_rate: Annotated[float | None, doc("n_selected / n_scope")]
    min_size: Annotated[int, doc("slices of fewer scope items are marked small")]
    n_tests: Annotated[
        int,
        doc("slices in the Benjamini-Hochberg family (single values plus every value pair of min_size items)"),
    ]
    verdict: Annotated[Verdict, doc("how many slices survive Benjamini-Hochberg at q < 0.05, in a sentence")]
    pair_search: Annotated[str | None, doc("how the two-attribute slices were found (null with --no-pairs)")]
    attributes: Annotated[list[str], doc("the attributes tested (those with two values or more)")]
    slices: Annotated[list[ExplainSlice], doc("single-attribute slices, best first, at most --top")]
    pairs: Annotated[list[ExplainSlice], doc("two-attribute slices, best first, at most --top")]
    parser: Annotated[ParserEffects, doc("selected items whose raw output was empty, degenerate or unparsed")]
    answers: Annotated[AnswerBehaviour, doc("the letter prior and a flow's answer moves")]
    agreement: Annotated[
        Agreement | None,
        doc("the same selection across models (two models or more; null for listed items)"),
    ]
    untested: Annotated[list[str], doc("what could not be tested here, and why (e.g. no item attribute to slice by)")]


class ExplainReport(Explanation, kw_only=True):
    """The "Why these items?" panel and ``trajaudit explain --json``."""

    scope: Annotated[ScopeHeader, doc("the scope these numbers belong to")]
