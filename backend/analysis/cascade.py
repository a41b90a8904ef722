"""Confidence cascade on a ladder of budgets (docs/metrics.md, "Adaptive budget policies").

On a ladder ``b_1 < ... < b_k`` with threshold ``t`` an item is answered at the first rung whose
confidence is at least ``t``, else at ``b_k``. Cost is counted in frames: with frame sharing (nested
sampling, frames already encoded are reused) an item costs ``frames(b_j)`` of the rung it stops at;
without sharing it costs the frames of every rung visited. ``cost_vs_top_*`` divides the mean cost
by ``frames(b_k)``, i.e. it is the cost relative to answering every item at the fixed top budget.

Only items with a confidence at every rung take part (``n_items``); confidences are never invented.
Every policy compared with the cascade (the fixed budgets, the oracle, the budget predictor) is scored on
those same items (``comparison_items``), so a point "as accurate as the top budget" sits at the top
budget's accuracy on the chart; ``denominator`` states that set in words, the same on the page and the CLI.

The whole frontier comes from one sort per rung. Write ``p_j`` for the running maximum of the
confidences up to rung ``j``: the item stops at or before ``j`` exactly when ``p_j >= t``. The
answer taken then telescopes, ``y_stop = y_k + sum_{j<k} [p_j >= t] (y_j - y_{j+1})`` (and likewise
for frames), so every threshold's totals are suffix sums of ``y_j - y_{j+1}`` over the items sorted
by ``p_j``, read off with ``searchsorted``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from backend.analysis.stats import as_interval, bootstrap_means, percentile_interval
from backend.contracts.base import asdict
from backend.contracts.policies import CascadeAtThreshold, CascadeMatch, CascadePoint, CascadeSweep, FixedBudget
from backend.scope.matrix import Matrix
from store import configs
from store.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_POINTS = 100
DEFAULT_THRESHOLD = 0.5  # the Policies page's slider opens here, and the CLI without --threshold or --sweep


@dataclass
class Ladder:
    """One model's responses on a ladder of budgets over the matched items, rungs as columns."""

    model: str
    labels: list[str]
    frames: np.ndarray  # int64 [k]
    items: pd.DataFrame
    correct: np.ndarray  # int8 [I, k]
    confidence: np.ndarray  # float32 [I, k], NaN = no confidence
    n_excluded: int = 0
    benchmark: str | None = None

    @property
    def top_frames(self) -> int:
        return int(self.frames[-1])


def check_ladder(labels: list[str]) -> list[str]:
    """Canonical labels, each strictly cheaper than the next (``store.configs.lower_matrix``)."""
    try:
        canon = [configs.canonical(label) for label in labels]
    except configs.ConfigLabelError as exc:
        raise UserError(f"--ladder: {exc}") from None
    if len(canon) < 2:
        raise UserError(f"--ladder needs at least two budgets (got {','.join(canon) or 'none'})")
    lower = configs.lower_matrix(canon)
    for j in range(len(canon) - 1):
        if not lower[j, j + 1]:
            raise UserError(
                f"--ladder {','.join(canon)}: {canon[j]!r} is not cheaper than {canon[j + 1]!r}; "
                "list the budgets in increasing cost"
            )
    return canon


def ladder_from_matrix(matrix: Matrix, model: str, labels: list[str], benchmark: str | None = None) -> Ladder:
    """The ladder's columns of ``model`` cut from a matrix that holds every rung."""
    labels = check_ladder(labels)
    m = matrix.model_index(model)
    cols = [matrix.config_index(label) for label in labels]
    return Ladder(
        model=model,
        labels=labels,
        frames=np.array([configs.parse(label).frames for label in labels], dtype=np.int64),
        items=matrix.items,
        correct=matrix.correct[m][:, cols],
        confidence=matrix.confidence[m][:, cols],
        n_excluded=matrix.n_excluded,
        benchmark=benchmark,
    )


def with_confidences(ladder: Ladder) -> Ladder:
    """The items with a confidence at every rung; ``UserError`` naming the rungs when there are none."""
    has = ~np.isnan(ladder.confidence)
    keep = has.all(axis=1)
    if not keep.any():
        scope = f" on benchmark {ladder.benchmark!r}" if ladder.benchmark else ""
        empty = [lab for lab, any_ in zip(ladder.labels, has.any(axis=0), strict=True) if not any_]
        where = f"at {', '.join(empty)}" if empty else f"at every rung of {','.join(ladder.labels)} for any one item"
        raise UserError(
            f"no confidences stored for model {ladder.model!r} {where}{scope} "
            f"({len(ladder.items)} matched items); the cascade needs the probability of the chosen option "
            "at every rung and never invents one"
        )
    return Ladder(
        model=ladder.model,
        labels=ladder.labels,
        frames=ladder.frames,
        items=ladder.items.loc[keep].reset_index(drop=True),
        correct=ladder.correct[keep],
        confidence=ladder.confidence[keep],
        n_excluded=ladder.n_excluded,
        benchmark=ladder.benchmark,
    )


def comparison_items(ladder: Ladder) -> Ladder:
    """The items every policy on ``ladder`` is compared on: those with a confidence at every rung, where any
    item has one (the cascade's items), else every item (no cascade: the others need no confidence)."""
    if (~np.isnan(ladder.confidence)).all(axis=1).any():
        return with_confidences(ladder)
    return ladder


def denominator(ladder: Ladder) -> str:
    """The items a comparison on ``ladder`` is made on (``comparison_items``), as the chart and the CLI say it."""
    n = len(comparison_items(ladder).items)
    left = len(ladder.items) - n
    rungs = ", ".join(ladder.labels)
    if left:
        return (
            f"on {n:,} items, those with a confidence at every budget of {rungs} "
            f"({left:,} of the {len(ladder.items):,} answered at every budget have none)"
        )
    return f"on {n:,} items, the items answered at every budget of {rungs}"


def as_reported(threshold: float) -> float:
    """The threshold as compared (float32, like the matrix's confidences), in its shortest decimal.

    Printing that decimal and passing it back as ``--threshold`` gives the same float32, so a point
    read off the frontier reproduces exactly.
    """
    return float(str(np.float32(threshold)))


def _running_max(confidence: np.ndarray) -> np.ndarray:
    """``p[:, j]`` = max confidence over rungs ``0..j``, for the rungs an item can stop at early."""
    return np.maximum.accumulate(confidence[:, :-1], axis=1)


def stop_rungs(confidence: np.ndarray, threshold: float) -> np.ndarray:
    """Per item, the rung index the cascade answers at for one threshold."""
    hit = confidence[:, :-1] >= np.float32(threshold)
    return np.where(hit.any(axis=1), hit.argmax(axis=1), confidence.shape[1] - 1)


def curve(
    correct: np.ndarray, confidence: np.ndarray, frames: np.ndarray, thresholds: np.ndarray
) -> dict[str, np.ndarray]:
    """Totals over items for every threshold at once: ``n_correct``, ``frames_shared``, ``frames_unshared``.

    Arrays are indexed like ``thresholds``; divide by the item count for means. Thresholds compare
    as float32, the precision the matrix keeps confidences in.
    """
    thresholds = np.asarray(thresholds, dtype=np.float32)
    n, k = correct.shape
    y = correct.astype(np.int64)
    f = frames.astype(np.int64)
    n_correct = np.full(thresholds.shape, y[:, -1].sum(), dtype=np.int64)
    shared = np.full(thresholds.shape, n * f[-1], dtype=np.int64)
    unshared = np.full(thresholds.shape, n * f.sum(), dtype=np.int64)
    p = _running_max(confidence)
    for j in range(k - 1):  # rungs, not items: k is a handful
        order = np.argsort(p[:, j], kind="stable")
        sorted_p = p[order, j]
        gain = np.concatenate([[0], np.cumsum(y[order, j] - y[order, j + 1])])
        pos = np.searchsorted(sorted_p, thresholds, side="left")
        stopped = n - pos  # items with p_j >= t
        n_correct += gain[-1] - gain[pos]
        shared += stopped * (f[j] - f[j + 1])
        unshared -= stopped * f[j + 1]
    return {"n_correct": n_correct, "frames_shared": shared, "frames_unshared": unshared}


def frontier_thresholds(confidence: np.ndarray, max_points: int = DEFAULT_POINTS) -> np.ndarray:
    """Every distinct confidence at the rungs before the top, or ``max_points`` quantiles of them."""
    values = np.unique(confidence[:, :-1].astype(np.float32))
    if len(values) <= max_points:
        return values
    return np.unique(np.quantile(values, np.linspace(0.0, 1.0, max_points)).astype(np.float32))


def _point(ladder: Ladder, threshold: float, totals: dict[str, np.ndarray], idx: int) -> CascadePoint:
    n, top = len(ladder.items), ladder.top_frames
    shared = totals["frames_shared"][idx] / n
    unshared = totals["frames_unshared"][idx] / n
    return CascadePoint(
        threshold=as_reported(threshold),
        n_items=n,
        accuracy=float(totals["n_correct"][idx] / n),
        mean_frames_shared=float(shared),
        mean_frames_unshared=float(unshared),
        cost_vs_top_shared=float(shared / top) if top else None,
        cost_vs_top_unshared=float(unshared / top) if top else None,
    )


def _per_item(ladder: Ladder, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    stops = stop_rungs(ladder.confidence, threshold)
    return ladder.correct[np.arange(len(stops)), stops], ladder.frames[stops]


def evaluate(ladder: Ladder, threshold: float, bootstrap: int = 1000, seed: int = 0) -> CascadeAtThreshold:
    """The cascade at one threshold on the items with confidences at every rung (the CLI contract)."""
    if not np.isfinite(threshold):
        raise UserError(f"--threshold must be a number (got {threshold})")
    lad = with_confidences(ladder)
    totals = curve(lad.correct, lad.confidence, lad.frames, np.array([threshold]))
    out = CascadeAtThreshold(
        **asdict(_point(lad, threshold, totals, 0)),
        ladder=lad.labels,
        n_excluded=lad.n_excluded,
        n_without_confidence=len(ladder.items) - len(lad.items),
        denominator=denominator(ladder),
    )
    if bootstrap:
        y, _ = _per_item(lad, threshold)
        out.accuracy_ci = as_interval(percentile_interval(bootstrap_means(y, bootstrap, seed))[:, 0])
    return out


def fixed_points(ladder: Ladder) -> list[FixedBudget]:
    """Each rung as a fixed budget: accuracy and frames, on the ladder's items."""
    acc = ladder.correct.mean(axis=0) if len(ladder.items) else np.full(len(ladder.labels), np.nan)
    top = ladder.top_frames
    return [
        FixedBudget(config=lab, accuracy=float(a), frames=int(f), cost_vs_top=float(f / top) if top else None)
        for lab, a, f in zip(ladder.labels, acc, ladder.frames, strict=True)
    ]


def sweep(ladder: Ladder, max_points: int = DEFAULT_POINTS, bootstrap: int = 1000, seed: int = 0) -> CascadeSweep:
    """The frontier over thresholds and the cheapest threshold matching the top budget's accuracy.

    ``matching`` is the frontier point of least shared cost whose accuracy is at least that of the
    fixed top rung on the same items (ties: the higher accuracy, then the lower threshold), with a
    paired bootstrap interval of its accuracy, of its difference to the top rung, and of its saving
    ``1 - cost_vs_top_shared``. It is None when no threshold reaches the top's accuracy.
    """
    if max_points < 1:
        raise UserError(f"--points must be at least 1 (got {max_points})")
    lad = with_confidences(ladder)
    n = len(lad.items)
    thresholds = frontier_thresholds(lad.confidence, max_points)
    totals = curve(lad.correct, lad.confidence, lad.frames, thresholds)
    top_correct = int(lad.correct[:, -1].sum())
    frontier = [_point(lad, t, totals, i) for i, t in enumerate(thresholds)]
    out = CascadeSweep(
        ladder=lad.labels,
        n_items=n,
        n_excluded=lad.n_excluded,
        n_without_confidence=len(ladder.items) - n,
        denominator=denominator(ladder),
        top_accuracy=top_correct / n,
        fixed=fixed_points(lad),
        frontier=frontier,
        matching=None,
    )
    ok = np.flatnonzero(totals["n_correct"] >= top_correct)
    if len(ok) == 0:
        return out
    best = ok[np.lexsort((thresholds[ok], -totals["n_correct"][ok], totals["frames_shared"][ok]))[0]]
    point = frontier[int(best)]
    shared = point.cost_vs_top_shared
    match = CascadeMatch(**asdict(point), saving=None if shared is None else 1.0 - shared)
    if bootstrap:
        y, f = _per_item(lad, float(thresholds[best]))
        per_item = np.column_stack([y, y - lad.correct[:, -1], f / max(lad.top_frames, 1)])
        lo_hi = percentile_interval(bootstrap_means(per_item, bootstrap, seed))
        match.accuracy_ci = as_interval(lo_hi[:, 0])
        match.delta_vs_top_ci = as_interval(lo_hi[:, 1])
        low, high = sorted((1.0 - lo_hi[:, 2]).tolist())
        match.saving_ci = (low, high)
    out.matching = match
    return out


def item_stops(ladder: Ladder, threshold: float) -> pd.DataFrame:
    """Per item (with confidences at every rung): the rung answered at, its correctness and frames."""
    lad = with_confidences(ladder)
    stops = stop_rungs(lad.confidence, threshold)
    y, f = _per_item(lad, threshold)
    return lad.items[["benchmark", "item_id"]].assign(
        stop=np.asarray(lad.labels, dtype=object)[stops],
        correct=y,
        frames_shared=f,
        frames_unshared=np.cumsum(lad.frames)[stops],
    )
