"""The step a flat curve hides the most behind: what the Overview opens on (docs/metrics.md, "The story step").

An accuracy curve moves by the *net* of its flips, ``(rescued - harmed) / items``, while ``churn``,
``(rescued + harmed) / items``, counts every item that changed state. A step is flat against its churn when
its flips cancel: its *imbalance* ``|rescued - harmed| / (rescued + harmed)`` is 0 when as many items are
harmed as rescued, 1 when every flip goes one way. The story step of a model is, among its transitions
whose churn reaches ``MIN_CHURN`` of the items, the one of least imbalance (ties: the larger churn, then the
costlier step); when no transition reaches ``MIN_CHURN``, the least imbalanced of those with any flip
(``eligible`` false); none when no item flips anywhere.

Why a churn floor: one rescued and one harmed item cancel exactly, yet say little; a step must move enough
items for its cancelling to be the story. Why the imbalance rather than the smallest ``|net|``: a step where
2 items flip both ways and one where 40 do would tie on ``|net| = 0``, but only the second hides a change.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.analysis.metrics import transition_numbers
from backend.contracts.common import Transition
from backend.contracts.views import McqaMetrics, Story

MIN_CHURN = 0.02  # a step must change the state of at least 2% of the items to be the story


def imbalance(t: Transition) -> float | None:
    """``|rescued - harmed| / (rescued + harmed)``: the share of a step's flips that the curve shows; None
    without flips."""
    flips = t.rescued + t.harmed
    return abs(t.rescued - t.harmed) / flips if flips else None


def flattest_step(transitions: Sequence[Transition], n_items: int, min_churn: float = MIN_CHURN) -> Story | None:
    """The story step among ``transitions`` (in grid order) of a model on ``n_items`` matched items, or None
    when no item flips at any of them (the rule: this module's docstring)."""
    flipped = [(k, t, share) for k, t in enumerate(transitions) if (share := imbalance(t)) is not None]
    if not flipped:
        return None
    eligible = [f for f in flipped if f[1].churn >= min_churn]
    _, step, share = min(eligible or flipped, key=lambda f: (f[2], -f[1].churn, -f[0]))
    return Story(
        **transition_numbers(step), n_items=n_items, imbalance=share, min_churn=min_churn, eligible=bool(eligible)
    )


def stories(metrics: McqaMetrics) -> dict[str, Story | None]:
    """Every model's story step over its reported transitions (consecutive unless other pairs were asked for)."""
    return {model: flattest_step(rec.transitions, metrics.n_items) for model, rec in metrics.models.items()}
