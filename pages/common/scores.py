"""The pages' score sections: open-ended (scored) items audited like multiple choice.

Wherever the scope has scored items, the Overview, Flows and Compare pages draw a section of their own
(mean score per configuration with intervals, best fixed, oracle mean and gap, regressions per
transition; improved/regressed/unchanged bands; oracle gaps side by side), beside the accuracy
sections and never averaged with them. Numbers are score points (the mean score x 100, as the CLI
prints them) and come from the dicts the CLI twins print (``metrics``, ``flows --scores``, ``compare``);
the tables are the report's own (``backend.report.tables``), so the page and the report read alike.
The sidebar's score cut-off (``cutoff_control``) says how scored items enter accuracy, and the scope
line says so (``pages.common.ui.scope_caption``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from backend.contracts.base import to_json, unset
from backend.contracts.common import Interval, Transition
from backend.contracts.views import CompareReport, ContinuousMetrics, McqaMetrics, ScoreFlows, ScoreTransition
from backend.present import charts, series
from backend.present.metrics import SCORE_METRICS
from backend.present.palette import CORRECT, NEUTRAL, WRONG
from backend.present.text import count
from backend.report import tables
from backend.scope.binary import NONE, STORED
from backend.scope.selection import Selection
from backend.scope.view import View
from pages.common import score_data, small_n, state, ui, walk

# The sidebar's choices: the stored verdict, left out, or a cut-off in steps of 0.05 (the CLI takes any T).
CUTOFFS = (STORED, NONE, *(f"{k / 20:g}" for k in range(21)))
SCORE_TERMS = {"title": "Scores of the open-ended items: mean score (95% CI) and the items whose score rose or fell",
               "value": "mean score (points)", "up": "improved", "down": "regressed", "p": "sign-test p",
               "net": "mean change (points)", "churn": "changed (% of items)"}  # fmt: skip
KIND_TEXT = {"improved": "improved (score rose)", "regressed": "regressed (score fell)", "unchanged": "unchanged"}
BAND_COLOURS = {"improved": CORRECT, "unchanged": NEUTRAL, "regressed": WRONG}


def cutoff_label(value: str) -> str:
    if value == STORED:
        return "stored verdict (correct)"
    if value == NONE:
        return "left out of accuracy"
    return f"correct when score ≥ {float(value):.2f}"


def cutoff_control(sidebar, shown: bool) -> str:
    """The sidebar's score cut-off (``--score-cutoff``), drawn when the store has scored responses."""
    if not shown:
        return STORED
    return state.bind(
        sidebar.selectbox,
        "cut",
        "Open-ended items in accuracy",
        options=list(CUTOFFS),
        default=STORED,
        format_func=cutoff_label,
        help="How scored (open-ended) responses enter accuracy, flows and tags: their stored verdict, "
        "a cut-off on the score, or not at all (their score sections stay). Same as --score-cutoff.",
    )


def points(x: float | None) -> str:
    return ui.DASH if x is None else f"{100 * x:.1f}"


def _points_card(label: str, value: float | None, ci: Sequence[float] | None, definition: str) -> ui.Card:
    """A score in points as a card, its 95% interval in points as the note."""
    return ui.Card(label, points(value), ui.ci_text(ci) or "", definition)


def curve_input(grid: list[str], models: Mapping[str, ContinuousMetrics]) -> series.Curve:
    """The score summaries as ``charts.curve_and_flows`` draws an Overview (value, its CI, up/down counts)."""
    out = {}
    for model, c in models.items():
        n = max(c.n_items, 1)
        steps = [
            Transition(
                from_=t.from_,
                to=t.to,
                rescued=t.improved,
                harmed=t.regressed,
                net=t.mean_delta,
                churn=(t.improved + t.regressed) / n,
                mcnemar_p=t.sign_p,
            )
            for t in c.transitions
        ]
        out[model] = series.CurveModel(c.mean_score, c.ci.mean_score or {}, steps)
    return series.Curve(grid, out)


def table_frame(table: tables.Table) -> pd.DataFrame:
    return pd.DataFrame(table.rows, columns=table.columns)


def show_by_model(table: tables.Table, name: str) -> None:
    """A per-model table (the report's) with one column per model, so a long grid fits the page; its download
    keeps the report's shape (one row per model)."""
    frame = table_frame(table)
    st.dataframe(
        frame.set_index("Model").T.rename_axis("Score points (95% CI)"),
        column_config={"_index": st.column_config.TextColumn(pinned=True)},
    )
    ui.downloads(frame, name)


def overview_section(v: View, metrics: McqaMetrics, colours: dict[str, str]) -> None:
    """The Overview's score section (``metrics --json``'s ``continuous`` per model)."""
    models = tables.scored_models(metrics.models)
    if not models:
        return
    st.subheader("Scores: open-ended items")
    n = max(c.n_items for c in models.values())
    st.caption(
        f"Score points (mean score × 100) over the {count(n, 'item')} scored at every configuration, with 95% paired-"
        "bootstrap intervals. Accuracy above and these scores are separate numbers, never averaged together."
    )
    focus = models.get(v.scope.focus)
    if focus is not None:
        with st.container(border=True):
            st.html(f"<b>{ui.swatch(colours[v.scope.focus], v.scope.focus)}</b>")
            worst = max(focus.transitions, key=lambda t: t.regression_rate, default=None)
            rates = unset(focus.ci.regression_rate)
            cis: list[Interval | None] = list(rates) if rates else [None] * len(focus.transitions)
            best = focus.best_fixed
            shown = [
                _points_card(
                    f"{SCORE_METRICS['best_fixed'].label} ({best.config})",
                    best.mean_score,
                    (focus.ci.mean_score or {}).get(best.config),
                    SCORE_METRICS["best_fixed"].definition,
                ),
                _points_card(
                    SCORE_METRICS["oracle_mean"].label, focus.oracle_mean, None, SCORE_METRICS["oracle_mean"].definition
                ),
                _points_card(
                    SCORE_METRICS["oracle_gap"].label,
                    focus.oracle_gap,
                    unset(focus.ci.oracle_gap),
                    SCORE_METRICS["oracle_gap"].definition,
                ),
            ]
            if worst is not None:
                k, rate = focus.transitions.index(worst), SCORE_METRICS["regression_rate"]
                shown.append(
                    ui.rate_card(
                        f"{rate.label} ({worst.from_} → {worst.to})",
                        worst.regression_rate,
                        cis[k],
                        f"{rate.definition} The step with the most regressions.",
                    )
                )
            ui.show_cards(shown)
    show_by_model(tables.score_table(metrics.grid, models), "scores")
    for k, spec in enumerate(charts.curve_and_flows(curve_input(metrics.grid, models), colours, terms=SCORE_TERMS)):
        ui.vega(spec, f"score-curve-{k}")
    box = st.expander(
        "Score transitions (improved, regressed, unchanged, regression rate, sign p)",
        key="score-transitions",
        on_change="rerun",
    )
    if box.open:
        trans = tables.score_transitions_table(models)
        box.caption(trans.caption)
        box.dataframe(table_frame(trans), hide_index=True)


def compare_section(report: CompareReport, colours: dict[str, str]) -> None:
    """Compare's score section: every scored model's oracle gap (and mean scores) side by side."""
    models = tables.scored_models(report.metrics)
    if not models:
        return
    st.subheader("Oracle gaps of the open-ended items")
    table = tables.score_table(report.grid, models)
    st.caption(table.caption)
    show_by_model(table, "compare-scores")
    rows = [
        {
            "model": m,
            "metric": "oracle gap",
            "value": charts.number(c.oracle_gap, 100),
            "lo": charts.number((unset(c.ci.oracle_gap) or (None, None))[0], 100),
            "hi": charts.number((unset(c.ci.oracle_gap) or (None, None))[1], 100),
        }
        for m, c in models.items()
    ]
    scored_n = sorted({c.n_items for c in models.values()})
    if small_n.too_few(scored_n[0], "scored item"):
        return
    spec = charts.headline_bars(rows, list(models), colours, "oracle gap: oracle mean minus best fixed mean score")
    on = f"on {count(scored_n[0], 'scored item')}" if len(scored_n) == 1 else "each model on its own scored items"
    spec["title"] = f"Oracle gaps side by side (score points, 95% CI), {on}"
    spec["layer"][0]["encoding"]["y"]["title"] = "score points"
    spec["encoding"]["tooltip"][2]["title"] = "score points"
    ui.vega(spec, "compare-scores")


def band_counts(t: ScoreTransition) -> dict[str, int]:
    """A transition's items per band."""
    return {"improved": t.improved, "regressed": t.regressed, "unchanged": t.unchanged}


def band_chart(view: ScoreFlows) -> dict:
    """One bar per transition split into its improved, unchanged and regressed items (share of scored items);
    a click on a band selects it (``flows_section`` opens its items)."""
    rows = [
        {
            "step": f"{t.from_} → {t.to}",
            "from": t.from_,
            "to": t.to,
            "kind": kind,
            "items": band_counts(t)[kind],
            "share": charts.number(band_counts(t)[kind] / max(view.n_items, 1), 100),
            "order": k,
        }
        for t in view.transitions
        for k, kind in enumerate(("improved", "unchanged", "regressed"))
    ]
    steps = [f"{t.from_} → {t.to}" for t in view.transitions]
    kinds = list(BAND_COLOURS)
    return {
        **charts.SCHEMA,
        "config": charts.CONFIG,
        "title": f"{view.model}: score changes per transition, {view.n_items:,} scored items (click a band for its items)",
        "height": max(60, 34 * len(steps)),
        "data": {"values": rows},
        "params": [{"name": "band", "select": {"type": "point", "fields": ["from", "to", "kind"]}}],
        "mark": {"type": "bar", "cursor": "pointer"},
        "encoding": {
            "y": {"field": "step", "type": "nominal", "sort": steps, "title": None, "axis": {"labelLimit": 240}},
            "x": {
                "field": "share",
                "type": "quantitative",
                "stack": "zero",
                "title": "share of scored items (%)",
                "scale": {"domain": [0, 100]},
            },
            "color": {
                "field": "kind",
                "type": "nominal",
                "title": None,
                "scale": {"domain": kinds, "range": [BAND_COLOURS[k] for k in kinds]},
            },
            "order": {"field": "order"},
            "opacity": {"condition": {"param": "band", "value": 1, "empty": True}, "value": 0.45},
            "tooltip": [
                {"field": "step", "title": "transition"},
                {"field": "kind", "title": "band"},
                {"field": "items", "title": "items"},
                {"field": "share", "title": "share (%)", "format": ".1f"},
            ],
        },
    }


def _band_from_chart(key: str) -> None:
    picked = (st.session_state.get(key) or {}).get("selection", {}).get("band") or []
    if picked:
        state.put("sband", [picked[0]["from"], picked[0]["to"], picked[0]["kind"]])


def _open_band(table: pd.DataFrame, row: int) -> None:
    band = table.iloc[row]
    state.put("sband", [band["from"], band["to"], band["band"]])


def opened_band(view: ScoreFlows) -> tuple[str, str, str] | None:
    """The band the URL opens (``sband``: from, to, kind), when this view has it."""
    band = state.get("sband")
    steps = {(t.from_, t.to) for t in view.transitions}
    if band and len(band) == 3 and (band[0], band[1]) in steps and band[2] in KIND_TEXT:
        return band[0], band[1], band[2]
    return None


def band_items(v: View, band: tuple[str, str, str], tolerance: float) -> None:
    """The opened band's items, largest change first: a row opens the Inspector, walking these items."""
    a, b, kind = band
    view = score_data.score_flows(v, v.scope.focus, (a, b), kind, tolerance)
    items = pd.DataFrame(to_json(view.items or []))
    st.markdown(f"**{ui.escape_md(f'{a} → {b}')}: {KIND_TEXT[kind]} · {count(unset(view.n_flow_items) or 0, 'item')}**")
    if items.empty:
        st.info("No scored item takes this band.")
        return
    sel = Selection("items", tuple(items["item_id"].astype(str)))
    page, shown = walk.page_of(items, f"sbp-{a}-{b}-{kind}")
    key = f"scoreitems-{a}-{b}-{kind}-{page}"
    walk.walk_bar(
        items,
        sel,
        "Largest change first. A row's Open button opens its item in the Inspector, which then walks these items.",
        key=f"walk-{key}",
    )
    cols = [c for c in ["item_id", "task_type", "question"] if c == "item_id" or shown[c].notna().any()]
    walk.item_table(
        shown[[*cols, "score_from", "score_to", "delta"]],
        key,
        {
            "question": st.column_config.TextColumn(width="large"),
            "score_from": st.column_config.NumberColumn(f"Score at {a}", format="%.3f"),
            "score_to": st.column_config.NumberColumn(f"Score at {b}", format="%.3f"),
            "delta": st.column_config.NumberColumn("Change", format="%+.3f"),
        },
        sel,
    )
    ui.downloads(items, f"score-flow-{v.scope.focus}-{a}-{b}-{kind}", key=key)


def flows_section(v: View, pair: tuple[str, str] | None) -> None:
    """The Flows page's score section (``flows --scores``): bands per transition, a click lists a band's items."""
    if not score_data.has_scores(v):
        return
    st.subheader("Scores: open-ended items")
    left, _ = st.columns([1, 3])
    tolerance = float(
        state.bind(
            left.number_input,
            "stol",
            "Unchanged within (score tolerance)",
            default=0.0,
            min_value=0.0,
            max_value=1.0,
            step=0.01,
            format="%.2f",
            help="A score change of at most this counts as unchanged (docs/metrics.md's tolerance e; "
            "same as --tolerance).",
        )
    )
    view = score_data.score_flows(v, v.scope.focus, pair, None, tolerance)
    if view.n_items == 0:
        st.info(f"{v.scope.focus} has no item scored at every configuration of the grid.")
        return
    st.caption(
        f"{count(view.n_items, 'item')} scored at every configuration ({view.n_unscored:,} others without a score "
        f"everywhere). Improved: the score rose by more than {tolerance:g}; regressed: it fell by more than "
        f"{tolerance:g}; unchanged: it moved by at most {tolerance:g}. Click a band, or pick a row below, to list "
        "its items."
    )
    key = f"score-bands-{v.scope.focus}"
    st.vega_lite_chart(
        band_chart(view),
        width="stretch",
        theme=None,
        key=key,
        on_select=lambda: _band_from_chart(key),
        selection_mode="band",
    )
    table = pd.DataFrame(
        [
            {
                "from": t.from_,
                "to": t.to,
                "band": kind,
                "items": band_counts(t)[kind],
                "share": band_counts(t)[kind] / view.n_items,
                "sign_p": t.sign_p,
            }
            for t in view.transitions
            for kind in KIND_TEXT
        ]
    )
    ui.row_table(
        table,
        "scorebands",
        lambda row: _open_band(table, row),
        {
            "share": st.column_config.NumberColumn("Share of scored items", format="percent"),
            "sign_p": st.column_config.NumberColumn(
                f"{SCORE_METRICS['sign_p'].label} (pair)", format="%.3g", help=SCORE_METRICS["sign_p"].definition
            ),
        },
    )
    ui.downloads(table, f"score-flows-{v.scope.focus}")
    band = opened_band(view)
    if band is not None:
        band_items(v, band, tolerance)
    flags = ["--scores", "--tolerance", f"{tolerance:g}"]
    flags += (
        ["--from", band[0], "--to", band[1], "--kind", band[2]]
        if band
        else ["--from", pair[0], "--to", pair[1]]
        if pair
        else []
    )
    box = st.expander("CLI twin of the score flows", key="cli-twin-scores", on_change="rerun")
    if box.open:
        line = v.twin(["flows", "--model", v.scope.focus], *flags, "--json")
        box.code(line, language="bash", wrap_lines=True)
