"""Sampling interventions and protocol sensitivity: the same budget fed under another policy or pipeline.

A *budget* is (frames, pixels per frame); a *protocol* is what else the label says: its sampling
policy (``random-s1``, ``dense-start``) or a scale-grid tag (``fallback``), ``uniform`` when it says
neither. ``64f/random-s1`` is the ``random-s1`` counterpart of ``64f``.

* Recovery rate (docs/metrics.md): among the terminal regressions of the base grid (wrong at the top
  budget, right at some cheaper config), the share that the top budget gets right under
  protocol P. Each P is read on the matched items of the grid plus P's top counterpart.
* Agreement: P's grid is the base grid with every config that has a P counterpart in the store
  replaced by it; per replaced config, Cohen's kappa between the base and P correctness, a pooled
  kappa over all replaced cells, and how the item tags (``backend.scope.tags``) change between the grids.
* The intervention itself (re-running the terminal regressions under P) is not analysis: the requests
  built here go to ``backend.runtime.rerun.submit_many``, which validates each one and joins or skips
  duplicates.
"""

from __future__ import annotations

import numpy as np

from backend.analysis.stats import as_interval, bootstrap_means, percentile_interval, wilson_interval
from backend.contracts.audits import (
    Agreement,
    InterventionsAudit,
    ProtocolAgreement,
    ProtocolConfig,
    Recovery,
    TagChange,
)
from backend.scope.matrix import Matrix
from backend.scope.tags import TAGS, tag_masks, terminal_regression, top_index
from store import configs
from store.errors import UserError
from store.rerun_request import RerunRequest


def budget_key(label: str) -> tuple[int, float | None, int | None]:
    """(frames, frame rate, pixels per frame): what a protocol change keeps fixed."""
    c = configs.parse(label)
    return c.frames, c.fps, c.pixels


def protocol(label: str) -> str:
    """The label's protocol (``store.configs.Config.protocol``): policy, else scale-grid tag, else ``uniform``."""
    return configs.parse(label).protocol


def base_grid(labels: list[str], model: str, benchmark: str | None = None) -> list[str]:
    """The default grid for protocol audits: the model's main-run configs (``labels``) under the uniform protocol."""
    grid = [lab for lab in labels if protocol(lab) == configs.DEFAULT_POLICY]
    if not grid:
        raise UserError(f"model {model!r} has no uniform-protocol configs{f' on {benchmark!r}' if benchmark else ''}")
    return grid


def counterparts(base: list[str], available: list[str]) -> dict[str, dict[str, str]]:
    """``{protocol: {base label: its counterpart}}`` for every protocol other than each base label's own."""
    out: dict[str, dict[str, str]] = {}
    keys = {label: budget_key(label) for label in base}
    for label in available:
        key, proto = budget_key(label), protocol(label)
        for b, bkey in keys.items():
            if bkey == key and proto != protocol(b) and label not in base:
                out.setdefault(proto, {})[b] = label
    return dict(sorted(out.items()))


def protocol_tops(grid: list[str], available: list[str]) -> list[str]:
    """The configs of ``grid`` that another protocol in ``available`` also ran, in grid order.

    A recovery rate is read at the top of the audited grid, so these are the tops it can use.
    """
    grid = [configs.canonical(g) for g in grid]
    paired = {b for pairs in counterparts(grid, available).values() for b in pairs}
    return [g for g in grid if g in paired]


# Sampling policies offered for an intervention the store has no answers for yet (``backend.runtime.sampling``).
STANDARD_ALTERNATIVES = ("random-s1", "random-s2", "dense-start", "midpoint")


def intervention_labels(top: str, available: list[str]) -> list[str]:
    """Labels an intervention at ``top`` can re-run: other protocols already stored there, then standard ones."""
    top = configs.canonical(top)
    stored = [pairs[top] for pairs in counterparts([top], available).values() if top in pairs]
    if not configs.parse(top).is_budget_step:  # only a plain budget step has standard alternatives
        return stored
    new = [configs.canonical(f"{top}/{p}") for p in STANDARD_ALTERNATIVES]
    return stored + [label for label in new if label not in stored]


def grid_up_to(grid: list[str], top: str) -> list[str]:
    """The configs of ``grid`` strictly cheaper than ``top``, then ``top``: a base grid ending there."""
    grid = [configs.canonical(g) for g in grid]
    top = configs.canonical(top)
    if top not in grid:
        raise UserError(f"{top!r} is not in the grid {','.join(grid)}")
    lower = configs.lower_matrix(grid)
    t = grid.index(top)
    return [g for j, g in enumerate(grid) if lower[j, t]] + [top]


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two binary raters (or boolean selections of the same items); NaN when undefined.

    ``(p_o - p_e) / (1 - p_e)`` with ``p_e = p_a p_b + (1 - p_a)(1 - p_b)``; when both raters are
    constant and equal (``p_e = 1``) kappa is undefined (NaN), not 1, and so it is without items (no
    agreement to measure: NaN, not a mean of nothing with its warning). The one kappa of the project:
    the audits (per replaced configuration) and "Why these items?" (two models' selections) both use it.
    """
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a.size == 0:
        return float("nan")
    po = float((a == b).mean())
    pa, pb = float(a.mean()), float(b.mean())
    pe = pa * pb + (1 - pa) * (1 - pb)
    return float("nan") if pe >= 1.0 else (po - pe) / (1.0 - pe)


def grid_top(grid: list[str]) -> tuple[list[str], str]:
    """The grid, canonical, and its top (costliest) config."""
    grid = [configs.canonical(g) for g in grid]
    return grid, grid[top_index(grid, configs.lower_matrix(grid))]


def recovery(matrix: Matrix, grid: list[str], policy_label: str, bootstrap: int = 1000, seed: int = 0) -> Recovery:
    """Recovery of the base grid's terminal regressions when the top budget is run as ``policy_label``.

    Also ``harm_rate``: among the items right at the top under the base protocol, the share that
    ``policy_label`` gets wrong (what the intervention costs elsewhere), and the top's kappa.
    ``matrix`` is the model's matched matrix over ``recovery_grid(grid, policy_label)``.
    """
    *grid, policy_label = recovery_grid(grid, policy_label)
    top = grid[top_index(grid, configs.lower_matrix(grid))]
    y = matrix.correct[0].astype(bool)
    base, alt = y[:, : len(grid)], y[:, len(grid)]
    lower = configs.lower_matrix(grid)
    terminal = terminal_regression(base, lower, grid.index(top))
    base_top = base[:, grid.index(top)]
    n_terminal, n_right = int(terminal.sum()), int(base_top.sum())
    out = Recovery(
        policy=policy_label,
        protocol=protocol(policy_label),
        n_items=matrix.n_items,
        n_excluded=matrix.n_excluded,
        n_terminal=n_terminal,
        n_recovered=int((terminal & alt).sum()),
        recovery_rate=(terminal & alt).sum() / n_terminal if n_terminal else None,
        harm_rate=(base_top & ~alt).sum() / n_right if n_right else None,
        kappa_top=cohen_kappa(base_top, alt) if matrix.n_items else None,
        recovery_ci=None,
        # Wilson 95% over the n_terminal items: valid at the small n an intervention often has
        # (a percentile bootstrap of 2 items collapses to [0, 0]).
        recovery_wilson=as_interval(np.asarray(wilson_interval(int((terminal & alt).sum()), n_terminal)))
        if n_terminal
        else None,
    )
    if bootstrap and n_terminal:
        boot = bootstrap_means(np.column_stack([terminal, terminal & alt]), bootstrap, seed).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(boot[:, 0] > 0, boot[:, 1] / boot[:, 0], np.nan)
        out.recovery_ci = as_interval(percentile_interval(rate))
    return out


def recovery_grid(grid: list[str], policy_label: str) -> list[str]:
    """The configs a recovery reads: the base grid, then ``policy_label``, which must be another protocol at its top."""
    grid, top = grid_top(grid)
    label = configs.canonical(policy_label)
    if budget_key(label) != budget_key(top) or label == top:
        raise UserError(f"{policy_label!r} is not another protocol at the top budget {top!r} (same frames and pixels)")
    return grid + [label]


def _tag_changes(base: np.ndarray, alt: np.ndarray, grid: list[str], alt_grid: list[str]) -> dict[str, TagChange]:
    mb = tag_masks(base, grid, configs.lower_matrix(grid))
    ma = tag_masks(alt, alt_grid, configs.lower_matrix(alt_grid))
    return {
        t: TagChange(
            base=int(mb[t].sum()),
            protocol=int(ma[t].sum()),
            both=int((mb[t] & ma[t]).sum()),
            gained=int((ma[t] & ~mb[t]).sum()),
            lost=int((mb[t] & ~ma[t]).sum()),
        )
        for t in TAGS
    }


def protocol_grids(grid: list[str], pairs: dict[str, str]) -> tuple[list[str], list[str]]:
    """(the union an agreement's matrix is loaded over, the protocol's grid): the base grid with its counterparts."""
    alt_grid = [pairs.get(label, label) for label in grid]
    return grid + [pairs[label] for label in grid if label in pairs], alt_grid


def agreement(matrix: Matrix, grid: list[str], proto: str, pairs: dict[str, str]) -> Agreement:
    """Kappa per replaced config, pooled kappa, and tag changes between the base grid and ``proto``'s.

    ``matrix`` is the model's matched matrix over ``protocol_grids(grid, pairs)[0]``.
    """
    _, alt_grid = protocol_grids(grid, pairs)
    y = matrix.correct[0].astype(bool)
    base = y[:, [matrix.grid.index(g) for g in grid]]
    alt = y[:, [matrix.grid.index(g) for g in alt_grid]]
    replaced = [j for j, g in enumerate(grid) if g in pairs]
    per_config: list[ProtocolConfig] = [
        ProtocolConfig(
            config=grid[j],
            counterpart=alt_grid[j],
            kappa=cohen_kappa(base[:, j], alt[:, j]),
            agreement=float((base[:, j] == alt[:, j]).mean()) if len(y) else None,
            rescued=int((~base[:, j] & alt[:, j]).sum()),
            harmed=int((base[:, j] & ~alt[:, j]).sum()),
        )
        for j in replaced
    ]
    return Agreement(
        protocol=proto,
        n_items=matrix.n_items,
        n_excluded=matrix.n_excluded,
        grid=alt_grid,
        per_config=per_config,
        kappa_pooled=cohen_kappa(base[:, replaced].ravel(), alt[:, replaced].ravel()),
        tag_changes=_tag_changes(base, alt, grid, alt_grid) if len(y) else {},
    )


def audited_protocols(
    grid: list[str], labels: list[str], model: str, protocols: list[str] | None = None
) -> dict[str, dict[str, str]]:
    """``counterparts`` of the grid among the model's stored ``labels``, restricted to ``protocols`` when named
    (``UserError`` naming those the store lacks)."""
    found = counterparts(grid, labels)
    if not protocols:
        return found
    unknown = sorted(set(protocols) - set(found))
    if unknown:
        raise UserError(
            f"model {model!r} has no config under protocol(s) {', '.join(unknown)} at the budgets of "
            f"{','.join(grid)} (found: {', '.join(found) or 'none'})"
        )
    return {p: found[p] for p in protocols}


def audit(model: str, grid: list[str], rows: list[ProtocolAgreement]) -> InterventionsAudit:
    """The ``audit interventions --json`` contract: the audited grid and, per protocol, its agreement and recovery."""
    grid, top = grid_top(grid)
    return InterventionsAudit(model=model, grid=grid, top=top, base_protocol=protocol(top), protocols=rows)


def intervention_requests(matrix: Matrix, model: str, policy_label: str) -> list[RerunRequest]:
    """Re-run requests for the terminal regressions of ``model`` in this view, at ``policy_label``.

    ``policy_label`` must be the top budget under another protocol (same frames and pixels).
    """
    top = matrix.grid[top_index(matrix.grid, matrix.lower)]
    label = configs.canonical(policy_label)
    if budget_key(label) != budget_key(top) or label == top:
        raise UserError(f"{policy_label!r} is not another protocol at the top budget {top!r} (same frames and pixels)")
    y = matrix.correct[matrix.model_index(model)].astype(bool)
    terminal = terminal_regression(y, matrix.lower, matrix.grid.index(top))
    items = matrix.items.loc[terminal, ["benchmark", "item_id"]]
    return [RerunRequest(model, b, i, label) for b, i in items.itertuples(index=False)]
