"""One report per view: the object a page draws is the one its CLI twin prints with ``--json``.

Each function takes a ``backend.scope.view.View`` (store, resolved scope, matched matrix: the
pages cache it, the CLI opens it once from its flags, both with ``open_view``) and returns its report
(a ``backend.contracts`` object, validated once here), with the scope itself under ``"scope"`` so a reader always knows which grid, items and
exclusions a number belongs to. The one-model commands (policies, audits) read the focus model
alone: ``single_scope`` is the scope both the page and the CLI build for them.

The analyses that build frames (explain, compare, cross-model flows, a selection's answers, the item table and
its texts) are imported by the view that calls them: ``metrics``, computing its answer, imports none of them
and no pandas (issue 37: 0.3-0.6 s of a command that takes about as long as the SQL it replaces).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import numpy as np

from backend.analysis import cascade, flows, interventions, isocompute, noise, story
from backend.analysis.continuous import SCORE_KINDS, continuous_metrics, score_flow_items, score_flows
from backend.analysis.metrics import FLOW_KINDS, flow_items, mcqa_metrics, task_type_breakdown
from backend.analysis.target import Target
from backend.contracts.audits import (
    Agreement,
    CrossmodelAudit,
    InterventionsAudit,
    IsocomputeAudit,
    NoiseAudit,
    ProtocolAgreement,
    Recovery,
)
from backend.contracts.base import UNSET, asdict, from_rows, validated
from backend.contracts.explain import ExplainReport
from backend.contracts.inspector import ItemTexts
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport, PredictorReport, PredictorRow
from backend.contracts.runs import BatchComparison, RerunBatch, SelectionRerunReport
from backend.contracts.views import (
    BinaryView,
    CompareReport,
    ContinuousMetrics,
    FlowItem,
    FlowsReport,
    ItemSort,
    ItemsPage,
    ItemsPageRow,
    Overlap,
    OverviewReport,
    ScoreFlowItem,
    ScoreFlowsReport,
)
from backend.scope.binary import NONE, binary_view
from backend.scope.filters import ItemFilter
from backend.scope.labels import store_labels
from backend.scope.loader import load_matrix
from backend.scope.matrix import Matrix
from backend.scope.resolve import Resolved, Scope, command_line
from backend.scope.view import View
from store import configs, registry
from store.errors import UserError
from store.rerun_request import RerunRequest
from store.store import Store

if TYPE_CHECKING:  # the Inspector's loader (video probing) is imported where an item is opened
    import pandas as pd

    from backend.scope.inspector import ItemDetail
    from backend.scope.selection import Selection


def require_accuracy_items(resolved: Resolved, matrix: Matrix) -> None:
    """Under ``--score-cutoff none`` an open-ended-only scope has no item left for accuracy: say so (not "no
    matched item"), and where its numbers are."""
    if matrix.n_items == 0 and resolved.scope.score_cutoff == NONE:
        raise UserError(
            "no matched item is left for accuracy: --score-cutoff none leaves the scored (open-ended) items "
            "out; see their scores with `flows --scores`, or give a cut-off (--score-cutoff T)"
        )


def score_sections(
    scores: Matrix, cutoff: str, bootstrap: int, seed: int, tolerance: float = 0.0
) -> tuple[BinaryView, dict[str, ContinuousMetrics]] | None:
    """Where the scope has scored items: how they enter accuracy, and each scored model's score summaries
    (on ``scores``, the score matrix: every matched item, whatever the cut-off). None without scores."""
    if not scores.has_scores:
        return None
    per_model = {
        m: continuous_metrics(scores, m, bootstrap=bootstrap, seed=seed, tolerance=tolerance) for m in scores.models
    }
    return binary_view(scores, cutoff), {m: c for m, c in per_model.items() if c is not None}


def overview(
    view: View, bootstrap: int = 1000, seed: int = 0, pairs: list[tuple[str, str]] | None = None, tolerance: float = 0.0
) -> OverviewReport:
    """The Overview (``trajaudit metrics``): every MCQA metric with 95% intervals, per-task-type tables, and
    where the scope has scored items, the score section (``continuous`` per model, ``binary``).

    ``view.matrix`` is the scope's accuracy matrix, ``view.scores`` its score matrix (``Resolved.load_views``;
    the same matrix unless ``--score-cutoff none``). With ``beyond_noise`` each model's ``transitions`` count
    only flips beyond the item's repeat noise (the bars' view); the curve and the headline numbers always
    count every item.
    """
    store, resolved, matrix, scores = view.store, view.resolved, view.matrix, view.scores
    if bootstrap < 0:
        raise UserError("--bootstrap must be >= 0")
    require_accuracy_items(resolved, matrix)
    metrics = mcqa_metrics(matrix, bootstrap=bootstrap, seed=seed, pairs=pairs)
    sections = score_sections(scores, resolved.scope.score_cutoff, bootstrap, seed, tolerance)
    if sections is not None:
        for model, cont in sections[1].items():
            metrics.models[model].continuous = cont
    if resolved.scope.beyond_noise:
        profile = noise_profile(store, matrix)
        for model in matrix.models:
            metrics.models[model].transitions = noise.transitions_without_noise(matrix, profile, model)
    return validated(
        OverviewReport(
            **asdict(metrics),
            excluded_reasons=matrix.excluded_reasons,
            story=story.stories(metrics),  # from the transitions shown (beyond noise where asked)
            binary=UNSET if sections is None else sections[0],
            task_types={m: task_type_breakdown(matrix, m) for m in matrix.models},
            scope=resolved.header(matrix),
        )
    )


def flows_view(
    view: View, model: str, pair: tuple[str, str] | None = None, kind: str | None = None, limit: int | None = 100
) -> FlowsReport:
    """The Flows page (``trajaudit flows``): the Sankey's nodes and links, trajectory classes, a flow's items."""
    store, resolved, matrix = view.store, view.resolved, view.matrix
    if kind is not None and (kind not in FLOW_KINDS or pair is None):
        raise UserError(f"a flow's items need --from/--to and --kind in {', '.join(FLOW_KINDS)}")
    if limit is not None and limit < 0:
        raise UserError("--limit must be >= 0")
    require_accuracy_items(resolved, matrix)
    sankey = flows.sankey(matrix, model, None if pair is None else list(pair))
    profile = noise_profile(store, matrix) if resolved.scope.beyond_noise else None
    if profile is not None:
        sankey = noise.sankey_without_noise(sankey, matrix, profile)
    out = FlowsReport(
        **asdict(sankey),
        trajectory_classes=flows.class_counts(matrix, model),
        scope=resolved.header(matrix),
    )
    if kind is not None and pair is not None:
        items = flow_item_table(view, model, pair, kind, profile)
        out.n_flow_items = len(items)
        out.items = from_rows((items if limit is None else items.head(limit)).to_dict("records"), FlowItem)
    return validated(out)


def flow_item_table(
    view: View, model: str, pair: tuple[str, str], kind: str, profile: noise.NoiseProfile | None = None
) -> pd.DataFrame:
    """Every item of one flow (``flows_view``'s ``items``, as a table): the Flows page lists them a page at a time
    (as records, a large flow was slow to build and as slow again to cache)."""
    store, resolved, matrix = view.store, view.resolved, view.matrix
    items = flow_items(matrix, model, pair[0], pair[1], kind)
    if resolved.scope.beyond_noise:
        profile = profile if profile is not None else noise_profile(store, matrix)
        items = noise.drop_within_noise(items, matrix, profile, model, pair[0], pair[1])
    return items


def score_flows_view(
    view: View,
    model: str,
    pair: tuple[str, str] | None = None,
    kind: str | None = None,
    tolerance: float = 0.0,
    limit: int | None = 100,
) -> ScoreFlowsReport:
    """The Flows page's score section (``trajaudit flows --scores``): per transition, items improved, regressed
    and unchanged (within ``tolerance``); with ``kind``, that flow's items, largest change first."""
    resolved, scores = view.resolved, view.scores
    if kind is not None and (kind not in SCORE_KINDS or pair is None):
        raise UserError(f"a score flow's items need --from/--to and --kind in {', '.join(SCORE_KINDS)}")
    if limit is not None and limit < 0:
        raise UserError("--limit must be >= 0")
    out = ScoreFlowsReport(
        **asdict(score_flows(scores, model, pair, tolerance)),
        binary=binary_view(scores, resolved.scope.score_cutoff),
        scope=resolved.header(scores),
    )
    if kind is not None and pair is not None:
        items = score_flow_items(scores, model, pair[0], pair[1], kind, tolerance)
        out.n_flow_items = len(items)
        out.items = from_rows((items if limit is None else items.head(limit)).to_dict("records"), ScoreFlowItem)
    return validated(out)


def items_page(
    view: View,
    model: str,
    sort: str = "item",
    descending: bool = False,
    page: int = 1,
    page_size: int = 50,
    order: np.ndarray | None = None,
) -> ItemsPage:
    """The Items page (``trajaudit items --page``): one sorted page, with every sort key per row; ``order``: the
    sort's ``backend.scope.items.item_order``, where the caller keeps it (the pages: one per sort, not per page)."""
    from backend.scope.items import item_page

    resolved, matrix = view.resolved, view.matrix
    rows, n_pages = item_page(matrix, model, sort, descending, page, page_size, order)
    return validated(
        ItemsPage(
            model=model,
            sort=cast(ItemSort, sort),  # item_page raised UserError for any sort but these
            descending=descending,
            page=min(max(1, int(page)), n_pages),
            page_size=page_size,
            n_pages=n_pages,
            rows=from_rows(rows.to_pylist(), ItemsPageRow),
            scope=resolved.header(matrix),
        )
    )


def heatmap(view: View, model: str, max_rows: int) -> flows.Heatmap:
    """The Items page's trajectory heatmap: items grouped by their right/wrong pattern over the grid (its
    class counts are ``flows_view``'s ``trajectory_classes``)."""
    return flows.heatmap(view.matrix, model, max_rows=max_rows)


def compare_view(view: View, top: int | None = 50, bootstrap: int = 1000, seed: int = 0) -> CompareReport:
    """The Compare page (``trajaudit compare``): headline metrics side by side (score summaries, oracle gaps
    among them, where the scope has scored items), confused-item overlap, disagreement."""
    from backend.analysis import compare

    resolved, matrix, scores = view.resolved, view.matrix, view.scores
    if (top is not None and top < 0) or bootstrap < 0:
        raise UserError("--top and --bootstrap must be >= 0")
    require_accuracy_items(resolved, matrix)
    metrics = mcqa_metrics(matrix, bootstrap=bootstrap, seed=seed)
    sections = score_sections(scores, resolved.scope.score_cutoff, bootstrap, seed)
    out = CompareReport(
        grid=metrics.grid,
        n_items=metrics.n_items,
        n_excluded=metrics.n_excluded,
        metrics=metrics.models,
        scope=resolved.header(matrix),
    )
    if sections is not None:
        out.binary = sections[0]
        for model, cont in sections[1].items():
            metrics.models[model].continuous = cont
    if len(matrix.models) > 1:
        ov = compare.confusion_overlap(matrix)
        out.overlap = Overlap(**asdict(ov), shared_share=compare.shared_share(ov))
        out.disagreement = compare.disagreement(matrix, top=top or None).to_pylist()
    return validated(out)


Ladder = cascade.Ladder  # what the policy views take: the pages name it here, not in the analysis


def policy_ladder(resolved: Resolved, ladder: list[str] | None = None) -> list[str]:
    """The budgets the Policies page and ``cascade``/``predictor`` use: the given ones, else the
    visual configurations of the scope's grid (so a default view's ladder is the default grid's)."""
    return cascade.check_ladder(ladder or configs.visual(list(resolved.scope.grid)))


def load_ladder(store: Store, resolved: Resolved, ladder: list[str] | None = None) -> cascade.Ladder:
    """The focus model's responses on the policy ladder, on the scope's items (main runs only)."""
    s = resolved.scope
    return model_ladder(store, s.focus, policy_ladder(resolved, ladder), s.benchmark, s.item_filter)


def cascade_view(
    ladder: cascade.Ladder,
    resolved: Resolved,
    threshold: float | None = None,
    points: int = cascade.DEFAULT_POINTS,
    bootstrap: int = 1000,
    seed: int = 0,
) -> CascadeThresholdReport | CascadeSweepReport:
    """``trajaudit cascade``: the frontier over thresholds (``threshold`` None) or one threshold."""
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise UserError(f"--threshold must be in [0, 1] (got {threshold:g})")
    if threshold is None:
        return validated(
            CascadeSweepReport(**asdict(cascade.sweep(ladder, points, bootstrap, seed)), scope=resolved.header())
        )
    point = cascade.evaluate(ladder, threshold, bootstrap, seed)
    return validated(CascadeThresholdReport(**asdict(point), scope=resolved.header()))


def predictor_view(
    ladder: cascade.Ladder,
    resolved: Resolved,
    folds: int = 5,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> PredictorReport:
    """``trajaudit predictor``: the cross-validated budget predictor on the frontier with fixed budgets and the oracle
    (``progress(done, folds)`` after each fold)."""
    from backend.analysis import predictor  # with the video index behind it: not paid by every other view

    report = predictor.report(ladder, folds, seed, progress)
    return validated(PredictorReport(**asdict(report), scope=resolved.header()))


def explain_view(
    view: View,
    model: str,
    target: Target,
    min_size: int | None = None,
    top: int | None = 25,
    exclude_unparsed: bool = False,
    pairs: bool = True,
) -> ExplainReport:
    """The "Why these items?" panel (``trajaudit explain``): slices, answer behaviour, agreement across models
    (``min_size``: the smallest slice, ``explain.MIN_SIZE`` when None)."""
    from backend.analysis import explain
    from backend.scope.annotations import annotation_tags
    from backend.scope.answer_cells import load_answer_cells
    from backend.videos.catalog import probed

    store, resolved, matrix = view.store, view.resolved, view.matrix
    min_size = explain.MIN_SIZE if min_size is None else min_size
    tags = annotation_tags(store, matrix.items, resolved.scope.benchmark)
    attributes = explain.attribute_table(matrix.items, tags, probed(store, matrix.items))
    cells = load_answer_cells(store, matrix, model, resolved.scope.include_reruns, resolved.scope)
    out = explain.report(matrix, model, target, attributes, cells, min_size, top, exclude_unparsed, pairs)
    return validated(ExplainReport(**asdict(out), scope=resolved.header(matrix)))


def selected_ids(view: View, model: str, sel: Selection) -> list[str]:
    """The selection on a view: a flow's items exactly as the Flows page lists them (within-noise flips too)."""
    import pandas as pd

    from backend.analysis import selection

    if sel.kind != "flow":
        return selection.item_ids(view.matrix, model, sel)
    a, b, kind = sel.args
    listed = flows_view(view, model, (a, b), kind, limit=None).items or []
    return selection.item_ids(view.matrix, model, sel, pd.DataFrame([i.item_id for i in listed], columns=["item_id"]))


def selection_comparison(
    store: Store,
    model: str,
    benchmark: str,
    ids: list[str],
    config: str,
    baseline: str,
    seed: int | None = None,
    label: str = "the selected items",
) -> BatchComparison:
    """The selection's answers under ``config`` against ``baseline`` (``backend.analysis.selection.compare``),
    read from the store as far as the re-run has answered; a ``logged`` label is also checked against the
    logged answers whose frames it replayed."""
    from backend.analysis import selection
    from backend.scope.selection import selection_answers

    base = selection_answers(store, model, benchmark, ids, baseline, None, reruns=False)
    new = selection_answers(store, model, benchmark, ids, config, seed, reruns=True)
    cfg = configs.parse(config)
    logged = None
    if configs.is_logged(cfg):
        logged_config = configs.base_label(cfg)
        logged = logged_config, selection_answers(store, model, benchmark, ids, logged_config, None, reruns=False)
    return selection.compare(
        base, new, ids, model=model, benchmark=benchmark, config=config, baseline=baseline, label=label, logged=logged
    )


def batch_report(root: str, batch: RerunBatch, baseline: str, label: str) -> SelectionRerunReport:
    """The batch, its progress and its comparison so far: ``trajaudit rerun --flow ... --json`` and the re-run panel."""
    from backend.runtime.selection import progress as batch_progress  # the job queue and video decoding: re-runs only

    store = Store(root)
    cmp = selection_comparison(
        store, batch.model, batch.benchmark, batch.item_ids, batch.config, baseline, batch.seed, label
    )
    return validated(SelectionRerunReport(batch=batch, progress=batch_progress(root, batch), comparison=cmp))


# -- loaders for the analyses that read more than the scope's matrix ---------------------------------------------
def noise_profile(store: Store, matrix: Matrix) -> noise.NoiseProfile:
    """Repeat counts of the matrix's cells (``backend.scope.repeats``) and their flip rates (``backend.analysis.noise``)."""
    from backend.scope.repeats import load_repeats

    return noise.noise_profile(matrix, load_repeats(store, matrix))


def model_ladder(
    store: Store, model: str, labels: list[str], benchmark: str | None = None, item_filter: ItemFilter | None = None
) -> cascade.Ladder:
    """``model``'s matched matrix over the ladder, as rungs (items lacking a rung are excluded, counted)."""
    labels = cascade.check_ladder(labels)
    matrix = load_matrix(store, [model], benchmark=benchmark, grid=labels, item_filter=item_filter)
    return cascade.ladder_from_matrix(matrix, model, labels, benchmark)


def audit_grid(store: Store, model: str, benchmark: str | None = None) -> list[str]:
    """The default grid of the protocol and noise audits: the model's main-run configs under the uniform protocol."""
    return interventions.base_grid(store_labels(store, model, benchmark, reruns=False), model, benchmark)


def protocol_recovery(
    store: Store,
    model: str,
    grid: list[str],
    policy_label: str,
    benchmark: str | None = None,
    item_filter: ItemFilter | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> Recovery:
    """``interventions.recovery`` on the matched items of the grid plus ``policy_label`` (re-runs included)."""
    labels = interventions.recovery_grid(grid, policy_label)
    matrix = load_matrix(store, [model], benchmark, labels, item_filter, include_reruns=True)
    return interventions.recovery(matrix, grid, policy_label, bootstrap, seed)


def protocol_agreement(
    store: Store,
    model: str,
    grid: list[str],
    proto: str,
    pairs: dict[str, str],
    benchmark: str | None = None,
    item_filter: ItemFilter | None = None,
) -> Agreement:
    """``interventions.agreement`` on the matched items of the grid and its counterparts ``pairs``."""
    union, _ = interventions.protocol_grids(grid, pairs)
    matrix = load_matrix(store, [model], benchmark, union, item_filter, include_reruns=True)
    return interventions.agreement(matrix, grid, proto, pairs)


def texts_view(detail: ItemDetail) -> ItemTexts | None:
    """The Inspector's texts panel (``trajaudit inspect --json``'s ``texts``) from ``item_detail``'s record:
    the reference and each configuration's answer with its word-level diff; None unless open-ended."""
    from backend.scope.texts import item_texts

    return item_texts(detail.item, detail.responses)


def single_scope(scope: Scope, grid: tuple[str, ...] = ()) -> Scope:
    """The scope of the one-model commands (``cascade``, ``predictor``, ``audit``): the focus model alone,
    on the same benchmark and item filters (``grid`` given, else its default grid); the trajectory tag,
    the noise toggle and re-runs do not apply there. The Policies and Audits pages build it from the
    sidebar's scope, so their scope header and CLI twin are those of the command."""
    return Scope(benchmark=scope.benchmark, models=(scope.focus,), grid=grid, item_filter=scope.item_filter)


def fixed_budgets(ladder: cascade.Ladder) -> list[PredictorRow]:
    """Fixed budgets and the oracle on the ladder (the first rows of ``predictor_view``'s frontier): the
    Policies page draws them when the predictor cannot be fitted."""
    from backend.analysis import predictor

    return predictor.reference_rows(ladder)


def policy_denominator(ladder: cascade.Ladder) -> str:
    """The items every policy on ``ladder`` is compared on, in words (``cascade --json`` and ``predictor --json``'s
    ``denominator``): the Policies page states it on its frontier even when neither report could be made."""
    return cascade.denominator(ladder)


# The Audits page's choices of protocol and budget: label logic the page and ``audit interventions`` share.
grid_up_to, intervention_labels, protocol_tops = (
    interventions.grid_up_to,
    interventions.intervention_labels,
    interventions.protocol_tops,
)
DEFAULT_TOLERANCE = isocompute.DEFAULT_TOLERANCE


def protocol_labels(store: Store, resolved: Resolved) -> list[str]:
    """Every configuration the focus model has on the scope's benchmark (re-runs included: re-running
    under another policy is how an intervention is measured)."""
    return store_labels(store, resolved.scope.focus, resolved.scope.benchmark)


def interventions_view(
    store: Store, resolved: Resolved, protocols: list[str] | None = None, bootstrap: int = 1000, seed: int = 0
) -> InterventionsAudit:
    """``trajaudit audit interventions``: the focus model's other sampling protocols at the budgets of the
    scope's grid (kappa, tag changes, recovery of the terminal regressions at its top)."""
    s, model = resolved.scope, resolved.scope.focus
    grid, top = interventions.grid_top(list(s.grid))
    found = interventions.audited_protocols(grid, store_labels(store, model, s.benchmark), model, protocols)
    rows: list[ProtocolAgreement] = []
    for proto, pairs in found.items():  # protocols, a handful
        row = protocol_agreement(store, model, grid, proto, pairs, s.benchmark, s.item_filter)
        recovered = (
            protocol_recovery(store, model, grid, pairs[top], s.benchmark, s.item_filter, bootstrap, seed)
            if top in pairs
            else None
        )
        rows.append(ProtocolAgreement(**asdict(row), recovery=recovered))
    return validated(interventions.audit(model, grid, rows))


def registered_pixels(store: Store, resolved: Resolved) -> int | None:
    """The focus model's default pixels per frame from the registry (None: not registered or not stated)."""
    return registry.default_pixels(store.root, resolved.scope.focus)


def isocompute_view(
    store: Store,
    resolved: Resolved,
    tolerance: float = isocompute.DEFAULT_TOLERANCE,
    default_pixels: int | None = None,
    labels: list[str] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> IsocomputeAudit:
    """``trajaudit audit isocompute``: the focus model's allocations of (nearly) equal pixel budget."""
    s, model = resolved.scope, resolved.scope.focus
    labels = [configs.canonical(lab) for lab in labels] if labels else store_labels(store, model, s.benchmark)
    groups = []
    for group in isocompute.iso_groups(labels, tolerance, default_pixels):  # a handful of groups
        # every member has a budget: iso_groups keeps only those
        budgets = {g: b for g in group if (b := isocompute.pixel_budget(g, default_pixels)) is not None}
        matrix = load_matrix(store, [model], s.benchmark, group, s.item_filter)
        groups.append(isocompute.compare_group(matrix, model, budgets, bootstrap, seed))
    return validated(isocompute.isocompute(model, labels, tolerance, default_pixels, groups))


def crossmodel_view(
    store: Store,
    resolved: Resolved,
    models: tuple[str, str],
    config: str,
    config_b: str | None = None,
    limit: int = 50,
    item_columns: tuple[str, ...] = ("benchmark", "item_id"),
) -> CrossmodelAudit:
    """``trajaudit audit crossmodel``: flows from ``models[0]`` at ``config`` to ``models[1]`` at ``config_b``
    (one model twice compares two of its configurations) on the items both answered, on the scope's
    benchmark and item filters."""
    from backend.analysis import crossflows

    s, (model_a, model_b) = resolved.scope, models
    grid = crossflows.pair_grid(model_a, model_b, config, config_b)
    matrix = load_matrix(store, [model_a, model_b], s.benchmark, grid, s.item_filter)
    return validated(crossflows.cross_flows(matrix, model_a, model_b, grid, limit, item_columns))


def intervention_requests(view: View, label: str) -> list[RerunRequest]:
    """``audit interventions --enqueue LABEL``'s requests: re-run the focus model's terminal regressions of
    the view's grid at ``label`` (the Audits page's "Run the intervention" submits the same)."""
    return interventions.intervention_requests(view.matrix, view.scope.focus, label)


def noise_audit(view: View) -> NoiseAudit:
    """``trajaudit audit noise``: the focus model's repeat noise and its flips within and beyond it."""
    model = view.scope.focus
    if view.matrix.n_items == 0:
        raise UserError(f"no item of {model!r} has a response at every config of {','.join(view.matrix.grid)}")
    return validated(noise.summary(view.matrix, noise_profile(view.store, view.matrix), model))


def noise_items(view: View) -> pd.DataFrame:
    """The items of ``noise_audit`` that have repeats, noisiest first (the Audits page's table)."""
    return noise.item_noise(view.matrix, noise_profile(view.store, view.matrix), view.scope.focus, measured_only=True)


def inspect_twin(view: View, item_id: str) -> str:
    """The Inspector's CLI twin: ``trajaudit inspect`` takes the store, the benchmark and the item (every
    model's responses, as the page shows them), none of the view's grid or filters."""
    bare = Resolved(Scope(view.scope.benchmark, view.scope.models), "default")
    return command_line(["inspect"], bare, view.root, "--item", item_id, "--json", model_flag=None)


def jobs_twin(root: str, limit: int) -> str:
    """The Workers page's CLI twin: the queue has no scope, only the store and how many recent jobs
    (the page draws ``backend.runtime.client.queue_overview``, which ``trajaudit jobs --json`` prints)."""
    return shlex.join(["trajaudit", "jobs", "--store", root, "--limit", str(limit), "--json"])
