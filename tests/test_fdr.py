"""Benjamini-Hochberg through scipy's ``false_discovery_control`` gives the q-values of the hand version it replaced.

The reference is the definition itself, ``q_(i) = min_{j >= i} p_(j) m / j`` capped at 1, written as a plain
double loop (the replaced code computed the same with a reversed running minimum), on inputs with ties,
p = 1, p = 0 and a family larger than the p-values given (the missing tests count as p = 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from backend.analysis.explain import benjamini_hochberg


def by_definition(p: list[float], m: int) -> list[float]:
    """``min_{j >= i} p_(j) m / j`` over the sorted p-values, capped at 1, returned in ``p``'s order."""
    ranked = sorted(range(len(p)), key=lambda i: p[i])
    q = [0.0] * len(p)
    for i, at in enumerate(ranked):
        q[at] = min(1.0, min(p[ranked[j]] * m / (j + 1) for j in range(i, len(p))))
    return q


CASES = [
    ([0.01, 0.04, 0.03, 0.005], None),
    ([0.01, 0.04, 0.03, 0.005], 6),
    ([0.02, 0.021], None),
    ([0.03, 0.03, 0.03, 0.2, 0.2], None),  # ties
    ([1.0, 0.5, 1.0, 0.001], None),  # p = 1
    ([1.0, 1.0], 5),
    ([0.0, 0.04, 0.0], 3),
    ([0.7], None),
    ([0.7], 4),
]


@pytest.mark.parametrize(("p", "n_tests"), CASES)
def test_q_values_equal_the_definition(p, n_tests):
    m = len(p) if n_tests is None else n_tests
    assert benjamini_hochberg(np.array(p), n_tests) == pytest.approx(by_definition(p, m), rel=1e-12, abs=0)


def test_many_random_p_values_with_ties_equal_the_definition():
    rng = np.random.default_rng(7)
    p = np.round(rng.uniform(0, 1, 300), 2)  # rounding makes many ties
    p[:10] = 1.0
    q = benjamini_hochberg(p, 400)
    assert q == pytest.approx(by_definition(p.tolist(), 400), rel=1e-12, abs=0)
    assert (q >= p).all() and (q <= 1).all()


def test_empty_and_too_small_a_family():
    assert benjamini_hochberg(np.array([])).size == 0
    with pytest.raises(ValueError, match="n_tests"):
        benjamini_hochberg(np.array([0.1, 0.2]), 1)
