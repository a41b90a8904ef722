"""Budget predictor (instruction-aware allocation): choose a budget per item from its text alone.

The predictor sees only what is known before any frame is decoded: the question, the options and
the item's metadata (task type, duration, domain). Its target is the *cheapest sufficient budget*
on a ladder: the cheapest rung the model answers correctly; items the model never gets right take
the top rung (no budget suffices, so the predictor should not save frames on them by design: the
oracle policy is this target read off the matrix, so predictor and oracle are scored alike).

Evaluation is cross-validated with ``GroupKFold`` grouped by video, because several questions
share one video and a video seen in training would leak its answerability; items without a video
form a group each. Every fitted step (TF-IDF vocabulary and weights, one-hot categories, the
classifier) is fitted inside the training folds only.

The classifier gives ``P(target = j)``; an operating point ``q`` answers at the first rung whose
cumulative probability reaches ``q`` (low ``q`` spends little, ``q = 1`` spends the top), which
traces the predictor's frontier; ``argmax`` is the plain classifier decision. Accuracy is the
correctness at the chosen rung; cost is its frames.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from backend.analysis import cascade
from backend.analysis.cascade import Ladder
from backend.contracts.policies import Policy, Predictor, PredictorRow
from store.errors import UserError
from store.ingest.videos import implied_videos

if TYPE_CHECKING:  # sklearn is imported where it runs: it costs seconds of start-up
    from sklearn.pipeline import Pipeline

    from backend.analysis.fold_tfidf import Counts

META_COLUMNS = ("task_type", "duration", "domain")
LEVELS = np.round(np.linspace(0.05, 1.0, 20), 2)


NGRAMS = (1, 2)  # the text's words and word pairs


def feature_frame(items: pd.DataFrame) -> tuple[pd.DataFrame, Counts]:
    """The predictor's only inputs: question + options text and the metadata categories. The text is counted once
    (``fold_tfidf.count_terms``): the frame's ``text`` column holds each item's row in those counts, which each
    fold's TF-IDF weighs (``fold_tfidf.FoldTfidf``)."""
    from backend.analysis.fold_tfidf import count_terms

    text = items["question"].fillna("").astype(str) + " " + items["options"].fillna("").astype(str)
    meta = {c: items[c].fillna("(none)").astype(str) for c in META_COLUMNS}
    counts = count_terms(terms(text.tolist()))
    return pd.DataFrame({"text": np.arange(len(items)), **{c: v.to_numpy() for c, v in meta.items()}}), counts


def terms(texts: list[str]) -> list[list[str]]:
    """Each text's terms as TF-IDF's own analyzer cuts them (lower case, its word pattern, ``NGRAMS``)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    analyze = TfidfVectorizer(ngram_range=NGRAMS).build_analyzer()
    return [analyze(text) for text in texts]


def sufficient_budget(correct: np.ndarray) -> np.ndarray:
    """Per item the cheapest correct rung index; the top rung when no rung is correct."""
    y = correct.astype(bool)
    return np.where(y.any(axis=1), y.argmax(axis=1), y.shape[1] - 1)


def item_videos(items: pd.DataFrame) -> pd.Series:
    """Each item's video: the stored one, else the one its benchmark's question id names (Video-MME
    ``NNN-k`` is on video ``NNN``, ``store.ingest.videos``: the rule ingest applies, so stores
    ingested before it group the same); missing when neither says."""
    return items["video"].astype("string").fillna(implied_videos(items["benchmark"], items["item_id"]).astype("string"))


def video_groups(items: pd.DataFrame) -> np.ndarray:
    """The CV group of each item: its benchmark and video, or the item itself when it has no video. Python strings
    (an object array): a fixed-width one gives every item the longest id's width (1 GB at 262k items of 1,024)."""
    video = item_videos(items)
    own = "item:" + items["benchmark"].astype(str) + "/" + items["item_id"].astype(str)
    grouped = np.where(video.notna(), "video:" + items["benchmark"].astype(str) + "/" + video.fillna(""), own)
    return np.asarray(grouped, dtype=object)


def grouped_folds(groups: np.ndarray, n_folds: int, seed: int = 0) -> np.ndarray:
    """Fold id per item; all items of a group share one fold (``GroupKFold``, shuffled by ``seed``).

    The groups go to ``GroupKFold`` as integer codes in their sorted order (``np.unique``'s inverse), which it
    shuffles and splits exactly as it does the strings: the same folds. Its per-fold ``np.isin`` over Python
    strings took 2.3 s of the Policies page's first 8-10 s at 25k items (``benchmarks/README.md``)."""
    names, codes = np.unique(groups, return_inverse=True)
    n_groups = len(names)
    if n_folds < 2:
        raise UserError(f"--folds must be at least 2 (got {n_folds})")
    if n_groups < n_folds:
        raise UserError(f"--folds {n_folds} needs at least {n_folds} videos (or video-less items); found {n_groups}")
    from sklearn.model_selection import GroupKFold  # sklearn costs seconds of start-up: only when used

    fold = np.empty(len(groups), dtype=np.int16)
    splitter = GroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for k, (_, test) in enumerate(splitter.split(np.zeros(len(groups)), groups=codes)):
        fold[test] = k
    return fold


def _pipeline(counts: Counts, seed: int) -> Pipeline:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from backend.analysis.fold_tfidf import FoldTfidf

    features = ColumnTransformer(
        [
            ("text", FoldTfidf(counts, min_df=2, max_features=20_000, sublinear_tf=True), "text"),
            ("meta", OneHotEncoder(handle_unknown="ignore"), list(META_COLUMNS)),
        ]
    )
    return Pipeline(
        [
            ("features", features),
            ("clf", LogisticRegression(C=1.0, solver="newton-cg", max_iter=100, random_state=seed)),
        ]
    )


def _fit_predict(
    counts: Counts, x_train: pd.DataFrame, t_train: np.ndarray, x_test: pd.DataFrame, n_rungs: int, seed: int
) -> np.ndarray:
    """``P(target = j)`` for the test items; a training fold with one class predicts that class."""
    proba = np.zeros((len(x_test), n_rungs))
    classes = np.unique(t_train)
    if len(classes) == 1:
        proba[:, classes[0]] = 1.0
        return proba
    model = _pipeline(counts, seed)
    try:
        model.fit(x_train, t_train)
    except ValueError as exc:  # no word occurs in two training items: metadata alone
        if "empty vocabulary" not in str(exc) and "no terms remain" not in str(exc):
            raise
        model.set_params(features__text="drop").fit(x_train, t_train)
    proba[:, model.named_steps["clf"].classes_] = model.predict_proba(x_test)
    return proba


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS says, as on Linux; else every CPU)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


@dataclass
class CrossValidation:
    """Out-of-fold predictions: every item's probabilities come from a model that never saw its video."""

    target: np.ndarray  # [I] cheapest sufficient rung
    proba: np.ndarray  # [I, k]
    fold: np.ndarray  # [I] fold id
    groups: np.ndarray  # [I] video group


def cross_validate(
    ladder: Ladder, n_folds: int = 5, seed: int = 0, progress: Callable[[int, int], None] | None = None
) -> CrossValidation:
    """Grouped k-fold out-of-fold class probabilities of the cheapest sufficient rung; ``progress(done, n_folds)``
    after each fold (in the calling thread: 25 s at 250k items is worth a progress bar)."""
    if len(ladder.items) == 0:
        raise UserError(f"no items with a response at every rung of {','.join(ladder.labels)} for {ladder.model!r}")
    x, counts = feature_frame(ladder.items)
    target = sufficient_budget(ladder.correct)
    groups = video_groups(ladder.items)
    fold = grouped_folds(groups, n_folds, seed)
    proba = np.zeros((len(x), len(ladder.labels)))

    def one_fold(k: int) -> None:
        test = fold == k
        proba[test] = _fit_predict(counts, x[~test], target[~test], x[test], len(ladder.labels), seed)

    # Folds in threads: the fit's time is scipy's sparse products, which release the GIL (two threads on two cores
    # fit in 0.5x the time); each fold writes its own rows.
    with ThreadPoolExecutor(max_workers=min(n_folds, usable_cpus())) as pool:
        for done, fitted in enumerate(as_completed([pool.submit(one_fold, k) for k in range(n_folds)]), start=1):
            fitted.result()  # a fold's error, raised here
            if progress is not None:
                progress(done, n_folds)
    return CrossValidation(target, proba, fold, groups)


def rungs_at_levels(proba: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``[I, Q]`` rung per item and level: the first whose cumulative probability reaches the level."""
    cum = np.cumsum(proba, axis=1)
    cum[:, -1] = np.inf  # the top rung always qualifies (no rounding shortfall)
    return (cum[:, :, None] >= levels[None, None, :]).argmax(axis=1)


def _point(policy: Policy, label: str, correct: np.ndarray, frames: np.ndarray, top: int) -> PredictorRow:
    """One frontier row from per-item correctness and frames at the rung each item was given."""
    acc, cost = float(correct.mean()), float(frames.mean())
    return PredictorRow(
        policy=policy,
        label=label,
        n_items=int(correct.shape[0]),
        accuracy=acc,
        mean_frames=cost,
        cost_vs_top=cost / top if top else None,
    )


def reference_rows(ladder: Ladder) -> list[PredictorRow]:
    """Frontier rows that need no model: each fixed budget and the oracle (cheapest correct rung), on the
    cascade's items (``cascade.comparison_items``): the policies they are drawn beside share their denominator."""
    ladder = cascade.comparison_items(ladder)
    y, f, top = ladder.correct, ladder.frames, ladder.top_frames
    target = sufficient_budget(y)
    rows = [_point("fixed", lab, y[:, j], np.full(len(y), f[j]), top) for j, lab in enumerate(ladder.labels)]
    rows.append(_point("oracle", "cheapest correct", y[np.arange(len(y)), target], f[target], top))
    return rows


def frontier_table(
    ladder: Ladder, cv: CrossValidation, cascade_points: int = cascade.DEFAULT_POINTS
) -> tuple[list[PredictorRow], str | None]:
    """Fixed budgets, the oracle, the predictor (argmax and cumulative levels) and the cascade as rows, all on
    ``ladder``'s items (``report`` passes ``cascade.comparison_items``: one denominator for every row).

    Cascade rows use shared frame cost; when no item has a confidence at every rung the second value says why
    and no cascade rows are given.
    """
    y, f, top = ladder.correct, ladder.frames, ladder.top_frames
    rows_idx = np.arange(len(y))
    rows = reference_rows(ladder)
    arg = cv.proba.argmax(axis=1)
    rows.append(_point("predictor", "argmax", y[rows_idx, arg], f[arg], top))
    at = rungs_at_levels(cv.proba, LEVELS)
    ys, fs = y[rows_idx[:, None], at], f[at]
    rows += [_point("predictor", f"q={q:g}", ys[:, k], fs[:, k], top) for k, q in enumerate(LEVELS)]
    try:
        swept = cascade.sweep(ladder, cascade_points, bootstrap=0)
    except UserError as exc:
        return rows, str(exc)
    rows += [
        PredictorRow(
            policy="cascade",
            label=f"t={p.threshold:g}",
            n_items=p.n_items,
            accuracy=p.accuracy,
            mean_frames=p.mean_frames_shared,
            cost_vs_top=p.cost_vs_top_shared,
        )
        for p in swept.frontier
    ]
    return rows, None


def report(
    ladder: Ladder, n_folds: int = 5, seed: int = 0, progress: Callable[[int, int], None] | None = None
) -> Predictor:
    """The ``trajaudit predictor --json`` contract: CV setup, target distribution, the frontier table, every policy
    on the cascade's items (``cascade.comparison_items``, stated in ``denominator``)."""
    answered = ladder
    ladder = cascade.comparison_items(answered)
    cv = cross_validate(ladder, n_folds, seed, progress)
    rows, cascade_note = frontier_table(ladder, cv)
    arg = cv.proba.argmax(axis=1)
    return Predictor(
        model=ladder.model,
        ladder=ladder.labels,
        n_items=len(ladder.items),
        n_excluded=ladder.n_excluded,
        n_without_confidence=len(answered.items) - len(ladder.items),
        denominator=cascade.denominator(answered),
        folds=n_folds,
        seed=seed,
        n_groups=int(len(np.unique(cv.groups))),
        n_videos=int(sum(g.startswith("video:") for g in np.unique(cv.groups))),  # the rest: video-less items
        target_share={
            lab: float(s)
            for lab, s in zip(
                ladder.labels, np.bincount(cv.target, minlength=len(ladder.labels)) / len(cv.target), strict=True
            )
        },
        never_correct_share=float((~ladder.correct.astype(bool).any(axis=1)).mean()),
        target_hit_rate=float((arg == cv.target).mean()),
        frontier=rows,
        cascade_note=cascade_note,
    )
