"""The exact McNemar test with the standard library and numpy: no scipy on the read commands' path (issue 37).

``scipy.special.bdtr`` cost 0.1-0.2 s to import (its array-API layer) for one binomial tail per transition, the
largest single import left on a ``metrics`` that computes. At p = 1/2 the tail is short to write exactly: the
largest term in logs (``math.lgamma``), the others as its running product of ratios. Its relative error is
about ``n * log(n)`` ulps of the largest term, 1e-9 at n = 250,000 flips and far less below; the test compares
it with scipy's on a grid of counts.
"""

from __future__ import annotations

import math
from typing import overload

import numpy as np


def binomial_half_cdf(k: int, n: int) -> float:
    """``P[X <= k]`` for ``X ~ Bin(n, 1/2)``, ``0 <= k``: the McNemar tail (``k`` the smaller count, at most n / 2,
    where every ratio of consecutive terms is below 1; larger ``k`` is read through the symmetric upper tail)."""
    if k >= n:
        return 1.0
    if 2 * k > n:
        return 1.0 - binomial_half_cdf(n - k - 1, n)
    log_top = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0)
    i = np.arange(k, 0, -1, dtype=np.float64)  # term(i - 1) / term(i) = i / (n - i + 1), from k down to 1
    return math.exp(log_top) * (1.0 + float(np.cumprod(i / (n - i + 1)).sum()))


@overload
def mcnemar_exact(rescued: int, harmed: int) -> float: ...
@overload
def mcnemar_exact(rescued: int | np.ndarray, harmed: int | np.ndarray) -> float | np.ndarray: ...
def mcnemar_exact(rescued: int | np.ndarray, harmed: int | np.ndarray) -> float | np.ndarray:
    """Two-sided exact McNemar p-value: binomial test of ``rescued`` vs ``harmed`` at p = 1/2.

    ``p = min(1, 2 * P[X <= min(r, h)])`` with ``X ~ Bin(r + h, 1/2)``; 1 when both are 0.
    Accepts scalars or arrays (one tail per element: a handful of transitions, never per item).
    """
    r, h = np.broadcast_arrays(np.asarray(rescued, dtype=np.int64), np.asarray(harmed, dtype=np.int64))
    p = np.array(
        [min(1.0, 2.0 * binomial_half_cdf(int(k), int(n))) for k, n in zip(np.minimum(r, h).flat, (r + h).flat)]
        if r.size
        else [],
        dtype=np.float64,
    ).reshape(r.shape)
    return float(p) if p.ndim == 0 else p
