"""Where the binary (correct/wrong) view of a scored response comes from: the scope's score cut-off.

A scored response (open-ended QA, a summary, a dialogue turn: any response with a ``score``) enters
accuracy, flows, tags and policies through a 0/1 ``correct``. docs/metrics.md allows two sources: the
verdict its source wrote (a judge's, or the writer's own rule: the demo writes ``score >= 0.5``), or
an explicit cut-off ``correct = score >= t`` that the scope carries. The cut-off is one of:

* ``stored`` (the default): the stored ``correct``; a scored response whose source gave no verdict (a
  judge's empty verdict, a score alone) leaves its item out of accuracy, counted (docs/metrics.md, "Empty
  verdicts"; METRICS.md: a response enters accuracy through a verdict its source gives or a cut-off);
* a number ``t`` in [0, 1]: every scored cell becomes ``score >= t``;
* ``none``: scored items are left out of the accuracy view (and counted); their score numbers stay.

The transform runs on the loaded matrix, vectorised, after the (cached) load: the matrix cache never
depends on it. Score views read the *score matrix* (every matched item, cut applied); accuracy views
read the *accuracy matrix* (the same, less the scored items under ``none``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from backend.contracts.views import BinaryView
from backend.scope.matrix import Matrix, restrict
from store.errors import UserError

STORED = "stored"
NONE = "none"


def canonical_cutoff(value: str | float | None) -> str:
    """``stored``, ``none`` or the cut-off as text (``0.5``); a malformed one is a ``UserError``."""
    if value is None:
        return STORED
    text = str(value).strip().lower()
    if text in (STORED, NONE):
        return text
    try:
        t = float(text)
    except ValueError:
        raise UserError(f"--score-cutoff must be 'stored', 'none' or a number in [0, 1] (got {value!r})") from None
    if not 0.0 <= t <= 1.0:
        raise UserError(f"--score-cutoff must be in [0, 1] (got {t:g})")
    return f"{t:g}"


def cutoff_value(cutoff: str) -> float | None:
    """The number of a numeric cut-off; None for ``stored`` and ``none``."""
    return None if cutoff in (STORED, NONE) else float(cutoff)


def header_value(cutoff: str) -> str | float:
    """The cut-off as JSON states it: ``"stored"``, ``"none"`` or the number."""
    t = cutoff_value(cutoff)
    return cutoff if t is None else t


def scored_items(matrix: Matrix) -> np.ndarray:
    """Per item, whether some (model, config) of the matrix carries a score."""
    return np.isfinite(matrix.score).any(axis=(0, 2))


def score_matrix(matrix: Matrix, cutoff: str) -> Matrix:
    """The matrix with the cut-off applied: ``correct = score >= t`` on every scored cell (numeric ``t`` only)."""
    t = cutoff_value(cutoff)
    if t is None or not matrix.has_scores:
        return matrix
    scored = np.isfinite(matrix.score)
    with np.errstate(invalid="ignore"):
        cut = (matrix.score >= np.float32(t)).astype(matrix.correct.dtype)
    unjudged = None if matrix.unjudged is None else matrix.unjudged & ~scored  # the cut-off judges the scored ones
    return dataclasses.replace(
        matrix,
        correct=np.where(scored, cut, matrix.correct),
        unjudged=unjudged if unjudged is not None and unjudged.any() else None,
    )


def unjudged_items(matrix: Matrix) -> np.ndarray:
    """Per item, whether some response of the matrix gave no verdict (``Matrix.unjudged``)."""
    if matrix.unjudged is None:
        return np.zeros(matrix.n_items, dtype=bool)
    return np.asarray(matrix.unjudged.any(axis=(0, 2)))


def accuracy_matrix(scores: Matrix, cutoff: str) -> Matrix:
    """The accuracy view of a score matrix: the items with a response that gave no verdict are left out (under
    ``none`` every scored item is), else it is the same."""
    keep = ~unjudged_items(scores)
    if cutoff == NONE:
        keep &= ~scored_items(scores)
    return scores if keep.all() else restrict(scores, keep)


def binary_view(scores: Matrix, cutoff: str) -> BinaryView:
    """How accuracy treats the scored items of ``scores``: counts, and the cut-off their stored verdicts imply.

    ``verdict_cut`` ([lo, hi]): with ``stored``, when every stored verdict on a scored cell equals
    ``score >= t`` for any ``t`` in ``(lo, hi]`` (the highest score called wrong, the lowest called right),
    so a page can say "the stored verdicts are a cut-off near 0.5"; null when no such ``t`` exists.
    """
    scored = np.isfinite(scores.score)
    items = scored.any(axis=(0, 2))
    n_scored = int(items.sum())
    out = BinaryView(
        score_cutoff=header_value(cutoff),
        n_scored_items=n_scored,
        n_mcqa_items=int(scores.n_items - n_scored),
        n_scored_in_accuracy=0 if cutoff == NONE else int((items & ~unjudged_items(scores)).sum()),
        verdict_cut=None,
    )
    if scores.unjudged is not None:
        scored &= ~scores.unjudged  # no verdict: no evidence of a cut-off either way
    if cutoff == STORED and scored.any():
        s, y = scores.score[scored].astype(np.float64), scores.correct[scored].astype(bool)
        lo = float(s[~y].max()) if (~y).any() else 0.0
        hi = float(s[y].min()) if y.any() else 1.0
        if lo < hi:
            out.verdict_cut = (round(lo, 6), round(hi, 6))  # the matrix keeps float32: 6 decimals
    return out


def describe(view: BinaryView) -> str:
    """How the scored items enter accuracy, in one sentence: the CLI's ``metrics`` and the pages' scope line."""
    n, mcqa = view.n_scored_items, view.n_mcqa_items
    head = f"{n:,} of {n + mcqa:,} {'item is' if n + mcqa == 1 else 'items are'} scored (open-ended): "
    cutoff = view.score_cutoff
    if cutoff == NONE:
        return head + f"left out of accuracy (score cut-off: none), which is over the {mcqa:,} multiple-choice items"
    if cutoff == STORED:
        # The stored verdicts equal score >= T for every T in (lo, hi] (``verdict_cut``): the interval's top is one
        # such cut-off, and one number reads at a glance where the interval did not.
        cut = view.verdict_cut
        implied = f" (= score ≥ {cut[1]:.3g})" if cut else ""
        left = n - view.n_scored_in_accuracy
        unjudged = f"; {left:,} without a verdict left out" if left else ""
        return head + f"accuracy counts them by their stored verdict{implied}{unjudged}"
    return head + f"accuracy counts them as correct when score >= {cutoff:g} (score cut-off)"
