"""Audits: is a flip the budget's doing? Sampling interventions, iso-compute allocations, repeat noise, cross-model flows.

Each tab draws one ``trajaudit audit ...`` command's JSON (``backend.analysis.interventions``,
``backend.analysis.isocompute``, ``backend.analysis.noise``, ``backend.analysis.crossflows``) for the sidebar's focus model,
benchmark and item filters; the command line that prints the same numbers is under each tab.
Only the open tab is computed.
"""

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from backend import views
from backend.contracts.audits import InterventionsAudit, Recovery
from backend.contracts.base import to_json
from backend.present import charts_audits, tables
from backend.present.metrics import AUDIT_METRICS, AUDIT_QUANTITIES, METRICS
from backend.present.palette import model_colours
from backend.present.text import count, interval_ends
from backend.runtime import client
from backend.scope.resolve import Resolved, command_line
from backend.scope.view import View
from pages.common import data, readable, small_n, state, ui, walk
from pages.common.boot import ensure_entrypoint
from pages.common.data import CROSS_ITEM_COLUMNS, CROSS_LIMIT, protocol_labels
from pages.common.data import crossmodel_audit as cross
from pages.common.data import intervention_requests as requests
from pages.common.data import interventions_audit as audit
from pages.common.data import isocompute_audit as iso
from store import configs
from store.errors import UserError

TABS = {
    "intervention": "Sampling intervention",
    "isocompute": "Iso-compute",
    "noise": "Noise",
    "crossmodel": "Cross-model flows",
}


def command(view: View, name: str, resolved: Resolved, *extra: str, model_flag: str | None = "--model") -> str:
    """The CLI line printing a tab's numbers: generated from the tab's scope (the focus model alone,
    ``backend.views.single_scope``, or the two compared models), with the sidebar's item filters."""
    return ui.code(command_line(["audit", name], resolved, view.root, *extra, "--json", model_flag=model_flag))


# --- sampling intervention -------------------------------------------------------------------------


def agreement_tables(out: InterventionsAudit) -> None:
    kappas = pd.DataFrame([{"protocol": row.protocol, **to_json(c)} for row in out.protocols for c in row.per_config])
    st.markdown(
        "**Agreement** (Cohen's kappa on correctness, base protocol vs the other; pooled over the replaced configurations)"
    )
    kappa = AUDIT_METRICS["kappa_pooled"]
    ui.show_cards(
        ui.Card(
            f"{kappa.label} · {row.protocol}",
            kappa.format(row.kappa_pooled),
            count(row.n_items, "item"),
            kappa.definition,
        )
        for row in out.protocols
    )
    readable.table(
        kappas,
        {
            "kappa": st.column_config.NumberColumn(format="%.3f"),
            "agreement": st.column_config.NumberColumn(format="percent"),
            "rescued": st.column_config.NumberColumn("Right only under the protocol"),
            "harmed": st.column_config.NumberColumn("Right only under the base"),
        },
    )
    ui.downloads(kappas, "protocol-kappa")
    tags = pd.DataFrame(
        [
            {
                "protocol": row.protocol,
                "tag": tag,
                "on the base": c.base,
                "under the protocol": c.protocol,
                "both": c.both,
                "gained": c.gained,
                "lost": c.lost,
            }
            for row in out.protocols
            for tag, c in row.tag_changes.items()
        ]
    )
    st.markdown(
        f"**Which trajectory tags change** (items per tag on the {out.base_protocol} grid vs the protocol's grid)"
    )
    readable.table(tags)
    ui.downloads(tags, "protocol-tag-changes")


def intervention_runner(
    view: View, resolved: Resolved, top: str, available: list[str], recovered: list[Recovery]
) -> None:
    scope = view.scope
    st.markdown(
        "**Run the intervention**: re-run this view's terminal regressions at the top budget under another policy"
    )
    label = state.bind(
        st.selectbox,
        "apolicy",
        "Re-run at",
        options=views.intervention_labels(top, available),
        help="Policies already stored at this budget come first; their answers are reused, not recomputed.",
    )
    if label is None:
        st.caption(f"No other sampling policy applies to {top}.")
        return
    reqs = requests(data.view(view.root, view.version, resolved), label)
    answered = next((r.n_terminal for r in recovered if r.policy == label), None)
    missing = scope.focus not in client.registered(view.root)
    why = (
        f"{scope.focus} is not a registered model, so nothing can re-run it (register it with trajaudit models add)"
        if missing
        else "this view has no terminal regression at the top budget"
        if not reqs
        else None
    )
    reused = (
        "none of them has an answer there yet"
        if answered is None
        else f"{answered:,} of them already have an answer there (the table's {tables.header('n_terminal')}) and "
        "are reused"
    )
    st.caption(
        f"{len(reqs):,} terminal regressions at {top} on this grid to re-run at {label}; {reused}."
        + (f" **Disabled:** {ui.escape_md(why)}." if why else "")
    )
    if st.button(
        f"Run the intervention: {len(reqs):,} terminal regressions at {label}",
        type="primary",
        disabled=why is not None,
        icon=":material/play_arrow:",
        help=why,
    ):
        try:
            done = client.submit_many(view.root, reqs)
        except UserError as exc:
            st.error(str(exc), icon=":material/warning:")
            return
        st.success(
            f"Queued {done.queued:,} re-runs; {done.from_store:,} were answered from the store; "
            f"{len(done.errors):,} refused."
        )
        if done.errors:
            errors = pd.DataFrame(to_json(done.errors))
            st.dataframe(errors, hide_index=True, column_config=ui.plain_headers(errors.columns, {}))
        try:
            st.page_link(
                "pages/workers.py",
                label="Follow the jobs on the Workers page",
                icon=":material/memory:",
                query_params=state.params(),
            )
        except StreamlitAPIException:  # the page run on its own (no navigation registered)
            st.caption("Follow the jobs with `trajaudit jobs`.")
    st.caption(f"Same as {command(view, 'interventions', resolved, '--enqueue', label)}")


def intervention_tab(view: View) -> None:
    scope = view.scope
    available = protocol_labels(view.root, view.version, data.single(view))
    visual = configs.visual(list(scope.grid))
    tops = views.protocol_tops(list(scope.grid), available)
    top = state.bind_one(
        st,
        "atop",
        "Top budget of the audit",
        visual,
        (tops or visual)[-1],
        help="The audit's grid is the sidebar's grid up to this budget; terminal regressions are read at it. "
        "The default is the costliest budget that another protocol also ran.",
    )
    grid = views.grid_up_to(list(scope.grid), top)
    if len(grid) < 2:
        st.info(
            f"No configuration of the grid is cheaper than {top}: pick a higher top budget.",
            icon=":material/touch_app:",
        )
        return
    resolved = data.single(view, tuple(grid))
    out = audit(view.root, view.version, resolved)
    st.caption(
        f"**{ui.escape_md(scope.focus)}** on {' → '.join(out.grid)} (base protocol *{out.base_protocol}*). "
        f"{command(view, 'interventions', resolved)}"
    )
    if not out.protocols:
        st.info(
            f"The store holds no other sampling policy or pipeline at the budgets of {', '.join(grid)}.",
            icon=":material/repeat:",
        )
    rows = [row.recovery for row in out.protocols if row.recovery is not None]
    if rows:
        charted = [r for r in rows if r.n_terminal >= small_n.minimum()]
        if charted:
            ui.vega(charts_audits.recovery(charted, out.top), f"recovery-{scope.focus}")
        else:
            small_n.too_few(max(r.n_terminal for r in rows), "terminal regression")  # the rates' denominator
        if charted and len(charted) < len(rows):
            left = ", ".join(f"{r.protocol} ({r.n_terminal:,})" for r in rows if r not in charted)
            st.caption(f"Not drawn, too few terminal regressions for a chart: {ui.escape_md(left)}.")
        table = pd.DataFrame(to_json(rows)).drop(columns=["recovery_ci", "recovery_wilson"])
        # the rate's interval beside it, under a short header: the table fits the page's width (no clipped header)
        table.insert(
            table.columns.get_loc("recovery_rate") + 1,
            "recovery_wilson",
            [interval_ends(r.recovery_wilson) for r in rows],
        )
        readable.table(
            table,
            {
                "n_terminal": st.column_config.NumberColumn(
                    help="terminal regressions that have this protocol's answer at the top budget"
                ),
                "recovery_rate": st.column_config.NumberColumn(format="percent"),
                "recovery_wilson": st.column_config.TextColumn(
                    "95% CI", help="Wilson 95% interval of the recovery rate, in %"
                ),
                "harm_rate": st.column_config.NumberColumn(format="percent"),
                "kappa_top": st.column_config.NumberColumn(format="%.3f"),
            },
        )
        ui.downloads(table, f"recovery-{scope.focus}")
        st.caption(
            "Each protocol is read on its own items (the Items column): those with its answer at the top budget as well "
            "as the whole base grid; Terminal regressions counts those among them (the run below covers every one of "
            "the grid)."
        )
    elif out.protocols:
        st.info(
            f"No other protocol ran the top budget {out.top}: the recovery rate needs one (pick another top budget).",
            icon=":material/repeat:",
        )
    if out.protocols:
        agreement_tables(out)
    intervention_runner(view, resolved, out.top, available, rows)


# --- iso-compute -----------------------------------------------------------------------------------


def isocompute_tab(view: View, colour: str) -> None:
    scope = view.scope
    c1, c2 = st.columns(2)
    tolerance = state.bind(
        c1.slider,
        "tol",
        "Budget tolerance",
        default=views.DEFAULT_TOLERANCE,
        min_value=0.0,
        max_value=0.5,
        step=0.01,
        format="%.2f",
        help="Configurations within (1 + tolerance) times the cheapest budget of a group count as equal compute.",
    )
    resolved = data.single(view)
    registered = views.registered_pixels(view.store, resolved)
    pixels = state.bind(
        c2.number_input,
        "pix",
        "Pixels per frame of labels without @",
        default=registered or 0,
        min_value=0,
        step=1000,
        help="The model's default resolution, which the responses do not record (0 = unknown: "
        "those labels are left out). Defaults to default_pixels in the model registry.",
    )
    out = iso(view.root, view.version, resolved, float(tolerance), int(pixels) or None)
    pix_arg = ["--default-pixels", str(int(pixels))] if pixels else []
    st.caption(
        f"**{ui.escape_md(scope.focus)}**: configurations of (nearly) equal pixel budget, frames × pixels per frame. "
        f"{command(view, 'isocompute', resolved, '--tolerance', f'{tolerance:g}', *pix_arg)}"
    )
    if not out.groups:
        st.info(out.note, icon=":material/balance:")
        return
    for k, group in enumerate(out.groups):  # a handful of groups
        with st.container(border=True):
            ci = group.complementarity_ci
            best, oracle, compl = (AUDIT_METRICS[k] for k in ("best_single", "oracle_accuracy", "complementarity"))
            items = AUDIT_QUANTITIES["n_items"]
            ui.show_cards(
                [
                    ui.Card(
                        best.label, best.format(group.best_single.accuracy), group.best_single.config, best.definition
                    ),
                    ui.Card(oracle.label, oracle.format(group.oracle_accuracy), definition=oracle.definition),
                    ui.rate_card(compl.label, group.complementarity, ci, compl.definition),
                    ui.Card(
                        items.label,
                        f"{group.n_items:,}",
                        f"{group.n_excluded:,} excluded (incomplete)",
                        items.definition,
                    ),
                ]
            )
            if not small_n.too_few(group.n_items):
                for col, (part, spec) in zip(
                    st.columns([2, 3]), enumerate(charts_audits.allocations(group, colour)), strict=True
                ):
                    with col:
                        ui.vega(spec, f"isocompute-{scope.focus}-{k}-{part}")
            table = pd.DataFrame(to_json(group.configs))
            readable.table(
                table,
                {
                    "accuracy": st.column_config.NumberColumn(format="percent"),
                    "pixel_budget": st.column_config.NumberColumn(format="compact"),
                    "unique_wins": st.column_config.NumberColumn(help="items only this allocation answers"),
                },
            )


# --- noise ------------------------------------------------------------------------------------------


def noise_tab(view: View) -> None:
    scope = view.scope
    resolved = data.single(view, scope.grid)  # the focus model alone on the sidebar's grid: `audit noise`'s scope
    summary, items = data.noise_audit(data.view(view.root, view.version, resolved))
    st.caption(
        f"**{ui.escape_md(scope.focus)}** on the sidebar's grid. Repeats are every stored answer at the same budget (frames and "
        "pixels): runs, seeds and sampling policies. A flip is *within noise* when the item already flips under "
        f"repeats at either side. {command(view, 'noise', resolved)}"
    )
    if summary.n_items_with_repeats == 0:
        st.info(
            f"No repeats in this store for {ui.escape_md(scope.focus)} on this grid: every item has one answer per budget, "
            "so repeat noise cannot be measured and no flip can be called within or beyond it. Repeats are a second run, "
            "seed or sampling policy at the same frames and pixels (e.g. a re-run at `64f/random-s1` beside `64f`).",
            icon=":material/repeat:",
        )
        return
    noisy, flip = AUDIT_METRICS["n_items_noisy"], AUDIT_METRICS["mean_item_flip_rate"]
    repeats = AUDIT_QUANTITIES["n_items_with_repeats"]
    ui.show_cards(
        [
            ui.Card(
                repeats.label,
                f"{summary.n_items_with_repeats:,}",
                f"of {count(summary.n_items, 'item')}",
                repeats.definition,
            ),
            ui.Card(noisy.label, noisy.format(summary.n_items_noisy), definition=noisy.definition),
            ui.Card(flip.label, flip.format(summary.mean_item_flip_rate), definition=flip.definition),
        ]
    )
    if not small_n.too_few(summary.n_items_with_repeats):
        ui.vega(charts_audits.noise(summary), f"noise-{scope.focus}")
    per_config = pd.DataFrame(to_json(summary.per_config))
    readable.table(
        per_config,
        {
            "mean_flip_rate": st.column_config.NumberColumn(format="percent"),
            "share_noisy": st.column_config.NumberColumn("Share of measured items that flip", format="percent"),
        },
    )
    st.markdown(f"**Items with repeats** ({len(items):,}, noisiest first; select one to open it)")
    if not items.empty:
        shown, config = readable.prepare(
            items, {c: st.column_config.NumberColumn(format="%.2f") for c in items.columns if "flip_rate" in c}
        )
        walk.item_table(shown, "noiseitems", config)
        ui.downloads(items, f"noise-items-{scope.focus}")


# --- cross-model flows -----------------------------------------------------------------------------


def crossmodel_tab(view: View) -> None:
    scope = view.scope
    info = data.store_info(view.root, view.version)
    models = [m for m in info.models if scope.benchmark in info.configs.get(m, {})]
    others = [m for m in scope.models if m != scope.focus] + [m for m in models if m != scope.focus]
    left, right = st.columns(2)
    a = state.bind_one(left, "xa", "From model", models, scope.focus)
    a_cfgs = configs.order(info.configs[a][scope.benchmark or ""])
    ca = state.bind_one(left, "xca", "at", a_cfgs, scope.grid[-1] if scope.grid[-1] in a_cfgs else a_cfgs[-1])
    b = state.bind_one(right, "xb", "To model", models, others[0] if others else a)
    b_cfgs = configs.order(info.configs[b][scope.benchmark or ""])
    cb = state.bind_one(right, "xcb", "at", b_cfgs, ca if ca in b_cfgs else b_cfgs[-1])
    resolved = data.single(view)  # the benchmark and item filters; the two models are the tab's
    try:
        out = cross(view.root, view.version, resolved, a, b, ca, cb)
    except UserError as exc:
        st.info(str(exc), icon=":material/shuffle:")
        return
    st.caption(
        f"Items both models answered at both configurations ({out.n_items:,}; {out.n_excluded:,} excluded). "
        f"{command(view, 'crossmodel', resolved, '--models', f'{a},{b}', '--config', ca, '--config-b', cb, '--limit', str(CROSS_LIMIT), model_flag=None)}"
    )
    rescued, harmed, net, p = (METRICS[k] for k in ("rescued", "harmed", "net", "mcnemar_p"))
    first, second = AUDIT_QUANTITIES["accuracy_from"], AUDIT_QUANTITIES["accuracy_to"]
    ui.show_cards(
        [
            ui.Card(f"{a} @ {ca}", ui.pct(out.accuracy_from), definition=first.definition),
            ui.Card(f"{b} @ {cb}", ui.pct(out.accuracy_to), definition=second.definition),
            ui.Card(rescued.label, rescued.format(out.rescued), definition=rescued.definition),
            ui.Card(harmed.label, harmed.format(out.harmed), definition=harmed.definition),
            ui.Card(net.label, f"{net.format(out.net)} pp", f"{p.label} = {p.format(out.mcnemar_p)}", net.definition),
        ]
    )
    if not small_n.too_few(out.n_items):
        ui.vega(charts_audits.crossmodel(out), f"crossmodel-{a}-{b}")
    harmed = pd.DataFrame(to_json(out.harmed_items), columns=list(CROSS_ITEM_COLUMNS))
    shown = "" if len(harmed) == out.harmed else f", the first {len(harmed):,}"
    st.markdown(
        f"**Harmed items**: right for {ui.escape_md(a)} @ {ca}, wrong for {ui.escape_md(b)} @ {cb} ({out.harmed:,}{shown}; select one to open it)"
    )
    if not harmed.empty:
        shown, config = readable.prepare(harmed, {"question": st.column_config.TextColumn(width="large")})
        walk.item_table(shown, "harmeditems", config)
        ui.downloads(harmed, f"harmed-{a}-{b}")


def _tab_changed() -> None:
    state.put("atab", {label: name for name, label in TABS.items()}[st.session_state["w_atab"]])


ensure_entrypoint()
view = st.session_state["view"]
scope = view.scope
st.title("Audits")
with ui.guard():
    st.caption(
        f"**{ui.escape_md(scope.benchmark)}** · focus model **{ui.escape_md(scope.focus)}** · the sidebar's item filters apply; the trajectory tag does not."
    )
    colour = model_colours(data.store_info(view.root, view.version).models)[scope.focus]
    current = TABS.get(state.get("atab"), TABS["intervention"])
    tabs = st.tabs(list(TABS.values()), default=current, key="w_atab", on_change=_tab_changed)
    draw = {
        "intervention": intervention_tab,
        "isocompute": lambda v: isocompute_tab(v, colour),
        "noise": noise_tab,
        "crossmodel": crossmodel_tab,
    }
    for name, tab in zip(TABS, tabs, strict=True):
        if tab.open:
            with tab:
                draw[name](view)
