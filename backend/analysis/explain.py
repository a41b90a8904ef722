"""Why these items? What a selection (a flow, a tag, a list of items) has in common, against its scope.

A researcher sees *that* 129 items were harmed between 8f and 32f; the next question is what they share.
Every function here is a pure function of the matched matrix's frames and arrays (``backend.views.explain_view``
does the store reads), so the page, the CLI twin and the report compute the same numbers.

**Slices.** Every item of the scope has a value per attribute (task type, duration, domain, sub-category,
target letter, number of options, binned question length, binned video duration, annotation tags). For
each value ``v`` the 2x2 table (in slice / rest of the scope) x (selected / not) gives ``n_slice``,
``n_selected``, ``rate = n_selected / n_slice``, ``base_rate`` (the selection's share of the whole scope),
``lift = rate / base_rate``, the difference ``rate - rate_rest`` (``rate_rest``: the rest of the scope)
with **Newcombe's hybrid score interval** (his method 10: built from the two Wilson intervals), Fisher's
exact two-sided ``p`` (``scipy.stats.fisher_exact``, one call per slice, never per item) and a
Benjamini-Hochberg ``q`` over every slice tested. A slice *survives* when its q is under ``Q_LEVEL`` (0.05); the
report's ``verdict`` counts them over every slice tested ("No slice survives ..."), and only they are highlighted. Slices smaller than ``min_size`` are marked ``small``
and ranked after every well-supported one (their q is still computed: they count as tests).

**Two-attribute slices** come from sliceline (``sliceline`` 0.3.0, Sagadeeva and Boehm, SIGMOD 2021, the
algorithm behind Apache SystemDS' slice finder), chosen over pysubgroup because pysubgroup 0.9.0 requires
``numpy<2`` (the project pins numpy 2.4.6) and pulls matplotlib and statsmodels, while sliceline installs
against the pinned numpy/scipy/scikit-learn with no other dependency.
Sliceline scores slices by size and "error" (here: being selected) with pruning, so it *proposes* the
enriched pairs; each proposed pair is then given the same exact statistics as a single slice, on every item.
Its search costs time linear in the items (figure: benchmarks/README.md), so a scope over ``PAIR_SAMPLE`` items is searched
on a seeded sample of that many (its minimum support scaled to match); only which pairs are proposed can
depend on the sample, never a reported number. Its BH family is conservative: every pair of values with at
least ``min_size`` items counts as a test (pairs sliceline did not report enter at p = 1, which can only raise
the others' q).

**Answer behaviour.** Per configuration, the chosen letters against the targets' letters (the letter
prior), tested for homogeneity with a chi-square test; for a flow, which letter (or no answer) its items
moved to. Raw outputs that are empty, degenerate (one character repeated, e.g. ``"AAAA"``) or unparseable
(text but no letter) are counted apart: a flip caused by the parser is not a flip caused by vision.

**Agreement across models.** The same flow or tag in every model of the scope: pairwise overlap against the
hypergeometric expectation (with its upper-tail p), Jaccard and Cohen's kappa, and the items selected in
every model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from backend.analysis.interventions import cohen_kappa
from backend.analysis.metrics import flow_mask
from backend.analysis.stats import wilson_interval
from backend.analysis.target import Target
from backend.contracts.explain import (
    Agreement,
    AgreementPair,
    AnswerBehaviour,
    AnswerMoves,
    ExplainSlice,
    ExplainTarget,
    Explanation,
    LetterPrior,
    ParserEffects,
    Verdict,
)
from backend.scope.answer_cells import AnswerCells
from backend.scope.matrix import Matrix
from backend.scope.tags import tag_masks
from store.errors import UserError

MIN_SIZE = 30  # slices of fewer scope items are marked small and ranked after the rest
Q_LEVEL = 0.05  # a slice "survives" when its BH q is under this: the verdict counts them, the chart highlights them
# An attribute with more values than this is free text (an open-ended reference, a question id), not a category:
# slicing it would test thousands of one-item slices and push every q towards 1 (issue 35). It is not sliced,
# and ``untested`` says so.
MAX_VALUES = 50
NONE = "(none)"
# Attribute -> what it is (the panel names them so), in the order ``attribute_table`` derives them.
ATTRIBUTES: dict[str, str] = {
    "task_type": "task type",
    "duration": "duration category",
    "domain": "domain",
    "sub_category": "sub-category",
    "target": "target letter",
    "n_options": "number of options",
    "question_length": "question length (characters, binned)",
    "video_duration": "video duration (binned)",
    "video_fps": "video frame rate (binned; from the linked file)",
    "annotation_tag": "annotation tag (an item may carry several)",
}


def plain(attribute: str) -> str:
    """An attribute's plain name for a slice label ("task type", not ``task_type``): its description, unqualified."""
    return ATTRIBUTES.get(attribute, attribute).split(" (")[0]


CHAR_BINS = (-np.inf, 50, 100, 200, np.inf)  # question characters: up to 50, 51-100, 101-200, over 200
SECOND_BINS = (-np.inf, 60, 180, 600, 1800, np.inf)  # video seconds: up to 1 min, 1-3, 3-10, 10-30, over 30 min
SECOND_LABELS = ("<= 1 min", "1-3 min", "3-10 min", "10-30 min", "> 30 min")
FPS_BINS = (-np.inf, 20, 26, 31, np.inf)  # frames per second: 24 and 25 apart from 29.97 and 30, and from 50-60
FPS_LABELS = ("< 20 fps", "20-26 fps", "26-31 fps", "> 31 fps")
CHAR_LABELS = ("<= 50 chars", "51-100 chars", "101-200 chars", "> 200 chars")
PAIR_SAMPLE = 50_000  # sliceline searches a seeded sample of this many items in larger scopes (module docstring)


def pair_search(n_items: int) -> str:
    """How the pairs were found, as the report states it."""
    where = f"a seeded sample of {PAIR_SAMPLE:,} of the {n_items:,} items" if n_items > PAIR_SAMPLE else "every item"
    return f"sliceline 0.3.0 (max_l=2, alpha=0.95) on {where}; every pair it proposes is scored exactly on all items"


@dataclass(frozen=True)
class Attribute:
    """One attribute of the scope's items: a value code per item and the values' names (single-valued),
    or a boolean matrix item x value (multi-valued: annotation tags)."""

    name: str
    values: list[str]
    codes: np.ndarray | None = None  # [I] int, index into values
    members: np.ndarray | None = None  # [I, V] bool (multi-valued)

    def masks(self) -> np.ndarray:
        """``[V, I]``: item in slice of each value."""
        if self.members is not None:
            return self.members.T
        assert self.codes is not None  # an attribute has codes or members (Attribute's two shapes)
        return self.codes[None, :] == np.arange(len(self.values))[:, None]


Coded = tuple[np.ndarray, list[str]]  # a code per item into the value names


def _factor(values: pd.Series, keep: np.ndarray | None = None) -> Coded:
    """Codes into the sorted distinct values of the ``keep`` items; missing ones (and items outside ``keep``,
    whose values are never named: no empty slice) under "(none)"."""
    codes, names = pd.factorize(values if keep is None else values.where(keep), sort=True)
    return _with_none(codes.astype(np.int64), [str(n) for n in names], codes < 0)


def _with_none(codes: np.ndarray, names: list[str], missing: np.ndarray) -> Coded:
    """``codes`` with the ``missing`` items moved to a last value "(none)" (added only when some are missing)."""
    if missing.any():
        codes = np.where(missing, len(names), codes)
        names = [*names, NONE]
    return codes, names


def _binned(x: np.ndarray, edges: tuple, labels: tuple[str, ...]) -> Coded:
    """Bins ``(edges[k], edges[k + 1]]`` of the numbers ``x``; NaN under "(none)". Only bins some item falls in."""
    x = np.asarray(x, dtype=float)
    raw = np.searchsorted(np.asarray(edges[1:-1], dtype=float), x, side="left")  # bin k: edges[k] < x <= edges[k+1]
    missing = np.isnan(x)
    used = np.flatnonzero(np.bincount(raw[~missing], minlength=len(labels)))
    remap = np.full(len(labels), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return _with_none(remap[raw].astype(np.int64), [labels[k] for k in used], missing)


def _text_length(text: pd.Series) -> np.ndarray:
    """Characters per text (NaN: none), from the Arrow offsets: characters, not words (counting words splits
    every string, a cost that grows with the questions, where the length is free)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = pc.utf8_length(pa.array(text.astype("string[pyarrow]").array))
    return lengths.to_numpy(zero_copy_only=False).astype(float)


def _option_counts(options: pd.Series) -> Coded:
    """Options per item from the stored JSON list, parsed once per distinct list (not once per item)."""
    import json

    codes, uniques = pd.factorize(options)

    def count(text: str) -> float:
        try:
            parsed = json.loads(text)
        except (TypeError, ValueError):
            return np.nan
        return float(len(parsed)) if isinstance(parsed, list) else np.nan

    per_unique = np.array([count(u) for u in uniques] + [np.nan], dtype=float)
    n = per_unique[codes]  # code -1 (no options) takes the appended NaN
    values = np.unique(n[~np.isnan(n)])
    return _with_none(np.searchsorted(values, n).astype(np.int64), [str(int(v)) for v in values], np.isnan(n))


def attribute_table(
    items: pd.DataFrame, annotation_tags: pd.Series | None = None, videos: pd.DataFrame | None = None
) -> list[Attribute]:
    """The attributes of ``items`` (a matrix's item frame) that take at least two values.

    ``annotation_tags`` is ";"-joined per item (``backend.scope.annotations.with_annotations``' column),
    aligned with ``items``; ``videos`` the linked files' probed ``fps`` and ``duration_s``, aligned too
    (``backend.videos.catalog.probed``): the frame rate, and the duration where the item records none.
    An attribute with one value everywhere (often all "(none)") cannot explain anything and is left
    out. Everything is coded with factorize / searchsorted: no per-item Python.
    """
    seconds = items["duration_s"].to_numpy(float)
    fps = np.full(len(items), np.nan)
    if videos is not None:
        seconds = np.where(np.isnan(seconds), videos["duration_s"].to_numpy(float), seconds)
        fps = videos["fps"].to_numpy(float)
    mcqa = multiple_choice(items)
    derived = {
        "task_type": _factor(items["task_type"]),
        "duration": _factor(items["duration"]),
        "domain": _factor(items["domain"]),
        "sub_category": _factor(items["sub_category"]),
        "target": _factor(items["target"], keep=mcqa),
        "n_options": _option_counts(items["options"]),
        "question_length": _binned(_text_length(items["question"]), CHAR_BINS, CHAR_LABELS),
        "video_duration": _binned(seconds, SECOND_BINS, SECOND_LABELS),
        "video_fps": _binned(fps, FPS_BINS, FPS_LABELS),
    }
    out = [
        Attribute(name, values, codes=codes)
        for name, (codes, values) in derived.items()
        if 1 < len(values) and _n_named(values) <= MAX_VALUES
    ]
    if annotation_tags is not None:
        lists = annotation_tags.fillna("").astype(str).str.get_dummies(sep=";")
        lists = lists.loc[:, lists.columns != ""]
        if lists.shape[1]:
            out.append(Attribute("annotation_tag", [str(c) for c in lists.columns], members=lists.to_numpy(bool)))
    return out


def multiple_choice(items: pd.DataFrame) -> np.ndarray:
    """Per item, whether it may be multiple choice: not open-ended, which its ``answer_type`` says, or (none
    stored) a target that is no letter says. Only these have a target letter to slice by, a letter prior and
    raw outputs a letter parser can fail on; an item with no target at all (a long table of verdicts) stays in."""
    typed, target = items["answer_type"], items["target"]
    free = np.where(
        typed.isna().to_numpy(), target.notna().to_numpy() & (target_letters(target) < 0), (typed == "open").to_numpy()
    )
    return ~free


def _n_named(values: list[str]) -> int:
    """Values other than "(none)"."""
    return len(values) - (NONE in values)


def free_text(items: pd.DataFrame) -> dict[str, int]:
    """The attributes ``attribute_table`` leaves out as free text (more than ``MAX_VALUES`` values), with their
    number of distinct values, for ``untested``."""
    mcqa = multiple_choice(items)
    columns = {
        "task_type": items["task_type"],
        "duration": items["duration"],
        "domain": items["domain"],
        "sub_category": items["sub_category"],
        "target": items["target"].where(mcqa),
    }
    counts = {name: int(col.nunique()) for name, col in columns.items()}
    return {name: n for name, n in counts.items() if n > MAX_VALUES}


def benjamini_hochberg(p: np.ndarray, n_tests: int | None = None) -> np.ndarray:
    """BH-adjusted q-values of ``p`` (in its order), over a family of ``n_tests >= len(p)`` tests.

    Tests of the family not in ``p`` count as p = 1 (a conservative stand-in: smaller p-values there
    could only lower these q-values). ``q_(i) = min_{j >= i} p_(j) m / j``, capped at 1: scipy's
    ``false_discovery_control`` over ``p`` padded with those ones (their q is 1, and the cap makes them
    change nothing in the others').
    """
    from scipy.stats import false_discovery_control  # scipy.stats is slow to import: only where slices are tested

    p = np.asarray(p, dtype=float)
    m = len(p) if n_tests is None else int(n_tests)
    if len(p) == 0:
        return p
    if m < len(p):
        raise ValueError("n_tests must be at least the number of p-values")
    padded = np.concatenate([p, np.ones(m - len(p))])
    return np.asarray(false_discovery_control(padded, method="bh"), dtype=float)[: len(p)]


def newcombe_interval(k1, n1, k2, n2, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval (method 10) for ``k1/n1 - k2/n2``; NaN where a side is empty."""
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in (k1, n1, k2, n2))
    l1, u1 = wilson_interval(k1, n1, level)
    l2, u2 = wilson_interval(k2, n2, level)
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = k1 / n1, k2 / n2
        d = p1 - p2
        lo = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
        hi = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return lo, hi


def fisher_two_sided(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Fisher's exact two-sided p of each 2x2 table ``[[a, b], [c, d]]`` (scipy's, one call per table)."""
    from scipy.stats import fisher_exact  # scipy.stats is slow to import: only where slices are tested

    return np.array(
        [fisher_exact([[ai, bi], [ci, di]])[1] for ai, bi, ci, di in zip(a, b, c, d, strict=True)], dtype=float
    )


def slice_statistics(in_slice: np.ndarray, selected: np.ndarray) -> pd.DataFrame:
    """The statistics of slices ``in_slice[S, I]`` (bool) for the selection ``selected[I]``: one row per slice.

    Columns: n_slice, n_selected, rate, base_rate, lift, lift_lo, lift_hi (the rate's Wilson 95% interval over the
    base rate), diff (rate minus the rest of the scope's rate), diff_lo, diff_hi (Newcombe 95%), p (Fisher
    two-sided). Counts are row counts of boolean arrays (no int64 copy of ``in_slice``: 200 MB at 100 x 250k).
    """
    in_slice = np.asarray(in_slice, dtype=bool)
    sel = np.asarray(selected, dtype=bool)
    n, k = sel.size, int(sel.sum())
    n_slice = np.count_nonzero(in_slice, axis=1).astype(np.int64)
    n_sel = np.count_nonzero(in_slice & sel[None, :], axis=1).astype(np.int64)
    n_rest, k_rest = n - n_slice, k - n_sel
    base = k / n if n else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n_slice > 0, n_sel / np.maximum(n_slice, 1), np.nan)
        rest = np.where(n_rest > 0, k_rest / np.maximum(n_rest, 1), np.nan)
        lift = rate / base if base else np.full(len(rate), np.nan)
    lo, hi = newcombe_interval(n_sel, n_slice, k_rest, n_rest)
    rate_lo, rate_hi = wilson_interval(n_sel, n_slice)
    p = fisher_two_sided(n_sel, n_slice - n_sel, k_rest, n_rest - k_rest)
    return pd.DataFrame(
        {
            "n_slice": n_slice,
            "n_selected": n_sel,
            "rate": rate,
            "base_rate": base,
            "lift": lift,
            "lift_lo": rate_lo / base if base else np.nan,
            "lift_hi": rate_hi / base if base else np.nan,
            "diff": rate - rest,
            "diff_lo": lo,
            "diff_hi": hi,
            "p": p,
        }
    )


def single_slices(attributes: list[Attribute], n_items: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Every (attribute, value) slice: the frame of names and its ``[S, I]`` membership (``[0, I]`` with no
    attribute: a long table of the required columns alone has none, and its flows are still counted)."""
    names = pd.DataFrame([([a.name], [v]) for a in attributes for v in a.values], columns=["attributes", "values"])
    masks = np.concatenate([a.masks() for a in attributes], axis=0) if attributes else np.zeros((0, n_items), bool)
    return names, masks


def _pair_tests(attributes: list[Attribute], min_size: int) -> int:
    """Value pairs of two different single-valued attributes with at least ``min_size`` items (the pair family)."""
    single = [(a, a.codes) for a in attributes if a.codes is not None]
    total = 0
    for i, (a, ca) in enumerate(single):
        for b, cb in single[i + 1 :]:
            counts = np.bincount(ca * len(b.values) + cb, minlength=len(a.values) * len(b.values))
            total += int((counts >= min_size).sum())
    return total


def pair_slices(
    attributes: list[Attribute], selected: np.ndarray, min_size: int, k: int = 20
) -> tuple[pd.DataFrame, np.ndarray]:
    """Two-attribute slices that sliceline proposes for ``selected`` (module docstring), with their membership."""
    single = [a for a in attributes if a.codes is not None]
    codes = [a.codes for a in attributes if a.codes is not None]  # single's, narrowed for the checker
    empty = pd.DataFrame(columns=["attributes", "values"]), np.zeros((0, len(selected)), bool)
    if len(single) < 2 or not selected.any() or selected.all():
        return empty
    from sliceline.slicefinder import Slicefinder  # sklearn behind it: imported where pairs are searched

    x = np.stack(codes, axis=1)
    rows, min_sup = np.arange(len(selected)), min_size
    if len(selected) > PAIR_SAMPLE:  # the search's cost is linear in the rows: a sample bounds it
        rows = np.sort(np.random.default_rng(0).choice(len(selected), PAIR_SAMPLE, replace=False))
        min_sup = max(1, round(min_size * PAIR_SAMPLE / len(selected)))
    finder = Slicefinder(alpha=0.95, k=k, max_l=2, min_sup=min_sup, verbose=False)
    finder.fit(x[rows], selected[rows].astype(float))
    names, masks = [], []
    for top in np.asarray(finder.top_slices_, dtype=object).reshape(-1, len(single)):
        used = [j for j, v in enumerate(top) if v is not None]
        if len(used) != 2:
            continue
        (ja, jb), (va, vb) = used, (int(top[used[0]]), int(top[used[1]]))
        names.append(([single[ja].name, single[jb].name], [single[ja].values[va], single[jb].values[vb]]))
        masks.append((codes[ja] == va) & (codes[jb] == vb))
    if not names:
        return empty
    return pd.DataFrame(names, columns=["attributes", "values"]), np.stack(masks)


def rank(table: pd.DataFrame, min_size: int) -> pd.DataFrame:
    """Well-supported slices first, then by q, then largest lift; ``small`` marks the rest."""
    table = table.assign(small=table["n_slice"] < min_size)
    return table.sort_values(["small", "q", "lift"], ascending=[True, True, False], kind="mergesort").reset_index(
        drop=True
    )


def explain_slices(
    attributes: list[Attribute], selected: np.ndarray, min_size: int = MIN_SIZE, pairs: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, int, list[np.ndarray]]:
    """Single and pair slices with their statistics and one BH family over both.

    Returns (singles, pairs, n_tests, [single masks, pair masks]) with the frames ranked (``rank``);
    each row's ``index`` column is its row in the returned masks, so a slice's items stay reachable.
    """
    names1, m1 = single_slices(attributes, len(selected))
    names2, m2 = (
        pair_slices(attributes, selected, min_size)
        if pairs
        else (pd.DataFrame(columns=["attributes", "values"]), np.zeros((0, len(selected)), bool))
    )
    s1 = pd.concat([names1, slice_statistics(m1, selected)], axis=1).assign(index=np.arange(len(names1)))
    s2 = pd.concat([names2.reset_index(drop=True), slice_statistics(m2, selected)], axis=1).assign(
        index=np.arange(len(names2))
    )
    n_tests = len(s1) + (_pair_tests(attributes, min_size) if pairs else 0)
    n_tests = max(n_tests, len(s1) + len(s2))
    q = benjamini_hochberg(np.concatenate([s1["p"].to_numpy(), s2["p"].to_numpy()]), n_tests)
    s1["q"], s2["q"] = q[: len(s1)], q[len(s1) :]
    return rank(s1, min_size), rank(s2, min_size), n_tests, [m1, m2]


def target_letters(targets: pd.Series) -> np.ndarray:
    """Each target as a capital-letter code (0 for "A" .. 25 for "Z"; -1 for anything else), mapped once per distinct
    target rather than once per item."""
    codes, uniques = pd.factorize(targets)
    per = np.array(
        [ord(u) - 65 if isinstance(u, str) and len(u) == 1 and "A" <= u <= "Z" else -1 for u in uniques] + [-1]
    )
    return per[codes].astype(np.int64)  # code -1 (a missing target) takes the appended -1


def letter_prior(answer: np.ndarray, target: np.ndarray, n_letters: int) -> dict:
    """Chosen letters per configuration against the targets' letters, with a chi-square homogeneity test.

    ``answer[I, C]`` and ``target[I]`` are letter codes (-1: none / not a letter). Returns ``chosen``
    ``[C, L]``, ``no_answer`` ``[C]``, ``targets`` ``[L]`` and per configuration ``chi2``, ``dof``, ``p``
    (the 2 x L table of chosen vs target counts over the letters either uses; NaN with fewer than two).
    """
    from scipy.stats import chi2_contingency

    n_items, n_cfg = answer.shape
    offset = (np.arange(n_cfg) * (n_letters + 1))[None, :]
    counts = np.bincount((answer + 1 + offset).ravel(), minlength=n_cfg * (n_letters + 1)).reshape(n_cfg, -1)
    chosen, no_answer = counts[:, 1:], counts[:, 0]
    targets = np.bincount(target[target >= 0], minlength=n_letters)
    chi2, dof, p = (np.full(n_cfg, np.nan) for _ in range(3))
    for c in range(n_cfg):  # one test per configuration
        table = np.stack([chosen[c], targets])
        table = table[:, table.sum(axis=0) > 0]
        if table.shape[1] >= 2 and (table.sum(axis=1) > 0).all():
            chi2[c], p[c], dof[c], _ = chi2_contingency(table, correction=False)
    return {"chosen": chosen, "no_answer": no_answer, "targets": targets, "chi2": chi2, "dof": dof, "p": p}


def moved_to(answer_from: np.ndarray, answer_to: np.ndarray, target: np.ndarray, n_letters: int) -> dict:
    """For a flow's items: the letter (or no answer) at each side, and how many kept / moved to / away from the target."""

    def counts(a: np.ndarray) -> np.ndarray:
        return np.bincount(a + 1, minlength=n_letters + 1)

    return {
        "from": counts(answer_from),
        "to": counts(answer_to),
        "to_target": int((answer_to == target).sum()),
        "to_other_letter": int(((answer_to >= 0) & (answer_to != target)).sum()),
        "to_no_answer": int((answer_to < 0).sum()),
        "same_letter": int(((answer_to == answer_from) & (answer_to >= 0)).sum()),
    }


RAW_KINDS = ("parsed", "empty", "degenerate", "unparsed")  # raw-output kinds (``backend.scope.answer_cells``)


def agreement(masks: dict[str, np.ndarray]) -> dict:
    """Pairwise overlap of per-model selections against the hypergeometric expectation; the all-models set.

    For models a, b with n_a, n_b selected of N items, a random n_b-subset overlaps n_a in n_a n_b / N items
    on average; ``p`` is the upper tail P[X >= overlap] of that hypergeometric law.
    """
    from scipy.stats import hypergeom

    models = list(masks)
    n = len(next(iter(masks.values())))
    pairs = []
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            ma, mb = masks[a], masks[b]
            na, nb, both, either = int(ma.sum()), int(mb.sum()), int((ma & mb).sum()), int((ma | mb).sum())
            pairs.append(
                AgreementPair(
                    a=a,
                    b=b,
                    n_a=na,
                    n_b=nb,
                    overlap=both,
                    expected=na * nb / n if n else float("nan"),
                    p=float(hypergeom.sf(both - 1, n, na, nb)) if n else float("nan"),
                    jaccard=both / either if either else None,
                    kappa=cohen_kappa(ma, mb),
                )
            )
    every = np.logical_and.reduce([masks[m] for m in models])
    return {"models": models, "pairs": pairs, "every": every}


LINK_MAX = 500  # a slice's selected item ids are listed (for its link) up to this many


def target_mask(matrix: Matrix, model: str, target: Target) -> np.ndarray:
    """The items ``target`` selects for ``model`` (boolean over the matrix's items)."""
    if target.kind == "flow":
        return flow_mask(matrix, model, *target.args)
    if target.kind == "state":
        config, state = target.args
        if state not in ("correct", "wrong"):
            raise UserError(f"a state is CONFIG:STATE with STATE correct or wrong (got {':'.join(target.args)!r})")
        return matrix.correct[matrix.model_index(model), :, matrix.config_index(config)].astype(bool) == (
            state == "correct"
        )
    if target.kind == "tag":
        y = matrix.correct[matrix.model_index(model)].astype(bool)
        return tag_masks(y, matrix.grid, matrix.lower)[target.args[0]]
    ids = matrix.items["item_id"].astype(str)
    keyed = matrix.items["benchmark"].astype(str) + "/" + ids
    wanted = set(target.args)
    return (ids.isin(wanted) | keyed.isin(wanted)).to_numpy(bool)


def verdict(q: np.ndarray, n_tests: int, level: float = Q_LEVEL) -> Verdict:
    """How many of the slices tested survive Benjamini-Hochberg at ``q < level``, in one sentence: the line a
    significance-driven panel states first, so a bar drawn for a slice whose q is 1 is never read as a finding."""
    n = int((np.asarray(q, dtype=float) < level).sum())
    if n == 0:
        text = f"No slice survives Benjamini-Hochberg at q < {level:g} ({n_tests:,} tested)"
    else:
        text = f"{n:,} {'slice survives' if n == 1 else 'slices survive'} Benjamini-Hochberg at q < {level:g} ({n_tests:,} tested)"
    return Verdict(q_level=level, n_surviving=n, n_tests=n_tests, text=text)


def _slice_records(
    table: pd.DataFrame, masks: np.ndarray, selected: np.ndarray, ids: np.ndarray, top: int | None
) -> list[ExplainSlice]:
    """The ranked slices as report rows (at most ``top``), each with its selected items' ids for a link."""
    shown = table if top is None else table.head(top)
    out: list[ExplainSlice] = []
    for row in shown.to_dict("records"):  # one per reported slice (tens), never per item
        members = masks[row["index"]] & selected
        out.append(
            ExplainSlice(
                attributes=list(row["attributes"]),
                values=list(row["values"]),
                label=" & ".join(f"{plain(a)} = {v}" for a, v in zip(row["attributes"], row["values"], strict=True)),
                n_slice=int(row["n_slice"]),
                n_selected=int(row["n_selected"]),
                rate=_num(row["rate"]),
                base_rate=_num(row["base_rate"]),
                lift=_num(row["lift"]),
                diff=_num(row["diff"]),
                lift_ci=None if np.isnan(row["lift_lo"]) else (float(row["lift_lo"]), float(row["lift_hi"])),
                diff_ci=None if np.isnan(row["diff_lo"]) else (float(row["diff_lo"]), float(row["diff_hi"])),
                p=float(row["p"]),
                q=float(row["q"]),
                survives=bool(row["q"] < Q_LEVEL),
                small=bool(row["small"]),
                item_ids=ids[members].tolist() if row["n_selected"] <= LINK_MAX else None,
            )
        )
    return out


def _num(x: float) -> float | None:
    return None if x is None or np.isnan(x) else float(x)


def answer_behaviour(matrix: Matrix, cells: AnswerCells, target: Target, selected: np.ndarray) -> AnswerBehaviour:
    """The letter prior per configuration and, for a flow, where its answers went (module docstring), over the
    multiple-choice items alone: free text has no letter to choose, and counting it as "no answer" would
    test the parser, not the model."""
    mcqa = multiple_choice(matrix.items)
    target_code = np.where(mcqa, target_letters(matrix.items["target"]), -1)
    letter_cells = np.where(mcqa[:, None], cells.letter, -1)
    # the letters in play ("A" .. "Z"): any target's or any answer's
    present = (np.bincount(letter_cells.ravel().astype(np.int64) + 1, minlength=27)[1:] > 0) | (
        np.bincount(target_code + 1, minlength=27)[1:] > 0
    )
    used = np.flatnonzero(present)
    letters = [chr(65 + k) for k in used]
    remap = np.full(27, -1, dtype=np.int64)  # code + 1 -> index among the letters in play
    remap[used + 1] = np.arange(len(used))
    answer, tcode = remap[letter_cells.astype(np.int64) + 1], remap[target_code + 1]
    prior = letter_prior(answer[mcqa], tcode[mcqa], len(letters))
    out = AnswerBehaviour(
        letters=letters,
        targets=dict(zip(letters, prior["targets"].tolist(), strict=True)),
        prior=[
            LetterPrior(
                config=label,
                chosen=dict(zip(letters, prior["chosen"][c].tolist(), strict=True)),
                no_answer=int(prior["no_answer"][c]),
                chi2=_num(prior["chi2"][c]),
                dof=None if np.isnan(prior["dof"][c]) else int(prior["dof"][c]),
                p=_num(prior["p"][c]),
            )
            for c, label in enumerate(matrix.grid)
        ],
        moved=None,
    )
    if target.kind == "flow":
        ia, ib = matrix.config_index(target.args[0]), matrix.config_index(target.args[1])
        chosen = selected & mcqa
        moved = moved_to(answer[chosen, ia], answer[chosen, ib], tcode[chosen], len(letters))
        names = ["no answer", *letters]
        out.moved = AnswerMoves(
            from_=dict(zip(names, moved["from"].tolist(), strict=True)),
            to=dict(zip(names, moved["to"].tolist(), strict=True)),
            to_target=moved["to_target"],
            to_other_letter=moved["to_other_letter"],
            to_no_answer=moved["to_no_answer"],
            same_letter=moved["same_letter"],
        )
    return out


def parser_effects(matrix: Matrix, cells: AnswerCells, target: Target, selected: np.ndarray) -> dict:
    """Selected items whose raw output, at the flow's two configurations (a state's one; else anywhere on the grid), is empty,
    degenerate or unparsed: counted per kind, and in all (``affected``, the items ``--exclude-unparsed`` drops).
    Multiple-choice items only: an open-ended answer has no letter to parse, so "unparsed" would count every one."""
    selected = selected & multiple_choice(matrix.items)
    if target.kind == "flow":
        cols = [matrix.config_index(target.args[0]), matrix.config_index(target.args[1])]
    elif target.kind == "state":
        cols = [matrix.config_index(target.args[0])]
    else:
        cols = list(range(len(matrix.grid)))
    kinds = cells.kind[:, cols]
    per_kind = {name: int((selected & (kinds == k).any(axis=1)).sum()) for k, name in enumerate(RAW_KINDS) if k}
    affected = selected & (kinds != 0).any(axis=1)
    return {"configs": [matrix.grid[c] for c in cols], **per_kind, "affected": int(affected.sum()), "mask": affected}


def untested(attributes: list[Attribute], cells: AnswerCells, items: pd.DataFrame) -> list[str]:
    """What the report cannot test on this store, each as one sentence: a long table of the required columns
    alone (docs/formats.md) has no item field to slice by and no answer letter, and its flows still count;
    free-text attributes are not sliced; open-ended items have no letter prior."""
    out = [
        f"{ATTRIBUTES[name]} not sliced: {n:,} distinct values (free text, over {MAX_VALUES})"
        for name, n in free_text(items).items()
    ]
    mcqa = multiple_choice(items)
    if not mcqa.all():
        out.append(
            f"{int((~mcqa).sum()):,} open-ended item(s) left out of the target-letter slices, the letter prior, the "
            "answer moves and the parser counts: their targets and answers are free text"
        )
    if not attributes:
        out.append(
            "no item attributes to slice by: no item field (task type, domain, duration, target letter...) "
            "has two values or more in this scope; ingest them with the results to slice"
        )
    if mcqa.any() and not (cells.letter[mcqa] >= 0).any():
        out.append(
            "no answer letters stored for this model: the letter prior and the answer moves count every item "
            "as 'no answer'; ingest raw outputs or predictions to test them"
        )
    return out


def report(
    matrix: Matrix,
    model: str,
    target: Target,
    attributes: list[Attribute],
    cells: AnswerCells,
    min_size: int = MIN_SIZE,
    top: int | None = 25,
    exclude_unparsed: bool = False,
    pairs: bool = True,
) -> Explanation:
    """Everything ``trajaudit explain`` prints (``ExplainReport`` without ``scope``)."""
    if min_size < 1:
        raise UserError("--min-size must be >= 1")
    if top is not None and top < 0:
        raise UserError("--top must be >= 0")
    selected = target_mask(matrix, model, target)
    if target.kind == "items" and not selected.any():
        raise UserError(f"none of the {len(target.args)} listed items is in the scope ({matrix.n_items} items)")
    parser = parser_effects(matrix, cells, target, selected)
    if exclude_unparsed:
        selected = selected & ~parser["mask"]
    singles, pair_table, n_tests, masks = explain_slices(attributes, selected, min_size, pairs)
    ids = matrix.items["item_id"].astype(str).to_numpy(object)
    out = Explanation(
        model=model,
        target=ExplainTarget(kind=target.kind, args=list(target.args), describe=target.describe()),
        n_scope=matrix.n_items,
        n_selected=int(selected.sum()),
        base_rate=float(selected.mean()) if matrix.n_items else None,
        min_size=min_size,
        n_tests=n_tests,
        verdict=verdict(np.concatenate([singles["q"].to_numpy(), pair_table["q"].to_numpy()]), n_tests),
        pair_search=pair_search(matrix.n_items) if pairs else None,
        attributes=[a.name for a in attributes],
        slices=_slice_records(singles, masks[0], selected, ids, top),
        pairs=_slice_records(pair_table, masks[1], selected, ids, top),
        parser=ParserEffects(
            configs=parser["configs"],
            empty=parser["empty"],
            degenerate=parser["degenerate"],
            unparsed=parser["unparsed"],
            affected=parser["affected"],
            excluded=exclude_unparsed,
        ),
        answers=answer_behaviour(matrix, cells, target, selected),
        agreement=None,
        untested=untested(attributes, cells, matrix.items),
    )
    if target.kind in ("flow", "state", "tag") and len(matrix.models) > 1:
        agree = agreement({m: target_mask(matrix, m, target) for m in matrix.models})
        every = agree.pop("every")
        out.agreement = Agreement(
            models=agree["models"],
            pairs=agree["pairs"],
            n_every=int(every.sum()),
            every=ids[every][:LINK_MAX].tolist(),
        )
    return out
