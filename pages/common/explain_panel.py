"""The "Why these items?" panel: what a flow, a Sankey node, a tag or picked items have in common.

One module, called from Flows (the opened flow or node), Overview (per trajectory tag) and Items (the
picked rows). It draws ``backend.views.explain_view`` (``trajaudit explain --json``, whose line it shows):
the top slices' lift with intervals and the base rate marked, the table where each slice links to its
selected items (the Inspector walking exactly them), the letter prior, where a flow's answers went, the
raw outputs a parser could not read, and agreement across the scope's models. Drawn only while its
expander is open: slice finding costs a few hundred milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from backend.analysis.explain import ATTRIBUTES, LINK_MAX, Target
from backend.contracts.base import to_json
from backend.contracts.explain import ExplainReport, ExplainSlice
from backend.present import charts_items
from backend.present.text import count, interval
from backend.scope.selection import Selection
from backend.scope.tags import TAGS
from backend.scope.view import View
from pages.common import data, readable, small_n, state, ui
from pages.common.data import explain_report as report


def explain_scope(view: View) -> View:
    """The view without the sidebar's trajectory tag and noise toggle: slices compare a selection with every
    matched item (under a tag every item would be in it), and ``trajaudit explain`` counts every flip."""
    return data.restate(view, tag=None, tag_model=None, beyond_noise=False)


def walk_link(ids: list[str] | None) -> str | None:
    """A relative link that opens the Inspector walking exactly ``ids`` (None: none, or too many for a URL)."""
    if not ids:
        return None
    params = state.params(walk=Selection("items", tuple(ids)).to_url(), item=ids[0])
    return "inspector?" + urlencode(params)


def slice_table(rows: Sequence[ExplainSlice]) -> pd.DataFrame:
    """The slices as the panel lists them (numbers as numbers; the link opens the slice's selected items)."""
    return pd.DataFrame(
        {
            "slice": [r.label for r in rows],
            "selected": [r.n_selected for r in rows],
            "in slice": [r.n_slice for r in rows],
            "rate": [r.rate for r in rows],
            "lift": [r.lift for r in rows],
            "difference (pp, 95% CI)": [interval(r.diff, r.diff_ci) for r in rows],  # as the report writes it
            "p": [r.p for r in rows],
            "q": [r.q for r in rows],
            "survives": [r.survives for r in rows],
            "small": [r.small for r in rows],
            "items": [walk_link(r.item_ids) for r in rows],
        }
    )


def _links(rows: Sequence[ExplainSlice], top: int = 8) -> None:
    """The best slices' links as plain Markdown links (the table's link column is drawn on a canvas)."""
    links = [(r, walk_link(r.item_ids)) for r in rows[:top]]
    shown = [f"[{ui.escape_md(r.label)} ({r.n_selected:,})]({url})" for r, url in links if url]
    if shown:
        st.markdown("Walk a slice's selected items in the Inspector: " + " · ".join(shown))


def _table(rows: Sequence[ExplainSlice], key: str) -> None:
    if not rows:
        st.caption("None found.")
        return
    _links(rows)
    readable.table(
        slice_table(rows),
        key=key,
        column_config={
            "slice": st.column_config.TextColumn(width="large"),
            "rate": st.column_config.NumberColumn(format="percent", help="share of the slice's items selected"),
            "lift": st.column_config.NumberColumn(format="%.2f", help="rate / base rate"),
            "p": st.column_config.NumberColumn("Fisher p", format="%.3g"),
            "q": st.column_config.NumberColumn(
                "BH q", format="%.3g", help="Benjamini-Hochberg over every slice tested"
            ),
            "survives": st.column_config.CheckboxColumn(
                "Survives BH", help="BH q under 0.05: a finding; the rest are leads (drawn grey)"
            ),
            "small": st.column_config.CheckboxColumn(help="fewer scope items than the minimum: ranked last"),
            "items": st.column_config.LinkColumn(
                "Open",
                display_text=f"walk its selected items (≤ {LINK_MAX})",
                help="the Inspector, walking this slice's selected items (new tab)",
            ),
        },
    )


def _answers(out: ExplainReport) -> None:
    answers, parser = out.answers, out.parser
    prior = pd.DataFrame(
        [{"config": r.config, **r.chosen, "no answer": r.no_answer, "chi-square p": r.p} for r in answers.prior]
    )
    targets = ", ".join(f"{ui.escape_md(k)} {v:,}" for k, v in answers.targets.items())
    st.markdown(
        "**Letter prior**: chosen letters per configuration against the targets' (chi-square test of homogeneity); "
        f"targets: {targets}"
    )
    readable.table(prior, {"chi-square p": st.column_config.NumberColumn(format="%.3g")})
    moved = answers.moved
    if moved:
        to = ", ".join(f"{ui.escape_md(k)} {v:,}" for k, v in moved.to.items() if v)
        st.markdown(
            f"**Where the answers went** (at {ui.escape_md(out.target.args[1])}): {to}; the same letter as "
            f"before {moved.same_letter:,}, no answer {moved.to_no_answer:,}."
        )
    st.caption(
        f"Raw outputs at {ui.escape_md(', '.join(parser.configs))}: {parser.empty:,} empty, "
        f"{parser.degenerate:,} degenerate (one character repeated), {parser.unparsed:,} unparsed: "
        f"{parser.affected:,} selected items" + (", left out above." if parser.excluded else ".")
    )


def _agreement(out: ExplainReport) -> None:
    agree = out.agreement
    if not agree:
        return
    st.markdown(f"**Across models**: the same {ui.escape_md(out.target.describe)} in each model of the scope")
    readable.table(
        pd.DataFrame(to_json(agree.pairs)),
        {
            "expected": st.column_config.NumberColumn(format="%.1f"),
            "p": st.column_config.NumberColumn("Hypergeometric p", format="%.3g"),
            "jaccard": st.column_config.NumberColumn(format="%.2f"),
            "kappa": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    link = walk_link(agree.every)
    text = f"{count(agree.n_every, 'item')} are selected in every model"
    st.markdown(f"{text}: [walk them in the Inspector]({link})" if link else f"{text}.")


def panel(view: View, target: Target, key: str) -> None:
    """The panel for ``target`` of the focus model, in an expander drawn while open."""
    box = st.expander(
        f"Why these items? What {target.describe()} has in common",
        key=f"explain-{key}",
        on_change="rerun",
        icon=":material/query_stats:",
    )
    if box.open:
        with box:
            body(view, target, key)


def body(view: View, target: Target, key: str) -> None:
    """The panel's content for ``target`` (``panel`` draws it in its expander, ``tag_panel`` under its tag choice)."""
    model, tagged, view = view.scope.focus, bool(view.scope.tag or view.scope.beyond_noise), explain_scope(view)
    exclude = st.toggle(
        "Leave out items whose raw output was unreadable",
        key=f"explain-x-{key}",
        help="empty, degenerate (one character repeated) or unparsed at the configurations checked",
    )
    out = report(view, model, target, exclude)
    if out.n_selected == 0:
        st.info("No item selected: nothing to explain.")
        return
    for note in out.untested:
        st.info(f"Not tested: {ui.escape_md(note)}.", icon=":material/info:")
    verdict = out.verdict
    st.markdown(
        f"**{ui.escape_md(verdict.text)}.**"
        + (" The bars are drawn grey: read them as leads, not findings." if not verdict.n_surviving else "")
    )
    if (out.slices or out.pairs) and not small_n.too_few(out.n_selected, "selected item"):
        ui.vega(charts_items.explain_lifts(out), f"explain-{model}-{key}")
    if tagged:
        st.caption(
            "The sidebar's trajectory tag and the within-noise toggle are not applied here: slices compare "
            "with every matched item, and every flip counts."
        )
    st.caption(
        f"{out.n_selected:,} of {count(out.n_scope, 'item')} selected (base rate {ui.pct(out.base_rate)}); "
        f"{out.n_tests:,} slices tested over "
        f"{ui.escape_md(', '.join(ATTRIBUTES[a] for a in out.attributes) or 'no attribute')}; "
        f"small: under {count(out.min_size, 'item')}. Pairs of attributes: "
        f"{ui.escape_md(out.pair_search or 'not searched')}."
    )
    st.markdown("**One attribute**")
    _table(out.slices, f"explain-slices-{key}")
    st.markdown("**Two attributes**")
    _table(out.pairs, f"explain-pairs-{key}")
    _answers(out)
    _agreement(out)
    extra = target.to_argv() or ["--items", "ITEMS.txt"]
    line = view.twin(["explain", "--model", model], *extra, *(["--exclude-unparsed"] if exclude else []), "--json")
    st.markdown("**CLI twin** (the same numbers as JSON)")
    st.code(line, language="bash", wrap_lines=True)
    if target.kind == "items":
        st.download_button(
            "ITEMS.txt: the item ids",
            "\n".join(target.args),
            file_name="ITEMS.txt",
            on_click="ignore",
            key=f"explain-ids-{key}",
        )


def tag_panel(view: View) -> None:
    """Overview: the panel for one trajectory tag of the focus model (the sidebar's tag, else text overwrite), the
    tag's choice inside its expander: drawn while open, like the panel (a new session's Overview drew the tags'
    pills below the fold for 0.1 s with the task types' controls, ``benchmarks/README.md``)."""
    box = st.expander(
        "Why these items? What a trajectory tag's items have in common",
        key="explain-tags",
        on_change="rerun",
        icon=":material/query_stats:",
    )
    if box.open:
        with box:
            default = view.scope.tag or ("text-overwrite" if "text" in view.scope.grid else "confused")
            tag = st.pills("Trajectory tag (focus model)", TAGS, default=default, required=True, key="explain-tag")
            body(view, Target("tag", (tag,)), f"tag-{tag}")
