"""Drawing helpers shared by the pages: charts with export, table downloads, error boxes, glyphs."""

from __future__ import annotations

import base64
import functools
import html
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import streamlit as st

from backend.contracts.views import ModelMetrics
from backend.present.metrics import METRICS
from backend.present.palette import CORRECT, INK, WRONG
from backend.present.tables import header, headline_ci, headline_table, headline_value
from backend.present.text import MISSING, ci_text, count, pct
from backend.report.html import table_html
from backend.scope.binary import describe
from backend.scope.runs import notice as runs_notice
from backend.scope.view import View
from pages.common import data, score_data
from store.errors import UserError

# The table download buttons: label, encoder, file suffix, MIME type, widget key prefix.
_DOWNLOADS: tuple[tuple[str, Callable[[pd.DataFrame], bytes], str, str, str], ...] = (
    ("CSV", data.csv_bytes, "csv", "text/csv", "csv"),
    ("Parquet", data.parquet_bytes, "parquet", "application/octet-stream", "pq"),
)
FONT = {"family": "Source Sans Pro, Arial, sans-serif", "size": 13, "color": INK}
_HEX = re.compile(r"#[0-9A-Fa-f]{3,8}")
# Where GFM would autolink: a URL scheme's colon, "www." and an e-mail's "@" (a word joiner goes before them).
_AUTOLINK = re.compile(r"(?i)\b(?:https?|ftp|mailto|xmpp)(?=:)|\bwww(?=\.)|[\w.+-](?=@[\w-]+\.)")
_MD_INLINE = re.compile(r"([\\`*_{}\[\]()!|<>~$:&])")  # emphasis, code, links, tables, HTML, directives, math
PICK_RUN = "Pick another with the sidebar's Run choice."  # a page's ending of ``runs_notice`` (the CLI names --run)
DASH = MISSING  # a missing value in a table cell (``st.dataframe(placeholder=DASH)``; Streamlit's default is "None")
_MD_LINE_START = re.compile(r"^(\s*\d*)([#+=.)-])")  # headings, lists ("-", "1."), setext underlines


@contextmanager
def guard() -> Iterator[None]:
    """Show a ``UserError`` as an error box with its message and stop the page (no traceback)."""
    try:
        yield
    except UserError as exc:
        st.error(escape_md(exc), icon=":material/warning:")  # messages quote the bad value: shown as text
        st.stop()


class Card(NamedTuple):
    """A number drawn as a card (``cards``): its label, its value as text, a note beside the value (an interval, a
    count, a comparison; "" for none) and what it means, in one plain line shown under it ("" for none), so a
    reader never hovers for a definition. ``key``: the metric's registry key, where it is one (``data-key``)."""

    label: str
    value: str
    note: str = ""
    definition: str = ""
    key: str = ""


def rate_card(label: str, value: float | None, ci: Sequence[float] | None, definition: str = "", key: str = "") -> Card:
    """A rate as a card, its 95% interval as the note (a dash where there is no value)."""
    return Card(label, pct(value), ci_text(ci) or "", definition, key)


def headline_cards(rec: ModelMetrics, keys: Sequence[str]) -> str:
    """HTML (for ``st.html``) of one model's headline rates as ``cards``, each with its 95% interval and its
    one-line plain definition (``backend.present.metrics``)."""
    return cards(
        rate_card(
            f"{METRICS[key].label} ({rec.best_fixed.config})" if key == "best_fixed" else METRICS[key].label,
            headline_value(rec, key),
            headline_ci(rec, key),
            METRICS[key].definition,
            key,
        )
        for key in keys
    )


def cards(numbers: Iterable[Card]) -> str:
    """HTML (for ``st.html``) of numbers as cards, as many to a row as fit: one element for the browser to draw
    instead of a column, a metric and a tooltip per number. Every text is escaped (a label or a note may hold
    data: a model's or a configuration's name)."""
    shown = [
        f'<div class="ta-card" data-key="{html.escape(c.key)}"><div class="ta-label">{html.escape(c.label)}</div>'
        f'<div class="ta-value">{html.escape(c.value)} <span class="ta-ci">{html.escape(c.note)}</span></div>'
        f'<div class="ta-def">{html.escape(c.definition)}</div></div>'
        for c in numbers
    ]
    return f"<style>{_CARDS_CSS}</style><div class='ta-cards'>{''.join(shown)}</div>"


def show_cards(numbers: Iterable[Card]) -> None:
    """Draw ``cards`` as one element."""
    st.html(cards(numbers))


def headline_html(models: Mapping[str, ModelMetrics], n_items: int, grid: list[str], colours: dict[str, str]) -> str:
    """HTML (for ``st.html``) of every model's headline numbers in one table, as the report shows it
    (``backend.present.tables.headline_table``; plain HTML: no table grid for the browser to load and draw)."""
    return f'<div class="ta-table">{table_html(headline_table(models, n_items, grid), colours)}</div>'


_CARDS_CSS = (
    ".ta-cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(165px,1fr));gap:12px 18px}"
    f".ta-card{{border-left:3px solid #e0e0e6;padding:0 0 0 10px;color:{INK}}}"
    ".ta-label{font-size:0.85rem;font-weight:600}"
    ".ta-value{font-size:1.45rem;line-height:1.25}"
    ".ta-ci{font-size:0.75rem;color:#6b6b76;white-space:nowrap}"
    ".ta-def{font-size:0.8rem;line-height:1.3;color:#55555f}"
)


def vega(spec: dict, name: str) -> None:
    """Draw a Vega-Lite spec (``backend.present.charts*``) as the page's width; its menu saves it as SVG or PNG.
    ``name`` keys the element, so a chart keeps its place (and its zoom) across reruns."""
    st.vega_lite_chart(spec, width="stretch", theme=None, key=f"vega-{name}")


def _encoded(encode: Callable[[pd.DataFrame], bytes], get: Callable[[], pd.DataFrame]) -> bytes:
    """A download's content, built when the button is clicked."""
    return encode(get())


def downloads(
    frame: pd.DataFrame | Callable[[], pd.DataFrame], name: str, *, parquet: bool = False, key: str = ""
) -> None:
    """CSV (and optionally Parquet) download buttons; a callable is only evaluated on click.

    The buttons sit in a row at their labels' width: fixed column shares squashed the label to "C.." in a
    narrow column (the Compare page's Jaccard half)."""
    get: Callable[[], pd.DataFrame] = frame if callable(frame) else (lambda: frame)
    kinds = _DOWNLOADS if parquet else _DOWNLOADS[:1]
    row = st.container(horizontal=True)
    for label, encode, suffix, mime, tag in kinds:
        row.download_button(
            label,
            data=functools.partial(_encoded, encode, get),
            file_name=f"{name}.{suffix}",
            mime=mime,
            icon=":material/download:",
            key=f"{tag}-{name}-{key}",
            on_click="ignore",
            width="content",
        )


def scroll_to_top() -> None:
    """Scroll the main area to the top, for a run that switched pages: the browser keeps the old page's
    offset, and a page opened from far down another one (Flows' "Walk these N" under its Sankey) opened
    scrolled past its title on a laptop-sized window. Drawn at the end of the run, after the page's
    elements, so nothing drawn later moves it."""
    st.html(
        "<script>document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)</script>",
        unsafe_allow_javascript=True,
    )


OPEN = "open"  # the button column ``row_table`` adds before a frame's own columns


def row_table(
    frame: pd.DataFrame,
    key: str,
    on_open: Callable[[int], None],
    column_config: dict,
    height: int | None = None,
    **options: Any,
) -> None:
    """A table (widget ``key``) whose rows each start with an Open button; a click calls ``on_open`` with
    that row's position in ``frame`` (a sorted view's too). ``height`` in pixels (None: Streamlit's, about ten
    rows). Missing values read as a dash; headers in the one style (``plain_headers``). ``options``: more of
    ``st.dataframe``'s (a row height, a selection of several rows to pick).

    Why a button and not the row's selection: Streamlit sends a table's selection to the server 150 ms after the
    click (a debounce, for a selection made of several clicks), and a button's click at once: opening a row took
    0.15 s longer than the page switch it makes (``benchmarks/README.md``)."""
    click = f"{key}-{OPEN}"
    button = st.column_config.ButtonColumn(
        "", type="tertiary", pinned=True, key=click, on_click=lambda: on_open(int(st.session_state[click]["row"]))
    )
    st.dataframe(
        frame.assign(**{OPEN: "Open"})[[OPEN, *frame.columns]],
        hide_index=True,
        key=key,
        column_config=plain_headers(frame.columns, column_config) | {OPEN: button},
        height="auto" if height is None else height,
        placeholder=DASH,
        **options,
    )


def plain_headers(columns: Iterable[str], column_config: dict) -> dict:
    """``column_config`` with every other column of ``columns`` headed in plain words ("task_type" -> "Task
    type", "item_id" -> "Item"; ``backend.present.tables.header``, as every other table of the pages, the CLI and
    the report): one naming style, whatever the frame's column names. A label ``column_config`` gives is kept as
    written, since it may be data (a model's name heads its column as it is): pages write theirs in sentence case
    (``tests/test_policy_pages.py`` reads every table's headers)."""
    return {c: header(c) for c in columns} | column_config


def swatch(colour: str, text: str) -> str:
    """HTML (for ``st.html``) of a coloured square before ``text`` (model legends in headers).

    ``text`` is data (a model name), so it is HTML-escaped; ``colour`` must be a palette hex colour.
    """
    if not _HEX.fullmatch(colour):
        raise ValueError(f"not a hex colour: {colour!r}")
    return f'<span style="color:{colour}">■</span> {html.escape(text)}'


def escape_md(text: object) -> str:
    """``text`` for a Markdown string, shown literally: no link, image, emphasis, HTML tag or Streamlit
    directive (``:red[…]``, ``:material/…:``, ``$…$``) from data. Every character that acts anywhere,
    and those that act at a line's start, are backslash-escaped (CommonMark escapes any ASCII
    punctuation); line breaks stay line breaks.

    GFM also turns bare ``http://``, ``www.`` and e-mail addresses into links after parsing, which
    no escape prevents: an invisible word joiner (U+2060) is put inside those patterns instead."""
    lines = str(text).splitlines() or [""]
    return "  \n".join(_escape_line(_AUTOLINK.sub(lambda m: m[0] + "\u2060", line)) for line in lines)


def _escape_line(line: str) -> str:
    return _MD_LINE_START.sub(r"\1\\\2", _MD_INLINE.sub(r"\\\1", line))


def code(text: object) -> str:
    """``text`` as a Markdown code span (literal, on one line), whatever backticks it holds."""
    flat = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    return f"{fence} {flat} {fence}"


def trajectory_svg(rows: np.ndarray, cell: int = 11, gap: int = 2) -> str:
    """A data URI of cells per config (columns) per model (rows), correct / wrong coloured.

    ``rows`` is ``[M, C]`` of 1 / 0 (the matched matrix has no missing cell). Drawn for the rows
    of one page only (tens of small images), as an SVG so the palette colours are exact.
    """
    rows = np.atleast_2d(rows)
    n_rows, n_cols = rows.shape
    colour = {1: CORRECT, 0: WRONG}
    width, height = n_cols * (cell + gap), n_rows * (cell + gap)
    rects = "".join(
        f'<rect x="{c * (cell + gap)}" y="{r * (cell + gap)}" width="{cell}" height="{cell}" rx="2" fill="{colour[int(v)]}"/>'
        for r in range(n_rows)
        for c, v in enumerate(rows[r])
    )
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">{rects}</svg>'
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def need_items(view: View) -> None:
    """Stop the page with a notice when the filters leave no matched item."""
    m, scope = view.matrix, view.scope
    if m.n_items == 0 and scope.score_cutoff == "none" and score_data.has_scores(view):
        st.warning(
            "Every matched item is scored (open-ended), and the sidebar's *Open-ended items in accuracy* leaves "
            "them out, so there is no accuracy to show: pick the stored verdict or a cut-off there "
            "(`trajaudit flows --scores` prints their scores meanwhile).",
            icon=":material/rule:",
        )
        st.stop()
    if m.n_items == 0:
        filtered = "" if scope.item_filter.is_empty() and scope.tag is None else " and the filters"
        st.warning(
            f"No item has a response for every selected model and configuration{filtered} "
            f"({m.n_excluded} excluded). Widen the filters, drop a model or a configuration.",
            icon=":material/search:",
        )
        st.stop()


def matched(view: View) -> View:
    """``view`` once the page may draw it: stopped with a notice when no item is matched, else captioned with
    its scope (the opening of every page that draws the matched matrix)."""
    need_items(view)
    scope_caption(view)
    return view


def scope_caption(view: View) -> None:
    """What the numbers below are about: matched items, the grid (and where it came from), exclusions."""
    m, scope = view.matrix, view.scope
    source = "default grid" if view.resolved.grid_source == "default" else "grid"
    parts = [
        f"**{escape_md(scope.benchmark)}**",
        f"{m.n_items:,} matched items",
        f"{m.n_excluded:,} excluded (incomplete)" if m.n_excluded else None,
        f"{source} {escape_md(' → '.join(scope.grid))}",
        f"only items tagged *{scope.tag}* for {escape_md(scope.focus)}: every number is conditioned on that tag"
        if scope.tag
        else None,
        "re-runs included" if scope.include_reruns else None,
    ]
    st.caption(" · ".join(p for p in parts if p))
    runs = runs_notice(view.resolved.runs, PICK_RUN)
    if runs:
        st.caption(escape_md(runs[0].upper() + runs[1:]))  # a sentence of its own here (the CLI prefixes its name)
    if score_data.has_scores(view):  # how scored (open-ended) items enter accuracy (--score-cutoff)
        st.caption(escape_md(describe(score_data.binary(view))))
    excluded = view.resolved.grid_excluded
    if excluded:
        with st.expander(f"Configurations left out of the grid ({len(excluded)})"):
            st.caption(
                "  \n".join(
                    f"**{escape_md(label)}**: {count(e['n_items'], 'item')}, {escape_md(e['why'])}"
                    for label, e in excluded.items()
                )
            )


TWIN = "cli-twin"  # the page's own twin's expander; a section with a twin of its own names another


def twin(view: View, command: list[str], *extra: str, key: str = TWIN) -> None:
    """The view's CLI twin: the exact ``trajaudit ... --json`` line that prints the numbers drawn here."""
    show_twin(view.twin(command, *extra, "--json"), key)


def show_twin(line: str, key: str = TWIN) -> None:
    """A copyable CLI line under the page (datasette's "JSON" link, for a terminal); ``key`` keys its expander,
    so a section's twin (a batch re-run's comparison) and the page's are two (one key twice raised on the page).

    Drawn only once the expander is opened: a code block loads Streamlit's syntax highlighter
    (a large script the browser runs on a new session) even when folded."""
    box = st.expander("CLI twin: the same numbers as JSON", key=key, on_change="rerun")
    if box.open:
        box.code(line, language="bash", wrap_lines=True)
