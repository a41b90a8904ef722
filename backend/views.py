"""One report per view: the dict a page draws is the dict its CLI twin prints with ``--json``.

Each function takes a resolved ``Scope`` and its matched matrix (pages cache the matrix; the CLI
loads it once) and returns plain data, with the scope itself under ``"scope"`` so a reader always
knows which grid, items and exclusions a number belongs to.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.analysis import cascade, compare, crossflows, explain, flows, interventions, isocompute, noise, selection
from backend.analysis.continuous import continuous_metrics
from backend.analysis.metrics import FLOW_KINDS, flow_items, mcqa_metrics, task_type_breakdown
from backend.contracts.audits import (
    Agreement,
    CrossmodelAudit,
    InterventionsAudit,
    IsocomputeAudit,
    ProtocolAgreement,
    Recovery,
)
from backend.contracts.explain import ExplainReport
from backend.contracts.inspector import ItemTexts
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport, PredictorReport
from backend.contracts.runs import BatchComparison, RerunBatch, SelectionRerunReport
from backend.contracts.views import CompareReport, FlowsReport, ItemsPage, OverviewReport
from backend.runtime.selection import progress as batch_progress
from backend.scope.answer_cells import load_answer_cells
from backend.scope.filters import ItemFilter
from backend.scope.items import item_page
from backend.scope.labels import store_labels
from backend.scope.matrix import Matrix, load_matrix
from backend.scope.repeats import load_repeats
from backend.scope.resolve import Resolved
from backend.scope.selection import Selection, selection_answers
from backend.scope.texts import item_texts
from store import configs
from store.errors import UserError
from store.store import Store


def overview(store: Store, resolved: Resolved, matrix: Matrix, bootstrap: int = 1000, seed: int = 0,
             pairs: list[tuple[str, str]] | None = None) -> OverviewReport:  # fmt: skip
    """The Overview (``trajaudit metrics``): every MCQA metric with 95% intervals, per-task-type tables.

    With ``beyond_noise`` each model's ``transitions`` count only flips beyond the item's repeat
    noise (the bars' view); the curve and the headline numbers always count every item.
    """
    if bootstrap < 0:
        raise UserError("--bootstrap must be >= 0")
    out = mcqa_metrics(matrix, bootstrap=bootstrap, seed=seed, pairs=pairs)
    out["excluded_reasons"] = matrix.excluded_reasons
    if np.isfinite(matrix.score).any():
        for model in matrix.models:
            cont = continuous_metrics(matrix, model, bootstrap=bootstrap, seed=seed)
            if cont is not None:
                out["models"][model]["continuous"] = cont
    out["task_types"] = {m: task_type_breakdown(matrix, m).to_dict("records") for m in matrix.models}
    if resolved.scope.beyond_noise:
        profile = noise_profile(store, matrix)
        for model in matrix.models:
            out["models"][model]["transitions"] = noise.transitions_without_noise(matrix, profile, model)
    out["scope"] = resolved.header(matrix)
    return out


def flows_view(store: Store, resolved: Resolved, matrix: Matrix, model: str, pair: tuple[str, str] | None = None,
               kind: str | None = None, limit: int | None = 100) -> FlowsReport:  # fmt: skip
    """The Flows page (``trajaudit flows``): the Sankey's nodes and links, trajectory classes, a flow's items."""
    if kind is not None and (kind not in FLOW_KINDS or pair is None):
        raise UserError(f"a flow's items need --from/--to and --kind in {', '.join(FLOW_KINDS)}")
    if limit is not None and limit < 0:
        raise UserError("--limit must be >= 0")
    out = flows.sankey(matrix, model, None if pair is None else list(pair))
    profile = noise_profile(store, matrix) if resolved.scope.beyond_noise else None
    if profile is not None:
        out = noise.sankey_without_noise(out, matrix, profile)
    out["trajectory_classes"] = flows.heatmap(matrix, model, max_rows=1)["class_counts"]
    if kind is not None and pair is not None:
        items = flow_item_table(store, resolved, matrix, model, pair, kind, profile)
        out["n_flow_items"] = len(items)
        out["items"] = (items if limit is None else items.head(limit)).to_dict("records")
    out["scope"] = resolved.header(matrix)
    return out


def flow_item_table(store: Store, resolved: Resolved, matrix: Matrix, model: str, pair: tuple[str, str], kind: str,
                    profile: noise.NoiseProfile | None = None) -> pd.DataFrame:  # fmt: skip
    """Every item of one flow (``flows_view``'s ``items``, as a table): the Flows page lists them a page at a time
    (as records, a large flow was slow to build and as slow again to cache)."""
    items = flow_items(matrix, model, pair[0], pair[1], kind)
    if resolved.scope.beyond_noise:
        profile = profile if profile is not None else noise_profile(store, matrix)
        items = noise.drop_within_noise(items, matrix, profile, model, pair[0], pair[1])
    return items


def items_page(resolved: Resolved, matrix: Matrix, model: str, sort: str = "item", descending: bool = False,
               page: int = 1, page_size: int = 50) -> ItemsPage:  # fmt: skip
    """The Items page (``trajaudit items --page``): one sorted page, with every sort key per row."""
    rows, n_pages = item_page(matrix, model, sort, descending, page, page_size)
    return {
        "model": model,
        "sort": sort,
        "descending": descending,
        "page": min(max(1, int(page)), n_pages),
        "page_size": page_size,
        "n_pages": n_pages,
        "rows": rows.to_dict("records"),
        "scope": resolved.header(matrix),
    }


def compare_view(
    resolved: Resolved, matrix: Matrix, top: int | None = 50, bootstrap: int = 1000, seed: int = 0
) -> CompareReport:
    """The Compare page (``trajaudit compare``): headline metrics side by side, confused-item overlap, disagreement."""
    if (top is not None and top < 0) or bootstrap < 0:
        raise UserError("--top and --bootstrap must be >= 0")
    metrics = mcqa_metrics(matrix, bootstrap=bootstrap, seed=seed)
    out = {
        "grid": metrics["grid"],
        "n_items": metrics["n_items"],
        "n_excluded": metrics["n_excluded"],
        "metrics": metrics["models"],
    }
    if len(matrix.models) > 1:
        ov = compare.confusion_overlap(matrix)
        ov["shared_share"] = ov["confused_by_all"] / ov["confused_by_any"] if ov["confused_by_any"] else None
        out["overlap"] = ov
        out["disagreement"] = compare.disagreement(matrix, top=top or None).to_dict("records")
    out["scope"] = resolved.header(matrix)
    return out


def policy_ladder(resolved: Resolved, ladder: list[str] | None = None) -> list[str]:
    """The budgets the Policies page and ``cascade``/``predictor`` use: the given ones, else the
    visual configurations of the scope's grid (so a default view's ladder is the default grid's)."""
    return cascade.check_ladder(ladder or configs.visual(list(resolved.scope.grid)))


def load_ladder(store: Store, resolved: Resolved, ladder: list[str] | None = None) -> cascade.Ladder:
    """The focus model's responses on the policy ladder, on the scope's items (main runs only)."""
    s = resolved.scope
    return model_ladder(store, s.focus, policy_ladder(resolved, ladder), s.benchmark, s.item_filter)


def cascade_view(ladder: cascade.Ladder, resolved: Resolved, threshold: float | None = None, points: int = cascade.DEFAULT_POINTS,
                 bootstrap: int = 1000, seed: int = 0) -> CascadeThresholdReport | CascadeSweepReport:  # fmt: skip
    """``trajaudit cascade``: the frontier over thresholds (``threshold`` None) or one threshold."""
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise UserError(f"--threshold must be in [0, 1] (got {threshold:g})")
    out = (
        cascade.sweep(ladder, points, bootstrap, seed)
        if threshold is None
        else cascade.evaluate(ladder, threshold, bootstrap, seed)
    )
    return out | {"scope": resolved.header()}


def predictor_view(ladder: cascade.Ladder, resolved: Resolved, folds: int = 5, seed: int = 0) -> PredictorReport:
    """``trajaudit predictor``: the cross-validated budget predictor on the frontier with fixed budgets and the oracle."""
    from backend.analysis import predictor  # with the video index behind it: not paid by every other view

    return predictor.report(ladder, folds, seed) | {"scope": resolved.header()}


def explain_view(store: Store, resolved: Resolved, matrix: Matrix, model: str, target: explain.Target,
                 min_size: int = explain.MIN_SIZE, top: int | None = 25, exclude_unparsed: bool = False,
                 pairs: bool = True) -> ExplainReport:  # fmt: skip
    """The "Why these items?" panel (``trajaudit explain``): slices, answer behaviour, agreement across models."""
    from backend.scope.annotations import annotation_tags
    from backend.videos.catalog import probed

    tags = annotation_tags(store, matrix.items, resolved.scope.benchmark)
    attributes = explain.attribute_table(matrix.items, tags, probed(store, matrix.items))
    cells = load_answer_cells(store, matrix, model, resolved.scope.include_reruns, resolved.scope)
    out = explain.report(matrix, model, target, attributes, cells, min_size, top, exclude_unparsed, pairs)
    return out | {"scope": resolved.header(matrix)}


def selected_ids(store: Store, resolved: Resolved, matrix: Matrix, model: str, sel: Selection) -> list[str]:
    """The selection on a scope: a flow's items exactly as the Flows page lists them (within-noise flips too)."""
    if sel.kind != "flow":
        return selection.item_ids(matrix, model, sel)
    a, b, kind = sel.args
    listed = flows_view(store, resolved, matrix, model, (a, b), kind, limit=None)["items"]
    return selection.item_ids(matrix, model, sel, pd.DataFrame(listed, columns=["item_id"]))


def selection_comparison(store: Store, model: str, benchmark: str, ids: list[str], config: str, baseline: str,
                         seed: int | None = None, label: str = "the selected items") -> BatchComparison:  # fmt: skip
    """The selection's answers under ``config`` against ``baseline`` (``backend.analysis.selection.compare``),
    read from the store as far as the re-run has answered; a ``logged`` label is also checked against the
    logged answers whose frames it replayed."""
    base = selection_answers(store, model, benchmark, ids, baseline, None, reruns=False)
    new = selection_answers(store, model, benchmark, ids, config, seed, reruns=True)
    cfg = configs.parse(config)
    logged = None
    if configs.is_logged(cfg):
        logged_config = configs.base_label(cfg)
        logged = logged_config, selection_answers(store, model, benchmark, ids, logged_config, None, reruns=False)
    return selection.compare(base, new, ids, model=model, benchmark=benchmark, config=config, baseline=baseline,
                             label=label, logged=logged)  # fmt: skip


def batch_report(root: str, batch: RerunBatch, baseline: str, label: str) -> SelectionRerunReport:
    """The batch, its progress and its comparison so far: ``trajaudit rerun --flow ... --json`` and the re-run panel."""
    cmp = selection_comparison(
        Store(root), batch["model"], batch["benchmark"], batch["item_ids"], batch["config"], baseline, batch["seed"],
        label,
    )  # fmt: skip
    return {"batch": batch, "progress": batch_progress(root, batch), "comparison": cmp}


# -- loaders for the analyses that read more than the scope's matrix ---------------------------------------------
def noise_profile(store: Store, matrix: Matrix) -> noise.NoiseProfile:
    """Repeat counts of the matrix's cells (``backend.scope.repeats``) and their flip rates (``backend.analysis.noise``)."""
    return noise.noise_profile(matrix, load_repeats(store, matrix))


def model_ladder(store: Store, model: str, labels: list[str], benchmark: str | None = None,
                 item_filter: ItemFilter | None = None) -> cascade.Ladder:  # fmt: skip
    """``model``'s matched matrix over the ladder, as rungs (items lacking a rung are excluded, counted)."""
    labels = cascade.check_ladder(labels)
    matrix = load_matrix(store, [model], benchmark=benchmark, grid=labels, item_filter=item_filter)
    return cascade.ladder_from_matrix(matrix, model, labels, benchmark)


def audit_grid(store: Store, model: str, benchmark: str | None = None) -> list[str]:
    """The default grid of the protocol and noise audits: the model's main-run configs under the uniform protocol."""
    return interventions.base_grid(store_labels(store, model, benchmark, reruns=False), model, benchmark)


def protocol_recovery(store: Store, model: str, grid: list[str], policy_label: str, benchmark: str | None = None,
                      item_filter: ItemFilter | None = None, bootstrap: int = 1000, seed: int = 0) -> Recovery:  # fmt: skip
    """``interventions.recovery`` on the matched items of the grid plus ``policy_label`` (re-runs included)."""
    labels = interventions.recovery_grid(grid, policy_label)
    matrix = load_matrix(store, [model], benchmark, labels, item_filter, include_reruns=True)
    return interventions.recovery(matrix, grid, policy_label, bootstrap, seed)


def protocol_agreement(store: Store, model: str, grid: list[str], proto: str, pairs: dict[str, str],
                       benchmark: str | None = None, item_filter: ItemFilter | None = None) -> Agreement:  # fmt: skip
    """``interventions.agreement`` on the matched items of the grid and its counterparts ``pairs``."""
    union, _ = interventions.protocol_grids(grid, pairs)
    matrix = load_matrix(store, [model], benchmark, union, item_filter, include_reruns=True)
    return interventions.agreement(matrix, grid, proto, pairs)


def interventions_audit(store: Store, model: str, grid: list[str], benchmark: str | None = None,
                        protocols: list[str] | None = None, item_filter: ItemFilter | None = None,
                        bootstrap: int = 1000, seed: int = 0) -> InterventionsAudit:  # fmt: skip
    """``trajaudit audit interventions``: per protocol found in the store, agreement and recovery."""
    grid, top = interventions.grid_top(grid)
    found = interventions.audited_protocols(grid, store_labels(store, model, benchmark), model, protocols)
    rows: list[ProtocolAgreement] = []
    for proto, pairs in found.items():  # protocols, a handful
        row = protocol_agreement(store, model, grid, proto, pairs, benchmark, item_filter)
        recovered = (
            protocol_recovery(store, model, grid, pairs[top], benchmark, item_filter, bootstrap, seed)
            if top in pairs
            else None
        )
        rows.append({**row, "recovery": recovered})
    return interventions.audit(model, grid, rows)


def isocompute_audit(store: Store, model: str, benchmark: str | None = None,
                     tolerance: float = isocompute.DEFAULT_TOLERANCE, default_pixels: int | None = None,
                     labels: list[str] | None = None, item_filter: ItemFilter | None = None, bootstrap: int = 1000,
                     seed: int = 0) -> IsocomputeAudit:  # fmt: skip
    """``trajaudit audit isocompute``: every iso-compute group of ``model``'s configurations, each on its matched items."""
    labels = [configs.canonical(lab) for lab in labels] if labels else store_labels(store, model, benchmark)
    groups = []
    for group in isocompute.iso_groups(labels, tolerance, default_pixels):  # a handful of groups
        budgets = {g: isocompute.pixel_budget(g, default_pixels) for g in group}
        matrix = load_matrix(store, [model], benchmark, group, item_filter)
        groups.append(isocompute.compare_group(matrix, model, budgets, bootstrap, seed))
    return isocompute.isocompute(model, labels, tolerance, default_pixels, groups)


def crossmodel_audit(store: Store, model_a: str, model_b: str, config: str, config_b: str | None = None,
                     benchmark: str | None = None, item_filter: ItemFilter | None = None, limit: int = 50,
                     item_columns: tuple[str, ...] = ("benchmark", "item_id")) -> CrossmodelAudit:  # fmt: skip
    """``trajaudit audit crossmodel``: flows from (model_a, config) to (model_b, config_b) on their matched items."""
    grid = crossflows.pair_grid(model_a, model_b, config, config_b)
    matrix = load_matrix(store, [model_a, model_b], benchmark, grid, item_filter)
    return crossflows.cross_flows(matrix, model_a, model_b, grid, limit, item_columns)


def texts_view(detail: dict) -> ItemTexts | None:
    """The Inspector's texts panel (``trajaudit inspect --json``'s ``texts``) from ``item_detail``'s record:
    the reference and each configuration's answer with its word-level diff; None unless open-ended."""
    return item_texts(detail["item"], detail["responses"])
