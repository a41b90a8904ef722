"""Iso-compute allocations: configurations of (nearly) equal pixel budget, and which one each item needs.

The pixel budget of a configuration is frames x pixels per frame (``store.configs``). Labels without
a spatial part use the model's default resolution, which the responses do not record; pass
``default_pixels`` (or register it: ``store.registry`` holds a model's default resolution) to place them,
otherwise they are left out. Text-only and non-uniform sampling
policies are not allocations of pixels (see ``backend.analysis.interventions`` for protocols) and are left
out too.

Grouping is a single pass over the budgets in increasing order: a group starts at the cheapest
unplaced configuration and takes every one within ``(1 + tolerance)`` times its budget. Only groups
with at least two different frame counts are allocations to compare.

Per group, on the matched items: the accuracy of each allocation, the item patterns (which
allocations are right on the item, counted once per distinct pattern), the oracle over the group
(right under some allocation) against the best single one, and the difference (complementarity)
with a paired-bootstrap interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from backend.analysis.stats import as_interval, bootstrap_means, percentile_interval
from backend.contracts.audits import BestSingle, IsocomputeAudit, IsoConfig, IsoGroup
from backend.scope.matrix import Matrix
from store import configs
from store.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_TOLERANCE = 0.10


def pixel_budget(label: str, default_pixels: int | None = None) -> float | None:
    """Frames x pixels per frame; None for text, non-uniform policies and unknown resolutions."""
    c = configs.parse(label)
    if c.is_text or c.policy != configs.DEFAULT_POLICY:
        return None
    pixels = c.pixels if c.pixels is not None else default_pixels
    return None if pixels is None else float(c.frames * pixels)


def iso_groups(
    labels: list[str], tolerance: float = DEFAULT_TOLERANCE, default_pixels: int | None = None
) -> list[list[str]]:
    """Groups of labels whose pixel budgets lie within ``(1 + tolerance)`` of the group's cheapest."""
    if tolerance < 0:
        raise UserError(f"--tolerance must be >= 0 (got {tolerance})")
    budgets = {lab: b for lab in labels if (b := pixel_budget(lab, default_pixels)) is not None}
    ordered = sorted(budgets, key=lambda lab: (budgets[lab], configs.sort_key(lab)))
    groups: list[list[str]] = []
    start = None
    for lab in ordered:  # configuration labels, a handful
        if start is None or budgets[lab] > start * (1 + tolerance):
            groups.append([])
            start = budgets[lab]
        groups[-1].append(lab)
    return [g for g in groups if len({configs.parse(lab).frames for lab in g}) >= 2]


def _pattern_names(codes: np.ndarray, grid: list[str]) -> np.ndarray:
    names = np.empty(len(codes), dtype=object)
    full = (1 << len(grid)) - 1
    for k, code in enumerate(codes):  # distinct patterns, at most 2^len(group)
        names[k] = (
            "none" if code == 0 else "all" if code == full else "+".join(g for j, g in enumerate(grid) if code >> j & 1)
        )
    return names


def item_patterns(matrix: Matrix, model: str) -> pd.Series:
    """Per item, the allocations that answer it correctly (``all``, ``none`` or ``a+b``)."""
    import pandas as pd  # a Series is the product: not imported by the module's numbers

    y = matrix.correct[matrix.model_index(model)].astype(np.int64)
    codes = y @ (1 << np.arange(y.shape[1], dtype=np.int64))
    uniq, inverse = np.unique(codes, return_inverse=True)
    return pd.Series(_pattern_names(uniq, matrix.grid)[inverse], index=matrix.items.index, name="pattern")


def compare_group(
    matrix: Matrix, model: str, budgets: dict[str, float], bootstrap: int = 1000, seed: int = 0
) -> IsoGroup:
    """One group's allocations on the matched items: accuracies, unique wins, patterns, complementarity."""
    y = matrix.correct[matrix.model_index(model)].astype(bool)
    n = matrix.n_items
    if n == 0:
        raise UserError(f"no item has a response at every one of {','.join(matrix.grid)} for {model!r}")
    acc = y.mean(axis=0)
    oracle = float(y.any(axis=1).mean())
    only = y & (y.sum(axis=1, keepdims=True) == 1)
    counts = item_patterns(matrix, model).value_counts()
    out = IsoGroup(
        configs=[
            IsoConfig(
                config=g,
                frames=configs.parse(g).frames,
                pixel_budget=budgets[g],
                accuracy=float(acc[j]),
                unique_wins=int(only[:, j].sum()),
            )
            for j, g in enumerate(matrix.grid)
        ],
        n_items=n,
        n_excluded=matrix.n_excluded,
        best_single=BestSingle(config=matrix.grid[int(acc.argmax())], accuracy=float(acc.max())),
        oracle_accuracy=oracle,
        complementarity=oracle - float(acc.max()),
        patterns={str(k): int(v) for k, v in counts.items()},
        complementarity_ci=None,
    )
    if bootstrap:
        boot = bootstrap_means(np.column_stack([y, y.any(axis=1)]), bootstrap, seed).astype(np.float64)
        out.complementarity_ci = as_interval(percentile_interval(boot[:, -1] - boot[:, :-1].max(axis=1)))
    return out


def isocompute(
    model: str, labels: list[str], tolerance: float, default_pixels: int | None, groups: list[IsoGroup]
) -> IsocomputeAudit:
    """The ``audit isocompute --json`` contract: ``compare_group`` of each of ``iso_groups(labels)``, in order,
    or a note saying why no two configurations could be compared."""
    out = IsocomputeAudit(model=model, tolerance=tolerance, default_pixels=default_pixels, groups=groups)
    if not groups:
        placed = [lab for lab in labels if pixel_budget(lab, default_pixels) is not None]
        out.note = (
            f"no two configurations of {model!r} with different frame counts lie within {100 * tolerance:g}% "
            f"of the same pixel budget (placed: {', '.join(placed) or 'none'}; labels without '@<n>k' need "
            "--default-pixels)"
        )
    return out
