"""Paired drift check: the reused path must give the cold path's answers, cell by cell.

Aggregate accuracy can hide answers that changed in both directions, so the check is paired: K
random cells of the sweep are re-run cold (decode, processor, vision, full prefill, exactly
``adapter.answer``) and compared with what the sweep stored for the same cell. Choice drift (the
answer changed) fails the sweep; correctness drift and the largest difference in an option's
probability are reported beside it. The same pairs give the cold and reused phase timings of the
same cells, which :mod:`backend.runtime.sweep.accounting` turns into shares and speed-ups.
"""

from __future__ import annotations

import numpy as np

from backend.contracts.runs import DriftCheck, DriftedCell
from backend.runtime.sweep.shard import Outcome

PROB_TOLERANCE = 1e-5


def pick(outcomes: list[Outcome], k: int, seed: int = 0) -> list[Outcome]:
    """``k`` cells drawn without replacement (all of them when fewer), reproducibly whatever the shard order."""
    if k <= 0 or not outcomes:
        return []
    outcomes = sorted(outcomes, key=lambda o: (o.item_id, o.config))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(outcomes), size=min(k, len(outcomes)), replace=False)
    return [outcomes[i] for i in sorted(chosen)]


def _prob_diff(a: Outcome, b: Outcome) -> float:
    letters = set(a.option_probs) | set(b.option_probs)
    return max((abs(a.option_probs.get(x, 0.0) - b.option_probs.get(x, 0.0)) for x in letters), default=0.0)


def pathological(o: Outcome) -> bool:
    """An empty or unparseable answer (the store keeps None when no letter or text could be read)."""
    return o.answer is None or not str(o.answer).strip()


def drift(reused: list[Outcome], cold: list[Outcome]) -> DriftCheck:
    """Paired comparison of the same cells: counts, the largest probability difference, the drifted cells.

    For open-ended cells the "choice" is the generated text. ``cold`` may be the exact twin of an
    approximate label (``32f`` for ``32f~prune85``); ``pathological`` counts the reused side's empty
    or unparseable answers (``pathological_cold`` the reference's, for comparison).
    """
    pairs = list(zip(reused, cold, strict=True))
    choice = [
        (r, c)
        for r, c in pairs
        if (r.answer, r.raw_output if r.answer is None else "") != (c.answer, c.raw_output if c.answer is None else "")
    ]
    correct = [(r, c) for r, c in pairs if r.correct != c.correct]
    diffs = [_prob_diff(r, c) for r, c in pairs]
    return DriftCheck(
        cells=len(pairs),
        choice_drift=len(choice),
        correctness_drift=len(correct),
        max_prob_diff=max(diffs, default=0.0),
        within_tolerance=all(d <= PROB_TOLERANCE for d in diffs),
        pathological=sum(pathological(r) for r, _ in pairs),
        pathological_cold=sum(pathological(c) for _, c in pairs),
        drifted=[DriftedCell(item_id=r.item_id, config=r.config, reused=r.answer, cold=c.answer) for r, c in choice],
    )
