"""Noise-aware flips: how often an item's correctness changes under mere repeats, and which flips exceed it.

Repeats of a cell are every stored response of the same model and item at the same *budget*
(frames, pixels per frame), whatever its ``run`` id, seed, sampling policy or pipeline tag
(``64f``, ``64f/random-s1`` and a re-run of ``64f`` are three repeats of budget 64 frames). The
matrix keeps one row per cell, so repeats are counted from the ``responses`` view by
``backend.scope.repeats.load_repeats``; this module turns the counts into rates and classes.

An item's *flip rate* at a budget with ``n >= 2`` repeats of which ``k`` are right is the chance
that two different repeats disagree, ``2 k (n - k) / (n (n - 1))``; with fewer repeats it is not
measured (NaN).

Rule for a transition ``a -> b`` on an item whose correctness differs between a and b:

* **within noise** when the item's flip rate at a's budget or at b's is above 0;
* **beyond noise** when it is measured at a's budget or b's (or both) and 0 wherever measured;
* **unmeasured** when neither budget has repeats for the item.

Pages that hide within-noise flips drop the items ``within_noise`` marks for the pair: flips
beyond noise and unmeasured ones stay (an item without repeats has no noise to hide behind).
``transitions_without_noise`` and ``sankey_without_noise`` give the Overview's bars and the Flows
page's links under that rule, the same numbers ``trajaudit flows --beyond-noise`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from backend.analysis.mcnemar import mcnemar_exact
from backend.analysis.metrics import flow_record, transition, transition_numbers
from backend.contracts.audits import NoiseAudit, NoiseConfig
from backend.contracts.base import UNSET, replace
from backend.contracts.common import QuietTransition
from backend.contracts.views import Sankey, SankeyLink
from backend.scope.matrix import Matrix
from backend.scope.repeats import Repeats
from store import configs

if TYPE_CHECKING:
    import pandas as pd

FLIP_CLASSES = ("within", "beyond", "unmeasured")


@dataclass
class NoiseProfile:
    """Repeat counts and flip rates aligned with a matrix's (model, item, config) cells."""

    models: list[str]
    grid: list[str]
    n_repeats: np.ndarray  # int32 [M, I, C]: responses at the cell's budget
    flip_rate: np.ndarray  # float64 [M, I, C]: NaN where n_repeats < 2

    def cell(self, model: str, label: str) -> tuple[int, int]:
        return self.models.index(model), self.grid.index(label)


def noise_profile(matrix: Matrix, repeats: Repeats) -> NoiseProfile:
    """Flip rates of the matrix's cells from their repeat counts (``backend.scope.repeats.load_repeats``)."""
    n_rep, n_right = repeats.n_repeats, repeats.n_right
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n_rep >= 2, 2.0 * n_right * (n_rep - n_right) / (n_rep * (n_rep - 1.0)), np.nan)
    return NoiseProfile(list(matrix.models), list(matrix.grid), n_rep, rate)


def flip_classes(matrix: Matrix, profile: NoiseProfile, model: str, a: str, b: str) -> np.ndarray:
    """Per item: ``stable`` (no flip a -> b) or the flip's class in ``FLIP_CLASSES``."""
    m, ia = profile.cell(model, configs.canonical(a))
    _, ib = profile.cell(model, configs.canonical(b))
    flip = matrix.correct[m, :, ia] != matrix.correct[m, :, ib]
    rates = profile.flip_rate[m][:, [ia, ib]]
    noisy = (rates > 0).any(axis=1)
    measured = (~np.isnan(rates)).any(axis=1)
    kind = np.select([noisy, measured], ["within", "beyond"], "unmeasured").astype(object)
    return np.where(flip, kind, "stable")


def within_noise(matrix: Matrix, profile: NoiseProfile, model: str, a: str, b: str) -> np.ndarray:
    """Items whose flip a -> b is within the item's own repeat noise (what pages hide on request)."""
    return flip_classes(matrix, profile, model, a, b) == "within"


def split_transition(matrix: Matrix, profile: NoiseProfile, model: str, a: str, b: str) -> QuietTransition:
    """The transition record of ``backend.analysis.metrics`` plus rescued/harmed split by flip class.

    ``mcnemar_p_beyond`` tests rescued vs harmed among the beyond-noise flips only.
    """
    record = transition(matrix, model, a, b)
    kind = flip_classes(matrix, profile, model, a, b)
    rescued = matrix.correct[profile.models.index(model), :, matrix.config_index(b)].astype(bool) & (kind != "stable")
    within, beyond, unmeasured = (kind == cls for cls in FLIP_CLASSES)
    rescued_beyond, harmed_beyond = int((beyond & rescued).sum()), int((beyond & ~rescued).sum())
    return QuietTransition(
        **transition_numbers(record),
        rescued_within=int((within & rescued).sum()),
        harmed_within=int((within & ~rescued).sum()),
        rescued_beyond=rescued_beyond,
        harmed_beyond=harmed_beyond,
        rescued_unmeasured=int((unmeasured & rescued).sum()),
        harmed_unmeasured=int((unmeasured & ~rescued).sum()),
        mcnemar_p_beyond=mcnemar_exact(rescued_beyond, harmed_beyond),
    )


def summary(
    matrix: Matrix, profile: NoiseProfile, model: str, pairs: list[tuple[str, str]] | None = None
) -> NoiseAudit:
    """The ``audit noise --json`` contract for one model: per config and per item noise, split transitions."""
    m = profile.models.index(model)
    rate = profile.flip_rate[m]
    measured = ~np.isnan(rate)
    per_config: list[NoiseConfig] = [
        NoiseConfig(
            config=g,
            max_repeats=int(profile.n_repeats[m, :, c].max(initial=0)),
            n_items_measured=int(measured[:, c].sum()),
            mean_flip_rate=float(np.nanmean(rate[:, c])) if measured[:, c].any() else None,
            share_noisy=float((rate[:, c] > 0).sum() / measured[:, c].sum()) if measured[:, c].any() else None,
        )
        for c, g in enumerate(profile.grid)
    ]
    any_measured = measured.any(axis=1)
    item_rate = np.nansum(rate, axis=1)[any_measured] / measured.sum(axis=1)[any_measured]  # mean over measured configs
    pairs = pairs or list(zip(profile.grid[:-1], profile.grid[1:], strict=True))
    return NoiseAudit(
        model=model,
        grid=profile.grid,
        n_items=matrix.n_items,
        n_items_with_repeats=int(any_measured.sum()),
        n_items_noisy=int((rate > 0).any(axis=1).sum()),
        mean_item_flip_rate=float(item_rate.mean()) if len(item_rate) else None,
        per_config=per_config,
        transitions=[split_transition(matrix, profile, model, a, b) for a, b in pairs],
    )


def item_noise(matrix: Matrix, profile: NoiseProfile, model: str, measured_only: bool = False) -> pd.DataFrame:
    """Per item: repeats and flip rate at each config (columns ``repeats[c]``, ``flip_rate[c]``).

    ``measured_only`` keeps the items with at least two repeats at some config, noisiest first.
    """
    m = profile.models.index(model)
    out = matrix.items[["benchmark", "item_id", "task_type"]].copy()
    for c, g in enumerate(profile.grid):
        out[f"repeats[{g}]"] = profile.n_repeats[m, :, c]
        out[f"flip_rate[{g}]"] = profile.flip_rate[m, :, c]
    if not measured_only:
        return out
    rate = profile.flip_rate[m]
    measured = ~np.isnan(rate).all(axis=1)
    out["max_flip_rate"] = np.where(measured, np.nanmax(np.where(np.isnan(rate), -1.0, rate), axis=1), np.nan)
    return out.loc[measured].sort_values(["max_flip_rate", "item_id"], ascending=[False, True]).reset_index(drop=True)


def transition_without_noise(matrix: Matrix, profile: NoiseProfile, model: str, a: str, b: str) -> QuietTransition:
    """The transition ``a -> b`` counting only the flips not within noise (net, churn, McNemar p redone).

    ``hidden_rescued`` / ``hidden_harmed`` say how many within-noise flips were dropped; the
    ``*_within``, ``*_beyond`` and ``*_unmeasured`` splits of ``split_transition`` are kept.
    """
    split = split_transition(matrix, profile, model, a, b)
    hidden_r, hidden_h = split.rescued_within or 0, split.harmed_within or 0  # set by split_transition
    record = flow_record(split.from_, split.to, split.rescued - hidden_r, split.harmed - hidden_h, matrix.n_items)
    return replace(split, **transition_numbers(record), hidden_rescued=hidden_r, hidden_harmed=hidden_h)


def transitions_without_noise(
    matrix: Matrix, profile: NoiseProfile, model: str, pairs: list[tuple[str, str]] | None = None
) -> list[QuietTransition]:
    """``transition_without_noise`` for each pair (default: consecutive configs, as the Overview draws)."""
    pairs = pairs or list(zip(matrix.grid[:-1], matrix.grid[1:], strict=True))
    return [transition_without_noise(matrix, profile, model, a, b) for a, b in pairs]


def sankey_without_noise(view: Sankey, matrix: Matrix, profile: NoiseProfile) -> Sankey:
    """A ``backend.analysis.flows.sankey`` view whose rescued/harmed links leave out within-noise flips.

    Stable links and the nodes (items per state at each config) are unchanged; each link's pair
    numbers are those of ``transition_without_noise`` and ``n_hidden`` totals the dropped flips.
    """
    pairs = list(dict.fromkeys((link.from_, link.to) for link in view.links))
    quiet = {(t.from_, t.to): t for t in transitions_without_noise(matrix, profile, view.model, pairs)}
    n = view.n_items
    links: list[SankeyLink] = []
    for link in view.links:  # four links per config pair
        pair = quiet[(link.from_, link.to)]
        count = pair.rescued if link.kind == "rescued" else pair.harmed if link.kind == "harmed" else link.count
        numbers = transition_numbers(pair)
        links.append(replace(link, count=count, share=count / n, hidden_within=link.count - count, **numbers))
    n_hidden = int(sum(lk.hidden_within for lk in links if lk.hidden_within is not UNSET))
    return replace(view, links=links, within_noise_hidden=True, n_hidden=n_hidden)


def drop_within_noise(
    items: pd.DataFrame, matrix: Matrix, profile: NoiseProfile, model: str, a: str, b: str
) -> pd.DataFrame:
    """Rows of ``items`` (benchmark, item_id) whose flip ``a -> b`` is not within noise (a flow's item list)."""
    import pandas as pd  # a frame in, a frame out: not imported where only the numbers are read

    noisy = matrix.items.loc[within_noise(matrix, profile, model, a, b), ["benchmark", "item_id"]]
    keep = ~pd.MultiIndex.from_frame(items[["benchmark", "item_id"]]).isin(pd.MultiIndex.from_frame(noisy))
    return items.loc[keep].reset_index(drop=True)
