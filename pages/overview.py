"""Overview: the story first (the step a flat curve hides the most flips behind, the curve over its flows, the
headline numbers with what each means), then every model's numbers, transitions, scores and task types."""

import contextlib
import dataclasses
import functools
import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from backend.contracts.base import to_json
from backend.contracts.views import OverviewReport
from backend.present import drawn
from backend.present.metrics import CARDS, label
from backend.present.palette import model_colours
from backend.present.tables import headline_frame, overview_transitions
from backend.present.tables import task_table as task_text
from backend.present.text import count, story_why
from backend.present.text import story as story_text
from backend.report.html import table_html
from backend.scope.resolve import Scope
from backend.scope.view import View
from pages.common import data, explain_panel, scores, sidebar, state, ui
from pages.common.boot import ensure_entrypoint
from store.errors import UserError

MIN_GROUP = 30  # task types with fewer items are marked small
SORTS = {key: label(key) for key in ("visual_confusion_rate", "text_overwrite_rate", "oracle_headroom")} | {
    "n": "Items"
}


def story(view: View, metrics: OverviewReport, colours: dict[str, str]) -> None:
    """The first screen: the focus model's story step in one sentence (``backend.analysis.story``), the curve over
    its flows (the step shaded, its bars labelled with net and churn) beside the headline numbers, each with
    its plain definition (``backend.present.metrics``)."""
    scope, focus = view.scope, view.scope.focus
    step = metrics.story[focus]
    st.subheader(f"{ui.escape_md(focus)} · {ui.escape_md(story_text(step))}", anchor=False)
    if step is not None:
        small(f"{html.escape(story_why(step))} (chosen from the data: docs/metrics.md, “The story step”).")
    tag_notice(scope, metrics)
    spec = chart_spec(view, metrics, colours)
    note = (
        ""
        if "text" in scope.grid
        else _small("Text overwrite is n/a: add <code>text</code> to the grid to measure it.")
    )
    # One element for the browser: the chart drawn on the server beside the cards (no Vega chunk to load).
    side = f"<b>{ui.swatch(colours[focus], focus)}</b>{ui.headline_cards(metrics.models[focus], CARDS)}{note}"
    # The scripts to load later ride in the same element: each element is a render of its own in a new session.
    st.html(
        f'<div class="ta-first">{svg_html(data.chart_svg(spec))}<div>{side}</div></div>{later_loader()}',
        unsafe_allow_javascript=True,
    )
    # In a popover: its buttons are drawn when it opens, one element instead of two on every run.
    save = st.popover("Save the chart", icon=":material/download:", type="tertiary")
    for kind, mime, get in (("SVG", "image/svg+xml", data.chart_svg), ("PNG", "image/png", data.chart_png)):
        save.download_button(
            f"As {kind}",
            data=functools.partial(get, spec),
            file_name=f"curve-and-flows.{kind.lower()}",
            mime=mime,
            icon=":material/download:",
            on_click="ignore",
            type="tertiary",
            key=f"curve-{kind}",
        )
    if scope.beyond_noise:
        small(
            "Within-noise flips hidden: the bars count only flips of items that do not flip under repeats "
            "at either budget (the transitions list how many were hidden); the curve counts every item."
        )


def chart_spec(view: View, metrics: OverviewReport, colours: dict[str, str]) -> str:
    """The first screen's chart (the curve over its flows, the focus model's story step shaded) as its spec's
    JSON text, ``data.chart_svg``'s key."""
    return json.dumps(drawn.first_screen(metrics, colours, view.scope.focus))


def compute_first(view: View) -> None:
    """Compute the page's slow parts (the metrics with their bootstrap intervals, the chart's SVG) before its first
    element is drawn; drawing finds them cached.

    Why: each batch of elements that reaches the browser is a render of the whole page there. Elements drawn
    between two slow computations arrive in several batches, and each batch costs a render that competes with
    the server for the CPU. Computed first, they arrive in one burst (a filter at 1M and 10M responses: 0.44 -> 0.40 s
    and 0.56 -> 0.40 s, ``benchmarks/README.md``)."""
    if view.matrix.n_items:
        colours = model_colours(data.store_info(view.root, view.version).models)
        data.chart_svg(chart_spec(view, data.overview(view), colours))


def svg_html(svg: str) -> str:
    """HTML (for ``st.html``) of an SVG drawn on the server, its hover titles kept: ``st.html`` strips SVG markup,
    so a script puts it in place when the element is drawn (the browser's own parser, no Markdown or React work
    for its thousand nodes); its box keeps the chart's proportions meanwhile. ``svg`` is ``drawn.svg``'s, data
    text escaped; it enters the script as a JSON string with ``<`` escaped, so nothing in it closes the script."""
    size = re.search(r'<svg[^>]*\bwidth="(\d+)" height="(\d+)"', svg)
    ratio = f' style="aspect-ratio:{size[1]} / {size[2]}"' if size else ""
    text = json.dumps(svg).replace("<", "\\u003c")
    return (
        f'<div class="ta-chart"{ratio}></div>'
        f"<script>document.currentScript.previousElementSibling.innerHTML = {text};</script>"
    )


# Streamlit's scripts for the charts and table grids the other pages draw, which this page no longer loads.
LATER = ("ArrowVegaLiteChart", "embed", "DataFrame")


@functools.cache
def later_scripts() -> list[str]:
    """The file names of ``LATER``'s scripts in the installed Streamlit (they carry a content hash)."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    return sorted(path.name for stem in LATER for path in folder.glob(f"{stem}.*.js"))


def later_loader() -> str:
    """A script (HTML for ``st.html``) loading ``LATER``'s scripts once per tab, a second after this page is drawn and
    when the browser is idle, while the user reads the first screen: the first switch to a page with a Vega chart or
    a table grid then finds them loaded, as it did when the Overview drew both (the same URLs, so the same modules)."""
    names = json.dumps(later_scripts())
    return (
        "<script>if (!window.taLater) { window.taLater = true; setTimeout(() => (window.requestIdleCallback || setTimeout)(() => { "
        f"for (const name of {names}) import(new URL('static/js/' + name, document.baseURI).href).catch(() => {{}}); "
        "}), 1000); }</script>"
    )


def small(html: str) -> None:
    """A note in small print (our own text, no data) above the scope's caption, which stays the page's first
    caption (the browser tests and benchmarks read the matched items from it)."""
    st.html(_small(html))


def _small(html: str) -> str:
    return f'<small style="color:#6b6b76">{html}</small>'


def headlines(metrics: OverviewReport, colours: dict[str, str]) -> None:
    """Every selected model's headline numbers in one table, as the report shows it (plain HTML: no table grid for a
    new session to load), with its CSV."""
    st.subheader("Headline numbers per model", anchor=False)
    st.html(ui.headline_html(metrics.models, metrics.n_items, metrics.grid, colours))
    ui.downloads(lambda: headline_frame(metrics.models), "headlines")  # built on click (13 ms a run)


def transitions_table(metrics: OverviewReport) -> pd.DataFrame:
    rows = [{"model": m, **to_json(t)} for m, rec in metrics.models.items() for t in rec.transitions]
    hidden = ["hidden_rescued", "hidden_harmed"] if rows and "hidden_rescued" in rows[0] else []  # noise toggle on
    return pd.DataFrame(
        rows, columns=["model", "from", "to", "rescued", "harmed", "net", "churn", "mcnemar_p", *hidden]
    )


def task_table(scope: Scope, report: OverviewReport) -> None:
    """Per task type, with Wilson 95% intervals; groups under the minimum size are marked and sorted last."""
    st.subheader(f"By task type · {ui.escape_md(scope.focus)}")
    # The two controls in a popover, whose widgets the browser draws only while it is open: drawn on the page,
    # they and the tags' pills under them cost a new session 0.1 s (``benchmarks/README.md``).
    controls = st.popover("Sort and group size", icon=":material/tune:")
    sort = state.bind(
        controls.segmented_control,
        "tsort",
        "Sort by",
        options=list(SORTS),
        default="visual_confusion_rate",
        format_func=SORTS.get,
    )
    min_n = state.bind(
        controls.number_input,
        "minn",
        "Minimum group size",
        default=MIN_GROUP,
        min_value=1,
        max_value=100_000,
        step=5,
        help="Task types with fewer items are marked small and sorted after the others: their rates swing widely.",
    )
    table = pd.DataFrame(report.task_types[scope.focus])
    table.insert(2, "size", np.where(table["n"] < min_n, f"small (< {min_n})", ""))
    if sort:
        table = table.sort_values(sort, ascending=False, kind="stable", na_position="last")
        table = table.sort_values("n", key=lambda n: n < min_n, kind="stable")  # small groups last, order kept
    acc = [c for c in table.columns if c.startswith("accuracy[")]
    cells = task_text(table.to_dict("records"), scope.focus)  # the report's cells, in this order, and a size column
    shown = dataclasses.replace(
        cells,
        caption=f"{(table['n'] < min_n).sum()} of {len(table)} task types have fewer than {count(min_n, 'item')} "
        f"(marked small, listed last){f'; sorted by {SORTS[sort].lower()}' if sort else ''}. n: matched items of the type; "
        "% of items; brackets: Wilson 95% intervals, valid for small groups.",
        columns=[*cells.columns[:2], "Group", *cells.columns[2:]],
        rows=[[*row[:2], size, *row[2:]] for row, size in zip(cells.rows, table["size"], strict=True)],
        values=[[*row[:2], None, *row[2:]] for row in cells.values],
        keys=[*cells.keys[:2], None, *cells.keys[2:]],
    )
    st.html(f'<div class="ta-table ta-scroll">{table_html(shown)}</div>')
    more = st.expander("Accuracy per configuration, by task type", key="task-acc", on_change="rerun")
    if more.open:  # drawn when opened: a folded table still costs its serialisation and the browser's drawing
        more.dataframe(
            table[["task_type", "n", *acc]],
            hide_index=True,
            column_config=ui.plain_headers(
                ["task_type", "n"],
                {"task_type": st.column_config.TextColumn("Task type", pinned=True)}
                | {c: st.column_config.NumberColumn(c[len("accuracy[") : -1], format="percent") for c in acc},
            ),
        )
    ui.downloads(table, f"task-types-{scope.focus}")


def tag_notice(scope: Scope, metrics: OverviewReport) -> None:
    """Under a trajectory-tag filter every number is conditioned on the tag (confused items: 100% confusion)."""
    if scope.tag:
        st.warning(
            f"Conditioned on the trajectory tag **{ui.escape_md(scope.tag)}** of {ui.escape_md(scope.focus)}: every "
            f"number below is over its {count(metrics.n_items, 'item')} only, so rates the tag defines (e.g. visual "
            "confusion for `confused`) are 100% by construction. Clear the tag for the benchmark's numbers.",
            icon=":material/filter_alt:",
        )


ensure_entrypoint()
beyond_noise = sidebar.noise_toggle()  # the bars and the table count only flips beyond noise
with contextlib.suppress(UserError):  # shown by the drawing below, under the title
    compute_first(data.restate(st.session_state["view"], beyond_noise=beyond_noise))
st.title("Overview")
with ui.guard():
    view = data.restate(st.session_state["view"], beyond_noise=beyond_noise)
    ui.need_items(view)
    scope = view.scope
    colours = model_colours(data.store_info(view.root, view.version).models)
    metrics = data.overview(view)
    story(view, metrics, colours)
    ui.scope_caption(view)
    headlines(metrics, colours)
    box = st.expander(
        "Transitions: rescued, harmed, net, churn and McNemar p of every step", key="transitions", on_change="rerun"
    )
    if box.open:  # drawn when opened, like the task types' accuracy table
        with box:  # the report's table (net and churn in points, as the story words them), its numbers as CSV
            st.html(f'<div class="ta-table">{table_html(overview_transitions(metrics.models), colours)}</div>')
            ui.downloads(lambda: transitions_table(metrics), "transitions")
    scores.overview_section(view, metrics, colours)
    task_table(scope, metrics)
    explain_panel.tag_panel(view)
    # The shareable report: built on click by the CLI's own function (same bytes as `trajaudit report` for this scope and seed).
    from backend.report import build as build_report

    st.download_button(
        "Download report",
        icon=":material/download:",
        on_click="ignore",
        mime="text/html",
        file_name="trajaudit-report.html",
        data=lambda: build_report(
            view.store, view.resolved, "html", seed=0, bootstrap=data.BOOTSTRAP, video_root=sidebar.video_root(view)
        ),
        help="One self-contained HTML file of this view (charts draw offline, tables, a gallery of 24 items); "
        "the same file as `trajaudit report` with this view's flags and `--seed 0`.",
    )
    ui.twin(view, ["metrics"])
