"""The budget predictor's text features: TF-IDF fitted inside each training fold, from terms counted once.

Why: the vocabulary, document frequencies and weights must be fitted on a training fold alone (no test item's words
may shape its own features), but *counting* each text's terms is the same work in every fold: sklearn's
``TfidfVectorizer`` counted every text twice per fold (fit on the training texts, transform of the test texts), 1.2 s
of the cross-validation at 25k items and 11 s at 250k. Here every text is counted once (``count_terms``), and each
fold keeps the terms the vectorizer would keep (``kept_terms``: ``min_df``, then the ``max_features`` most frequent,
ties broken by the same sort) and weights them with sklearn's own ``TfidfTransformer``: the same vocabulary, document
frequencies and weights, and the same values up to the last bit of a row's norm (``tests/test_predictor.py`` compares
them with the vectorizer's). That last bit comes from the order of the terms within a row, which the vectorizer takes
from where each term first appears in the fold's texts; here it is the terms' sorted order, the same in every fold.

This module imports sklearn (seconds of start-up): ``backend.analysis.predictor`` imports it where it runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

NO_TERMS = "After pruning, no terms remain"  # the vectorizer's own words, which the predictor's fallback reads


class Counts:
    """Every item's term counts (rows: items, columns: terms in sorted order, as the vectorizer orders them).

    Shared, never copied: sklearn's ``clone`` deep-copies an estimator's parameters once per fold, and this matrix is
    the largest thing the cross-validation holds (tens of MB at 250k items)."""

    def __init__(self, matrix) -> None:
        self.matrix = matrix

    def __deepcopy__(self, memo: dict) -> Counts:
        return self


def _given(cut: list[str]) -> list[str]:
    """The counter's analyzer: the terms ``predictor.terms`` cut already."""
    return cut


def count_terms(terms: list[list[str]]) -> Counts:
    """Each item's term counts over every term any item has (float64, the vectorizer's dtype: its sums and weights
    are then the vectorizer's). No term at all gives no columns (each fold then says ``NO_TERMS``)."""
    counter = CountVectorizer(analyzer=_given, dtype=np.float64)
    try:
        matrix = counter.fit_transform(terms)
        matrix.sort_indices()
        return Counts(matrix)
    except ValueError as exc:  # "empty vocabulary": no item has a term
        if "empty vocabulary" not in str(exc):
            raise
        from scipy import sparse

        return Counts(sparse.csr_matrix((len(terms), 0), dtype=np.float64))


def kept_terms(counts, min_df: int, max_features: int | None) -> np.ndarray:
    """The columns of ``counts`` (a training fold's rows) that ``TfidfVectorizer(min_df=min_df,
    max_features=max_features)`` fitted on those rows keeps, in term order: those in at least ``min_df`` rows, then
    the ``max_features`` most frequent of them, ties broken as its ``_limit_features`` breaks them (the same argsort
    over the same array: columns in no training row are never among the kept, so they change nothing)."""
    mask = np.bincount(counts.indices, minlength=counts.shape[1]) >= min_df  # (its max_df, 1.0, keeps every term)
    if max_features is not None and mask.sum() > max_features:
        frequency = np.asarray(counts.sum(axis=0)).ravel()
        top = (-frequency[mask]).argsort()[:max_features]
        limited = np.zeros(len(mask), dtype=bool)
        limited[np.where(mask)[0][top]] = True
        mask = limited
    return np.where(mask)[0]


class FoldTfidf(TransformerMixin, BaseEstimator):
    """``TfidfVectorizer(min_df, max_features, sublinear_tf)`` over the items whose row numbers in ``counts`` it is
    given (the feature frame's ``text`` column): fitted on a training fold's rows, applied to any rows."""

    def __init__(
        self, counts: Counts | None = None, min_df: int = 1, max_features: int | None = None, sublinear_tf: bool = False
    ) -> None:
        self.counts = counts
        self.min_df = min_df
        self.max_features = max_features
        self.sublinear_tf = sublinear_tf

    def _rows(self, rows: pd.Series | np.ndarray):
        assert self.counts is not None, "FoldTfidf needs the items' counts"
        return self.counts.matrix[np.asarray(rows, dtype=np.int64)]

    def fit(self, rows: pd.Series | np.ndarray, y: object = None) -> FoldTfidf:
        counts = self._rows(rows)
        self.kept_ = kept_terms(counts, self.min_df, self.max_features)
        if not len(self.kept_):
            raise ValueError(f"{NO_TERMS}: no term is in {self.min_df} training items")
        self.tfidf_ = TfidfTransformer(sublinear_tf=self.sublinear_tf).fit(counts[:, self.kept_])
        return self

    def transform(self, rows: pd.Series | np.ndarray):
        return self.tfidf_.transform(self._rows(rows)[:, self.kept_], copy=False)
