"""One report per view: the dict a page draws is the dict its CLI twin prints with ``--json``.

Each function takes a resolved ``Scope`` and its matched matrix (pages cache the matrix; the CLI
loads it once) and returns plain data, with the scope itself under ``"scope"`` so a reader always
knows which grid, items and exclusions a number belongs to.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.analysis import cascade, compare, explain, flows, noise, selection
from backend.analysis.continuous import continuous_metrics
from backend.analysis.metrics import FLOW_KINDS, flow_items, mcqa_metrics, task_type_breakdown
from backend.contracts.explain import ExplainReport
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport, PredictorReport
from backend.contracts.runs import BatchComparison, RerunBatch, SelectionRerunReport
from backend.contracts.views import CompareReport, FlowsReport, ItemsPage, OverviewReport
from backend.runtime.selection import progress as batch_progress
from backend.scope.answer_cells import load_answer_cells
from backend.scope.items import item_page
from backend.scope.matrix import Matrix
from backend.scope.resolve import Resolved
from backend.scope.selection import Selection, selection_answers
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
        profile = noise.noise_profile(store, matrix)
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
    profile = noise.noise_profile(store, matrix) if resolved.scope.beyond_noise else None
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
    (as records, 56k items of a 10M store took 0.7 s to build and as long again to cache)."""
    items = flow_items(matrix, model, pair[0], pair[1], kind)
    if resolved.scope.beyond_noise:
        profile = profile if profile is not None else noise.noise_profile(store, matrix)
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
    return cascade.load_ladder(store, s.focus, policy_ladder(resolved, ladder), s.benchmark, s.item_filter)


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
    from backend.analysis import predictor  # with the video index behind it: not paid by every other view (40 ms)

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
