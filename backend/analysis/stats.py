"""Uncertainty: a paired bootstrap over items and Wilson intervals (docs/metrics.md, "Uncertainty"; the exact McNemar
test is ``backend.analysis.mcnemar``).

The bootstrap is *paired*: one multinomial count matrix ``W[B, I]`` (how often each item is drawn
in each resample) serves every configuration and model, so differences between them are not
blurred by independent resampling. Any mean over items becomes ``W @ X / I`` for a per-item matrix
``X[I, K]`` holding every quantity at once. ``W`` is uint8 (25 MB at 1,000 x 25k items) and is
turned into float32 one row chunk (about 4M cells) at a time, so memory stays bounded. The last two
matrices up to 64M cells are cached, because a dashboard asks for the same (items, resamples, seed)
again and again; larger ones are regenerated chunk by chunk (the same numbers either way).

When the per-item rows take few distinct values (a model's indicators are a function of its
trajectory pattern: at most 2^|G| of them, however many items), ``pattern_bootstrap_means``
resamples the *pattern counts* instead: drawing I items with replacement puts a
Multinomial(I, n_p / I) number of them on each distinct row p, so the resampled means have exactly
the item bootstrap's distribution at a cost in patterns, not items (the figures: benchmarks/README.md, "Figures behind code choices").
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from backend.contracts.common import Interval

CHUNK_CELLS = 4_000_000  # resample rows x items per chunk handed out (16 MB once in float32)
_DRAW_CELLS = 200_000  # rows drawn per step: keeps bincount's output in cache
CACHE_CELLS = 64_000_000  # keep W (uint8) in memory up to this size; larger ones are streamed


def _rows_per(cells: int, n_items: int, n_resamples: int) -> int:
    return max(1, min(n_resamples, cells // max(n_items, 1)))


def _generate(n_items: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """``W[B, I]`` as uint8 row chunks, drawn in cache-sized blocks; deterministic in its arguments."""
    rng = np.random.default_rng(seed)
    chunk_rows = _rows_per(CHUNK_CELLS, n_items, n_resamples)
    draw_rows = _rows_per(_DRAW_CELLS, n_items, n_resamples)
    offsets = np.arange(draw_rows, dtype=np.int64)[:, None] * n_items
    for start in range(0, n_resamples, chunk_rows):
        chunk = np.empty((min(chunk_rows, n_resamples - start), n_items), dtype=np.uint8)
        for row in range(0, len(chunk), draw_rows):
            b = min(draw_rows, len(chunk) - row)
            # Drawing I item indices per row and counting them is a multinomial(I, 1/I) draw, and
            # far faster than rng.multinomial over 25k categories.
            draws = rng.integers(0, n_items, size=(b, n_items), dtype=np.int32) + offsets[:b]
            # A count is Binomial(I, 1/I), about Poisson(1): P(count > 255) < 1e-500, so uint8 is exact.
            chunk[row : row + b] = np.bincount(draws.ravel(), minlength=b * n_items).reshape(b, n_items)
        yield chunk


@lru_cache(maxsize=2)
def _cached(n_items: int, n_resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    chunks = tuple(_generate(n_items, n_resamples, seed))
    for chunk in chunks:
        chunk.flags.writeable = False  # shared by every caller
    return chunks


def bootstrap_weights(n_items: int, n_resamples: int = 1000, seed: int = 0) -> Iterator[np.ndarray]:
    """The paired resamples as row chunks of the count matrix ``W[B, I]`` (each row sums to I).

    The same (n_items, n_resamples, seed) always gives the same matrix, cached or streamed.
    """
    if n_items < 1 or n_resamples < 1:
        raise ValueError("bootstrap needs at least one item and one resample")
    if n_items * n_resamples <= CACHE_CELLS:
        yield from _cached(n_items, n_resamples, seed)
    else:
        yield from _generate(n_items, n_resamples, seed)


def bootstrap_means(x: np.ndarray, n_resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """``[B, K]`` resampled means of each column of the finite per-item matrix ``x[I, K]``."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[:, None]
    n_items = x.shape[0]
    out = [chunk.astype(np.float32) @ x for chunk in bootstrap_weights(n_items, n_resamples, seed)]
    return np.concatenate(out, axis=0) / np.float32(n_items)


def distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of the 0/1 matrix ``x[I, K]``: one item per distinct row, how many items share it, and each
    item's row number among the distinct ones (``x[first][inverse] == x``)."""
    x = np.asarray(x, dtype=bool)
    if x.shape[1] > 63:  # too wide for one integer per row
        codes = np.unique(np.packbits(x, axis=1), axis=0, return_inverse=True)[1].ravel()
    else:
        codes = row_codes(x)
    if x.shape[1] > COUNTED_BITS:
        _, first, inverse, counts = np.unique(codes, return_index=True, return_inverse=True, return_counts=True)
        return first, counts, inverse.ravel()
    # counted, not sorted: np.unique's first, counts and inverse, linear in the items
    present, counts = code_counts(codes, x.shape[1])
    rank = np.zeros(1 << x.shape[1], dtype=np.int64)
    rank[present] = np.arange(len(present))
    inverse = rank[codes]
    first = np.full(len(present), len(codes), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(codes), dtype=np.int64))
    return first, counts, inverse


COUNTED_BITS = 16  # up to 16 columns (grid configurations, models): 2^16 counters, no sort


def row_codes(x: np.ndarray) -> np.ndarray:
    """Each row of the 0/1 matrix ``x[I, K]`` (``K <= 63``) as one integer, column ``c`` its bit ``c``.

    One pass per column (K of them, a grid's few configurations): 2 ms for 250k items x 10 columns against
    5 ms (and 13 ms in a server run, 2026-12-02) for ``np.packbits`` along the rows, whose inner loop is a
    row's few columns. Every new matrix counts each model's codes again: a page's first read after a write."""
    codes = np.zeros(x.shape[0], dtype=np.int64)
    for j in range(x.shape[1]):
        codes |= np.asarray(x[:, j], dtype=bool).astype(np.int64) << j
    return codes


def code_counts(codes: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_counts=True)`` for codes below ``2**bits``: counted when the codes are few
    (linear in the items where the sort is n log n), sorted otherwise."""
    if bits > COUNTED_BITS:
        return np.unique(codes, return_counts=True)
    every = np.bincount(codes, minlength=1 << bits)
    present = np.flatnonzero(every)  # ascending, as unique's
    return present, every[present]


def trajectory_patterns(correct: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One model's distinct trajectories ``[P, C]`` (bool) of its ``correct[I, C]``, how many items follow each,
    and each item's.

    Every per-model metric is a function of the item's trajectory, and at most 2^|G| of them exist
    however many items there are, so indicators, counts and resamples are computed per pattern.
    """
    first, counts, inverse = distinct_rows(correct)
    return np.asarray(correct)[first].astype(bool), counts, inverse


def pattern_bootstrap_means(
    rows: np.ndarray, counts: np.ndarray, n_resamples: int = 1000, seed: int | tuple[int, ...] = 0
) -> np.ndarray:
    """``[B, K]`` resampled means over items, given their distinct rows ``rows[P, K]`` and counts ``[P]``.

    Same distribution as ``bootstrap_means`` on the items the patterns stand for (module docstring),
    not the same draws: intervals agree within Monte-Carlo error.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_items = int(counts.sum())
    if n_items < 1 or n_resamples < 1:
        raise ValueError("bootstrap needs at least one item and one resample")
    weights = np.random.default_rng(seed).multinomial(n_items, counts / n_items, size=n_resamples)
    return (weights.astype(np.float64) @ np.asarray(rows, dtype=np.float64)) / n_items


def as_interval(lo_hi: np.ndarray) -> Interval:
    """A ``[lo, hi]`` pair (one column of ``percentile_interval``) as the contracts' ``Interval``."""
    return float(lo_hi[0]), float(lo_hi[1])


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> np.ndarray:
    """``[2, K]`` percentile interval of bootstrap samples ``[B, K]``; NaN samples are ignored.

    A statistic undefined in some resamples (a ratio whose denominator was resampled away) keeps
    the resamples where it is defined; one undefined in all of them gets a NaN interval.
    """
    q = [(1.0 - level) / 2.0 * 100.0, (1.0 + level) / 2.0 * 100.0]
    samples = np.asarray(samples, dtype=np.float64)
    if not np.isnan(samples).any():
        return np.percentile(samples, q, axis=0)  # the common case, and much faster
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column -> NaN interval
        return np.nanpercentile(samples, q, axis=0)


def wilson_interval(k: int | np.ndarray, n: int | np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a proportion ``k / n``: (low, high), NaN where ``n == 0``.

    Used for small groups (a task type of 13 items, a selection of 14): unlike the normal
    approximation or a percentile bootstrap, it stays inside [0, 1] and does not collapse to a
    zero-width interval at 0 or n successes.
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + level / 2)  # not scipy: 0.1-0.2 s to import on a read command
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    empty = n == 0
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0, 1))  # the formula's exact ends, not its rounding (1e-17)
    high = np.where(k == n, 1.0, np.clip(centre + half, 0, 1))
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)
