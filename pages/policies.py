"""Policies: adaptive budgets on the stored responses: the confidence cascade and the budget predictor on one frontier.

Nothing here runs a model: both policies are read off the focus model's responses on a ladder of
budgets (``backend.views.cascade_view``, ``backend.views.predictor_view``, on the focus model's one-model
scope ``backend.views.single_scope``), so every number is also printed by ``trajaudit cascade`` /
``trajaudit predictor`` with the command line shown under each section (generated from that scope).
"""

import pandas as pd
import streamlit as st

from backend import views
from backend.analysis.cascade import DEFAULT_THRESHOLD
from backend.contracts.base import to_json, unset
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport, PredictorReport
from backend.present import charts_audits
from backend.present.metrics import POLICY_METRICS, POLICY_QUANTITIES
from backend.present.palette import model_colours
from backend.present.text import count
from backend.scope.resolve import Resolved, command_line
from backend.scope.view import View
from pages.common import data, readable, small_n, state, ui
from pages.common.boot import ensure_entrypoint
from store import configs
from store.errors import UserError

DEFAULT_FOLDS = 5


def command(name: str, view: View, resolved: Resolved, ladder: list[str], *extra: str) -> str:
    """The CLI line that prints the numbers of a section (the one-model scope's flags, generated)."""
    return command_line(
        [name], resolved, view.root, "--ladder", ",".join(ladder), *extra, "--json", model_flag="--model"
    )


def pick_ladder(view: View, resolved: Resolved) -> list[str]:
    s = resolved.scope
    have = data.store_info(view.root, view.version).configs.get(s.focus, {}).get(s.benchmark or "", [])
    visual = configs.visual(configs.order(have))
    try:
        default = views.policy_ladder(resolved)  # as `trajaudit cascade` without --ladder
    except UserError:  # under two budgets in the default grid: the user picks
        default = []
    chosen = state.bind_many(
        st,
        "ladder",
        "Ladder (budgets, cheapest first)",
        visual,
        default or visual,
        help="The cascade answers at the first budget whose confidence reaches the threshold, else at the "
        "last; the predictor picks one budget per item from its question, options and metadata.",
    )
    return configs.order(chosen)


# The cascade's two frame costs, shared then unshared (backend.present.metrics).
FRAME_COSTS = tuple(POLICY_METRICS[k] for k in ("mean_frames_shared", "mean_frames_unshared"))


def frame_delta(cost: float | None, top: str) -> str:
    return ui.DASH if cost is None else f"{100 * cost:.1f}% of {top}"


def cascade_numbers(point: CascadeThresholdReport, top: str) -> None:
    """The cascade at the chosen threshold: accuracy (95% CI), mean frames with and without sharing, items."""
    accuracy = POLICY_METRICS["accuracy"]
    costs = (
        (point.mean_frames_shared, point.cost_vs_top_shared),
        (point.mean_frames_unshared, point.cost_vs_top_unshared),
    )
    missing = point.n_without_confidence
    items = POLICY_QUANTITIES["n_items"]
    ui.show_cards(
        [
            ui.rate_card(accuracy.label, point.accuracy, unset(point.accuracy_ci), accuracy.definition),
            *(
                ui.Card(metric.label, metric.format(mean), frame_delta(cost, top), metric.definition)
                for metric, (mean, cost) in zip(FRAME_COSTS, costs, strict=True)
            ),
            ui.Card(
                items.label,
                f"{point.n_items:,}",
                f"{missing:,} without confidences" if missing else "all with confidences",
                items.definition,
            ),
        ]
    )


def matching_numbers(sweep: CascadeSweepReport) -> None:
    top = sweep.ladder[-1]
    match = sweep.matching
    if match is None:
        st.info(
            f"No threshold reaches the accuracy of fixed {top} ({ui.pct(sweep.top_accuracy)}) on these items.",
            icon=":material/track_changes:",
        )
        return
    with st.container(border=True):
        st.markdown(f"**Cheapest threshold matching fixed {top}** ({ui.pct(sweep.top_accuracy)} on these items)")
        accuracy, saving, frames = (POLICY_METRICS[k] for k in ("accuracy", "saving", "mean_frames_shared"))
        threshold = POLICY_QUANTITIES["threshold"]
        ui.show_cards(
            [
                ui.Card(threshold.label, f"{match.threshold:.3f}", definition=threshold.definition),
                ui.rate_card(accuracy.label, match.accuracy, unset(match.accuracy_ci), accuracy.definition),
                ui.rate_card(
                    saving.label,
                    match.saving,
                    unset(match.saving_ci),
                    f"{saving.definition} Paired bootstrap interval.",
                ),
                ui.Card(
                    frames.label,
                    frames.format(match.mean_frames_shared),
                    f"vs {sweep.fixed[-1].frames} at {top}",
                    frames.definition,
                ),
            ]
        )


def predictor_controls() -> tuple[int, int]:
    c1, c2, _ = st.columns([1, 1, 4])
    folds = state.bind(
        c1.number_input, "folds", "Folds (grouped by video)", default=DEFAULT_FOLDS, min_value=2, max_value=20, step=1
    )
    seed = state.bind(c2.number_input, "pseed", "Seed", default=0, min_value=0, step=1)
    return int(folds), int(seed)


def predictor_numbers(report: PredictorReport) -> None:
    arg = next(r for r in report.frontier if r.label == "argmax")
    argmax, hit, never = (
        POLICY_METRICS[k] for k in ("frontier[argmax].accuracy", "target_hit_rate", "never_correct_share")
    )
    groups = POLICY_QUANTITIES["n_groups"]
    ui.show_cards(
        [
            ui.Card(
                argmax.label, argmax.format(arg.accuracy), f"{arg.mean_frames:.1f} frames per item", argmax.definition
            ),
            ui.Card(hit.label, hit.format(report.target_hit_rate), definition=hit.definition),
            ui.Card(never.label, never.format(report.never_correct_share), definition=never.definition),
            ui.Card(
                groups.label,
                f"{report.n_groups:,}",
                f"{count(report.n_items, 'item')}, {report.folds} folds",
                groups.definition,
            ),
        ]
    )


ensure_entrypoint()
view = st.session_state["view"]
st.title("Policies")
with ui.guard():
    scope = view.scope
    resolved = data.single(view)  # the focus model alone: the scope `trajaudit cascade` / `predictor` read
    st.caption(
        f"**{ui.escape_md(scope.benchmark)}** · model **{ui.escape_md(scope.focus)}** (the sidebar's focus model) · item filters apply; the "
        "trajectory tag does not. Policies are evaluated on the stored responses: no new inference."
    )
    ladder = pick_ladder(view, resolved)
    if len(ladder) < 2:
        st.info("Pick at least two budgets for the ladder.", icon=":material/touch_app:")
        st.stop()
    key = (view.root, view.version, resolved, tuple(ladder))
    loaded = data.ladder(*key)
    if len(loaded.items) == 0:
        st.warning(
            f"No item has a response of {ui.escape_md(scope.focus)} at every budget of {', '.join(ladder)} with these filters "
            f"({loaded.n_excluded:,} excluded). Widen the filters or drop a budget.",
            icon=":material/search:",
        )
        st.stop()
    refs = data.fixed_budgets(*key)
    top = ladder[-1]
    colour = model_colours(data.store_info(view.root, view.version).models)[scope.focus]

    st.subheader("Confidence cascade")
    threshold = state.bind(
        st.slider,
        "thr",
        "Threshold on the chosen option's probability",
        default=DEFAULT_THRESHOLD,
        min_value=0.0,
        max_value=1.0,
        step=0.01,
        format="%.2f",
    )
    sweep: CascadeSweepReport | None = None
    point: CascadeThresholdReport | None = None
    try:
        swept, at = data.cascade_view(*key, None), data.cascade_view(*key, float(threshold))
        sweep = swept if isinstance(swept, CascadeSweepReport) else None  # asked without a threshold: the sweep
        point = at if isinstance(at, CascadeThresholdReport) else None
    except UserError as exc:
        st.info(f"No cascade on this ladder: {ui.escape_md(exc)}.", icon=":material/stairs:")
    if point is not None and sweep is not None:  # both or neither: the sweep is asked first
        cascade_numbers(point, top)
        matching_numbers(sweep)
        st.caption(
            f"This threshold's numbers: {ui.code(command('cascade', view, resolved, ladder, '--threshold', f'{threshold:g}'))}; "
            f"the sweep behind the cheapest match: {ui.code(command('cascade', view, resolved, ladder, '--sweep'))}"
        )

    st.subheader("Budget predictor and the frontier")
    st.caption(
        "The predictor sees only the question, options and item metadata and picks the cheapest sufficient "
        "budget; trained and scored with cross-validation folds grouped by video (no video in two folds). "
        "Its levels q answer at the first budget whose cumulative predicted probability reaches q."
    )
    folds, seed = predictor_controls()
    report = None
    try:
        report = data.predictor_view(*key, folds, seed)
    except UserError as exc:
        st.warning(f"No budget predictor: {ui.escape_md(exc)}.", icon=":material/explore:")
    if report is not None:
        predictor_numbers(report)
    denominator = views.policy_denominator(loaded)
    if not small_n.too_few(refs[0].n_items):
        ui.vega(
            charts_audits.frontier(refs, sweep, point, report, colour, scope.focus, denominator),
            f"policies-frontier-{scope.focus}",
        )
    st.caption(
        f"Fixed budgets, oracle, cascade and predictor, every one {ui.escape_md(denominator)}. Hover a point for its threshold or level; the cascade's cost without frame sharing is in the frontier tables. "
        f"{ui.code(command('predictor', view, resolved, ladder, '--folds', str(folds), '--seed', str(seed)))}"
    )
    with st.expander("Frontier tables"):
        table = pd.DataFrame(to_json(report.frontier if report is not None else refs))
        readable.table(
            table,
            {
                "accuracy": st.column_config.NumberColumn(format="percent"),
                "cost_vs_top": st.column_config.NumberColumn(format="percent"),
                "mean_frames": st.column_config.NumberColumn(format="%.1f"),
            },
        )
        ui.downloads(table, f"policy-frontier-{scope.focus}")
        if sweep is not None:
            front = pd.DataFrame(to_json(sweep.frontier))
            readable.table(
                front,
                {
                    c: st.column_config.NumberColumn(format="percent")
                    for c in ("accuracy", "cost_vs_top_shared", "cost_vs_top_unshared")
                },
            )
            ui.downloads(front, f"cascade-frontier-{scope.focus}")
    if report is not None:
        shares = ", ".join(f"{b} {ui.pct(s)}" for b, s in report.target_share.items())
        st.caption(f"Cheapest sufficient budget per item (the predictor's target): {shares}.")
