"""The Inspector's texts panel: an open-ended item's reference and each configuration's answer, side by side.

Draws ``backend.views.texts_view`` (``trajaudit inspect --json``'s ``texts``): one table row per model and
configuration with the stored score, the answer's words marked against the reference (matched words
highlighted, the reference words it missed listed under it) and the model's best and worst configurations
marked. Every text is data: HTML-escaped before it reaches ``st.html``.
"""

from __future__ import annotations

import html

import streamlit as st

from backend.contracts.inspector import DiffWord, ItemTexts, TextRow
from backend.present.palette import CORRECT, NEUTRAL, WRONG
from pages.common import state, ui

MARKS = {"best": ("★ best", CORRECT), "worst": ("▼ worst", WRONG)}
STYLE = f"""<style>
table.ta-texts {{border-collapse: collapse; width: 100%; font-size: 0.9rem}}
table.ta-texts th, table.ta-texts td {{text-align: left; vertical-align: top; padding: 4px 8px;
  border-bottom: 1px solid #e6e6e6}}
table.ta-texts td.num {{text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap}}
.ta-texts .hit {{background: {CORRECT}33; border-radius: 3px; padding: 0 2px}}
.ta-texts .miss {{color: {NEUTRAL}}}
.ta-texts .gone {{color: {WRONG}; font-size: 0.8rem}}
.ta-texts .mark {{font-weight: 600; white-space: nowrap}}
</style>"""


def words_html(words: list[DiffWord]) -> str:
    """The words, escaped, matched ones highlighted (``hit``), unmatched ones plain, ignored ones greyed."""
    cls = {"matched": "hit", "unmatched": None, "ignored": "miss"}
    return " ".join(
        html.escape(w.text) if cls[w.state] is None else f'<span class="{cls[w.state]}">{html.escape(w.text)}</span>'
        for w in words
    )


def row_html(row: TextRow, colour: str) -> str:
    """One configuration's row: model, configuration, score, the marked answer and what it missed."""
    diff = row.diff
    missed = [w.text for w in diff.reference_words if w.state == "unmatched"]
    answer = words_html(diff.answer_words) if row.text is not None else '<span class="miss">(no text stored)</span>'
    gone = f'<br><span class="gone">missing: {html.escape(" ".join(missed))}</span>' if missed else ""
    label, tint = MARKS.get(row.rank or "", ("", ""))
    mark = f'<span class="mark" style="color:{tint}">{label}</span>' if label else ""
    config = html.escape(row.config) + (" · live re-run" if row.live_rerun else "")
    score = "–" if row.score is None else f"{row.score:.2f}"
    return (
        f"<tr><td>{ui.swatch(colour, row.model)}</td><td>{config}</td><td class='num'>{score}</td>"
        f"<td class='num'>{diff.matched}/{diff.reference_tokens}</td><td>{answer}{gone}</td><td>{mark}</td></tr>"
    )


def texts_table(texts: ItemTexts, models: list[str], colours: dict[str, str]) -> str:
    """The panel's HTML: the reference(s), then one row per shown model's configuration."""
    refs = "".join(f"<li>{html.escape(r)}</li>" for r in texts.references) or "<li>(no reference stored)</li>"
    rows = "".join(row_html(r, colours.get(r.model, NEUTRAL)) for r in texts.rows if r.model in models)
    return (
        f"{STYLE}<div class='ta-texts'><b>Reference{'s' if len(texts.references) > 1 else ''}</b><ul>{refs}</ul>"
        "<table class='ta-texts'><thead><tr><th>model</th><th>configuration</th><th>score</th>"
        "<th title='answer words found in the reference / reference words'>matched</th>"
        "<th>answer (matched words highlighted)</th><th></th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def texts_panel(texts: ItemTexts, scope_models: list[str], colours: dict[str, str]) -> None:
    """The subheader, a model picker (one model or several) and the table."""
    st.subheader("Texts side by side")
    present = list(dict.fromkeys(r.model for r in texts.rows))
    options = [m for m in scope_models if m in present] + [m for m in present if m not in scope_models]
    chosen = state.bind_many(st, "texts", "Models", options, options) if len(options) > 1 else options
    st.caption(
        "Each answer against the reference, word by word as Token-F1 counts them (lower case, no punctuation, "
        "no articles; a reference word matches once): highlighted words are in the reference, greyed ones are not "
        "counted, and the reference words the answer lacks are listed under it. Best and worst: the model's "
        "highest and lowest stored score over its logged configurations."
    )
    if chosen:
        st.html(texts_table(texts, chosen, colours))
