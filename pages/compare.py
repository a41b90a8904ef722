"""Compare: the selected models on their matched grid: headline numbers, confused-item overlap, disagreement."""

import pandas as pd
import streamlit as st

from backend.contracts.base import UnsetType
from backend.present import charts
from backend.present.metrics import COMPARE_METRICS, METRICS
from backend.present.palette import model_colours
from backend.present.tables import headline_frame
from backend.present.text import count
from pages.common import data, readable, scores, small_n, ui, walk
from pages.common.boot import ensure_entrypoint

# The headline bars, titled with the registry's labels (backend.present.metrics).
BAR_KEYS = ("oracle_headroom", "visual_confusion_rate", "text_overwrite_rate")
BARS = tuple((key, METRICS[key].label.lower()) for key in BAR_KEYS)
TOP = 50
PARTS = (("value", ""), ("lo", "_lo"), ("hi", "_hi"))


def bars(table: pd.DataFrame, colours: dict[str, str]) -> dict:
    rows = [
        {
            "model": row["model"],
            "metric": label,
            **{k: charts.number(row[f"{name}{suffix}"], 100) for k, suffix in PARTS},
        }
        for _, row in table.iterrows()
        for name, label in BARS
    ]
    has_text = table["text_overwrite_rate"].notna().any()
    x_title = "metric" if has_text else "metric (text overwrite n/a: no text in the grid)"
    return charts.headline_bars(rows, table["model"].tolist(), colours, x_title)


def titled(spec: dict, n_items: int) -> dict:
    """The headline bars' spec with the one denominator every bar shares under its title (the matched items)."""
    return {
        **spec,
        "title": {"text": spec["title"], "subtitle": f"every bar on the same {count(n_items, 'matched item')}"},
    }


ensure_entrypoint()
view = st.session_state["view"]
st.title("Compare")
with ui.guard():
    if len(view.scope.models) < 2:
        st.info(
            "Select two or more models in the sidebar to compare them on their matched grid.",
            icon=":material/arrow_back:",
        )
        st.stop()
    ui.matched(view)
    colours = model_colours(data.store_info(view.root, view.version).models)
    report = data.compare_view(view, TOP)
    table = headline_frame(report.metrics)
    st.html(ui.headline_html(report.metrics, report.n_items, report.grid, colours))  # the Overview's table
    ui.downloads(table, "compare-headlines")
    if not small_n.too_few(report.n_items):
        ui.vega(titled(bars(table, colours), report.n_items), "compare-headlines")
    scores.compare_section(report, colours)

    st.subheader("Are the confused items the same items?")
    ov = report.overlap
    if isinstance(ov, UnsetType):  # only with one model, which stopped above
        st.stop()
    ui.show_cards(
        ui.Card(m.label, m.format(getattr(ov, m.key)), definition=m.definition, key=m.key)
        for m in COMPARE_METRICS.values()
    )
    left, _ = st.columns([3, 2])
    few = small_n.too_few(ov.confused_by_any, "confused item")
    with left:
        if not few:
            ui.vega(charts.jaccard(ov), "confusion-jaccard")
        ui.downloads(
            pd.DataFrame(ov.jaccard, index=ov.models, columns=ov.models).reset_index(names="model"),
            "confusion-jaccard",
        )
    if not few:
        ui.vega(charts.intersections(ov), "confusion-intersections")
    ui.downloads(
        pd.DataFrame([{"models": " + ".join(r.models), "items": r.n} for r in ov.intersections]),
        "confusion-intersections",
    )

    st.subheader(f"Items the models disagree on most (top {TOP})")
    dis = pd.DataFrame(report.disagreement or [])
    acc_cols = [c for c in dis.columns if c.startswith("accuracy:")]
    st.caption(
        "Disagreement: mean over the grid of how evenly the models split (1 = half right, half wrong). A row's Open button opens it in the Inspector."
    )
    shown, config = readable.prepare(
        dis.drop(columns=["benchmark"]),
        {
            "disagreement": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f"),
            "question": st.column_config.TextColumn(width="large"),
        }
        | {
            c: st.column_config.ProgressColumn(c.split(":", 1)[1], min_value=0.0, max_value=1.0, format="percent")
            for c in acc_cols
        },
    )
    walk.item_table(shown, "disagree", config)
    ui.downloads(dis, "disagreement")
    ui.twin(view, ["compare"], "--top", str(TOP))
