"""``backend.analysis.mcnemar``: the exact binomial tail without scipy equals scipy's on a grid of counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import bdtr

from backend.analysis.mcnemar import binomial_half_cdf, mcnemar_exact

# every (k, n) up to 60 flips, then tails of larger n: small, a tenth, a third, around the middle, the top
GRID = [(k, n) for n in range(61) for k in range(n + 1)] + [
    (k, n)
    for n in (100, 101, 999, 1000, 5001, 74046, 249999, 250000)
    for k in sorted({0, 1, 2, n // 10, n // 3, n // 2 - 3, n // 2 - 1, n // 2, n // 2 + 1, n - 1, n})
]


@pytest.mark.parametrize("chunk", range(4))
def test_the_tail_equals_scipys_bdtr_on_a_grid(chunk):
    for k, n in GRID[chunk::4]:
        ours, ref = binomial_half_cdf(k, n), float(bdtr(k, n, 0.5))
        if ref > 1e-290:
            assert ours == pytest.approx(ref, rel=1e-8, abs=0), (k, n)
        else:  # below the smallest normal double scipy's is 0 or subnormal; ours as well
            assert ours < 1e-280, (k, n)


def test_p_equals_scipys_formula_for_scalars_and_arrays():
    r = np.array([0, 0, 3, 5, 56177, 120, 40])
    h = np.array([0, 7, 3, 1, 17869, 118, 400])
    expected = np.where(r + h == 0, 1.0, np.minimum(1.0, 2.0 * bdtr(np.minimum(r, h), r + h, 0.5)))
    assert mcnemar_exact(r, h) == pytest.approx(expected, rel=1e-8, abs=1e-300)
    assert isinstance(mcnemar_exact(3, 5), float) and mcnemar_exact(3, 5) == pytest.approx(2 * 93 / 256)
    assert mcnemar_exact(np.array([], dtype=int), np.array([], dtype=int)).shape == (0,)
