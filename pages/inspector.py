"""Inspector: one item, every model's answer per configuration, raw output and provenance, the exact frames seen."""

import os
from pathlib import Path

import pandas as pd
import streamlit as st

from backend import views
from backend.present import series
from backend.present.text import count
from backend.report.palette import FRAME_ADDED, FRAME_KEPT, INK, model_colours
from backend.scope.inspector import frame_plan
from backend.scope.ladders import ladders
from backend.scope.texts import trajectory_rows
from backend.scope.view import View
from pages.common import charts, data, sidebar, state, ui, walk
from pages.common.annotations import annotation_panel
from pages.common.boot import ensure_entrypoint
from pages.common.rerun_panel import rerun_panel
from pages.common.texts_panel import texts_panel
from store import configs
from store.answers import letter_of
from store.errors import UserError

THUMB_CACHE_ENV = "TRAJAUDIT_THUMB_CACHE"
STRIP_ROW = 16  # frames shown in one sideways row; longer strips wrap onto rows
RESPONSE_COLUMNS = ["model", "config", "run", "origin", "answer", "correct", "confidence", "score", "raw_output",
                    "flags", "source_tag", "protocol_note", "run_source", "run_format", "provenance"]  # fmt: skip
# What the answer grid and the confidence chart read: their row loops over every column were slow.
CHART_COLUMNS = ["model", "config", "answer", "correct", "confidence", "score", "rerun_note"]


def thumb_cache() -> str:
    return os.environ.get(THUMB_CACHE_ENV) or str(Path("~/.cache/trajaudit/thumbnails").expanduser())


def pick_item(view: View) -> str:
    """The item shown, and previous/next along the walk: the URL's selection (a flow, a node, picked items) or the filtered list."""
    sel, focus = walk.current(), view.scope.focus
    try:
        ids = walk.ids(data.restate(view, beyond_noise=bool(state.get("noise"))), focus, sel)
    except UserError as exc:  # a walk that no longer fits the view (another grid or model)
        st.warning(
            f"The walk {ui.code(sel.describe())} does not fit this view ({ui.escape_md(exc)}); walking the filtered items."
        )
        sel, ids = None, walk.ids(view, focus, None)
        state.put("walk", None)
    current = state.get("item") or (ids[0] if ids else "")
    state.put("item", current)
    left, mid, right = st.columns([6, 1, 1], vertical_alignment="bottom")
    item = state.bind(left.text_input, "item", "Item id", default=current)
    pos = ids.index(item) if item in ids else None
    for col, label, step in ((mid, "◀ previous", -1), (right, "next ▶", 1)):
        target = None if pos is None else pos + step
        if col.button(label, disabled=target is None or not 0 <= target < len(ids), width="stretch"):
            state.put("item", ids[target])
            st.rerun()
    where = "in the current filters" if sel is None else f"· {ui.escape_md(sel.describe())}"
    text, stop = st.columns([6, 2], vertical_alignment="center")
    if pos is None:
        text.caption(
            f"This item is not among the {count(len(ids), 'item')} {where}; it is shown from the store anyway."
        )
    else:
        text.markdown(f"**Item {pos + 1:,} of {len(ids):,}** {where}")
    if sel is not None and stop.button(
        "Walk the filtered items",
        icon=":material/close:",
        width="stretch",
        help="Stop walking this selection; previous/next then step through the filtered items.",
    ):
        state.put("walk", None)
        st.rerun()
    return item


def item_header(item: dict) -> None:
    """Question, options and metadata: ingested text, so escaped (an option's Markdown image must not load)."""
    st.markdown(f"#### {ui.escape_md(item.get('question') or '(no question text)')}")
    target = item.get("target")
    for option in item["options"]:
        text = ui.escape_md(option)
        st.markdown(f"- **{text} ✓**" if letter_of(option) == target else f"- {text}")
    facts = [
        item.get("task_type"),
        item.get("duration"),
        item.get("domain"),
        f"video {item['video']}" if item.get("video") else None,
    ]
    shown = "not recorded" if target is None else f"**{ui.escape_md(target)}**"  # a store may hold correctness only
    st.caption(" · ".join([f"target {shown}"] + [ui.escape_md(f) for f in facts if f]))


def rerun_name(model: str, note: str | None) -> str:
    """How a model's live re-runs are labelled on every chart (with the registry note, e.g. random weights)."""
    return f"{model} · live re-run" + (f" ({note})" if isinstance(note, str) and note else "")


def rerun_rows(reruns: pd.DataFrame) -> pd.DataFrame:
    """Re-run rows relabelled as their own row / series, so they never merge into a logged trajectory."""
    return reruns.assign(model=[rerun_name(m, n) for m, n in zip(reruns["model"], reruns["rerun_note"], strict=True)])


def value_column(rows: pd.DataFrame) -> tuple[str, str]:
    """Confidence for MCQA; the continuous score for open-ended items (which carry no confidence)."""
    if rows["confidence"].notna().any() or rows["score"].isna().all():
        return "confidence", "confidence (probability of the answer)"
    return "score", "score (Token-F1)"


def _state(correct) -> str | None:
    return None if correct is None or correct != correct else ("correct" if correct == 1 else "wrong")


def answer_grid(rows: pd.DataFrame, reruns: pd.DataFrame, models: list[str], labels: list[str]) -> dict:
    """Logged answers, one row per model; each model's live re-runs on a row of their own below."""
    extra = rerun_rows(reruns)
    models = [m for m in models if m in set(rows["model"])] + list(dict.fromkeys(extra["model"]))
    rows = pd.concat([rows, extra], ignore_index=True)
    value, _ = value_column(rows)
    cells = [
        {
            "model": r["model"],
            "config": r["config"],
            "state": _state(r["correct"]),
            "value": charts.number(r[value]),
            "text": ("–" if r["answer"] is None or r["answer"] != r["answer"] else str(r["answer"]))
            if value == "confidence"
            else ("–" if charts.number(r["score"]) is None else f"{r['score']:.2f}"),
        }
        for r in rows.to_dict("records")  # plain dicts: itertuples' pandas overhead was most of this
        if _state(r["correct"]) is not None and r["model"] in models and r["config"] in labels
    ]
    return charts.answer_grid(cells, models, labels, value)


def confidence_chart(
    rows: pd.DataFrame, reruns: pd.DataFrame, models: list[str], labels: list[str], colours: dict[str, str]
) -> dict:
    """Each model's logged values joined only along a budget ladder (``backend.scope.ladders``); other
    protocols (another resolution or policy at one budget) as separate diamonds; live re-runs as stars."""
    value, axis = value_column(pd.concat([rows, reruns]))
    live = rerun_rows(reruns)
    names = dict(zip(reruns["model"], live["model"], strict=True))  # model -> the name of its re-run series
    lines, alone = ladders(labels)
    where = {c: k for k, ladder in enumerate(lines) for c in ladder}
    points, series = [], {}

    def add(r: dict, name: str, kind: str, line: str | None, colour: str) -> None:
        if _state(r["correct"]) is None or charts.number(r[value]) is None:
            return
        series.setdefault(name, colour)
        answer = "–" if r["answer"] is None or r["answer"] != r["answer"] else str(r["answer"])
        points.append(
            {
                "series": name,
                "config": r["config"],
                "value": charts.number(r[value]),
                "state": _state(r["correct"]),
                "answer": answer,
                "kind": kind,
                "line": line,
            }
        )

    # Plain records, split once: pandas' boolean filters and itertuples per model cost 80-150 ms an item
    # (object overhead on a few dozen rows), the same loops over dicts well under a millisecond.
    logged: dict[str, list[dict]] = {}
    for r in rows.to_dict("records"):
        logged.setdefault(r["model"], []).append(r)
    for model in [m for m in models if m in logged]:
        for r in logged[model]:
            if r["config"] in where:
                add(r, model, "ladder", f"{model}\x1f{where[r['config']]}", colours[model])
        for r in logged[model]:
            if r["config"] in alone:
                add(r, f"{model} · other protocols", "other", None, colours[model])
    live_records = live.to_dict("records")
    for model in [m for m in models if m in names]:
        for r in live_records:
            if r["model"] == names[model]:
                add(r, names[model], "rerun", None, colours[model])
    order = [c for ladder in lines for c in ladder] + alone  # a ladder's steps side by side, other protocols after them
    return charts.confidence_chart(points, order, series, value, axis)


def timeline(plan: pd.DataFrame, info) -> dict:
    """Every strip's frames on one time axis (frame index without the video): added frames stand out."""
    fps = None if info is None else info.fps
    marks, rows = series.frame_marks(plan, fps)
    title = "time in the video (s)" if fps else "frame index (video unavailable: no timestamps)"
    colours = {series.FIRST: INK, series.KEPT: FRAME_KEPT, series.ADDED: FRAME_ADDED, series.DROPPED: INK}
    shown = {status: colours[status] for status in series.FRAME_STATUSES if any(m["status"] == status for m in marks)}
    return charts.frame_timeline(marks, rows, title, info.duration_s if fps else None, shown)


def frame_strips(view: View, item: dict, responses: pd.DataFrame) -> None:
    scope = view.scope
    st.subheader("Frame strips")
    visual = configs.visual(configs.order(responses["config"].unique().tolist()))
    if not visual:
        st.info("This item has only text-only responses: no frames to show.")
        return
    default = [c for c in visual if c in scope.grid] or visual[:4]
    chosen = state.bind(st.multiselect, "strips", "Configurations", options=visual, default=default)
    if not chosen:
        return
    path, info, problem = data.video(str(sidebar.video_root(view)), view, item)
    if problem:
        st.warning(
            f"Video unavailable: {ui.escape_md(problem)}. The strips show the frame indices only.",
            icon=":material/movie:",
        )
    length = data.catalog_length(view.root, view.version, scope.benchmark, item["item_id"])
    plan = frame_plan(responses, chosen, info, length)
    if plan["indices"].notna().any():
        ui.vega(timeline(plan, info), f"frames-{item['item_id']}")
        ui.downloads(plan, f"frame-plan-{item['item_id']}")
    for _, row in plan.iterrows():
        source = {
            "logged": "logged frames",
            "reconstructed": f"reconstructed by the {row['sampler']} sampler",
            "unknown": "frames unknown",
        }[row["source"]]
        owners = (
            f" ({ui.escape_md(', '.join(row['models']))})"
            if row["models"] and len(row["models"]) < len(scope.models)
            else ""
        )
        change = (
            ""
            if row["added"] is None
            else f" · +{len(row['added'])} added · −{len(row['dropped'])} dropped vs the row above"
        )
        rate = configs.parse(row["config"]).fps is not None  # a frame rate fixes no count: "?" until logged
        n = len(row["indices"]) if row["indices"] is not None else "?" if rate else configs.parse(row["config"]).frames
        st.markdown(f"**{ui.escape_md(row['config'])}**{owners} · {n} frames · {ui.escape_md(source)}{change}")
        if row["indices"] is None:
            st.caption(ui.escape_md(row["note"]))
            continue
        if path is None:
            st.text(" ".join(str(i) for i in row["indices"]))  # not st.code: its highlighter is a 1.5 MB script
            continue
        files = data.thumbs(str(path), path.stat().st_mtime_ns, tuple(row["indices"]), thumb_cache())
        added = set(row["added"] or [])
        captions = [
            series.frame_caption(i, t, i in added) for i, t in zip(row["indices"], row["timestamps"], strict=True)
        ]
        if len(files) <= STRIP_ROW:
            with st.container(key=f"strip-{row['config']}"):  # one scrolling row: assets/style.css
                st.image(files, caption=captions, width=96)
        else:  # a long strip wraps onto rows of smaller frames, so all of it is readable without scrolling
            with st.container(key=f"stripgrid-{row['config']}"):
                st.image(
                    files,
                    caption=[
                        series.frame_caption(i, t, i in added, number=False)
                        for i, t in zip(row["indices"], row["timestamps"], strict=True)
                    ],
                    width=72,
                )


ensure_entrypoint()
view = st.session_state["view"]
scope = view.scope
st.title("Inspector")
with ui.guard():
    ui.need_items(view)
    item_id = pick_item(view)
    detail = data.item_detail(view.root, view.version, scope.benchmark, item_id)
    item, responses = detail["item"], detail["responses"]
    item_header(item)
    colours = model_colours(data.store_info(view.root, view.version)["models"])
    if responses.empty:
        st.info("No stored response for this item.")
    else:
        rows, reruns = (f[CHART_COLUMNS] for f in trajectory_rows(responses))  # iterated row by row: slim
        present = set(responses["model"])
        models = [m for m in scope.models if m in present] + sorted(present - set(scope.models))
        labels = configs.order(responses["config"].unique().tolist())
        ui.vega(answer_grid(rows, reruns, models, labels), f"answers-{item_id}")
        if responses[["confidence", "score"]].notna().to_numpy().any():
            ui.vega(confidence_chart(rows, reruns, models, labels, colours), f"confidence-{item_id}")
        else:
            st.caption("No confidence or score stored for this item (its sources record answers only).")
        texts = data.item_texts(view.root, view.version, scope.benchmark, item_id)
        if texts is not None:
            texts_panel(texts, list(scope.models), colours)
        notes = responses["protocol_note"].dropna().unique().tolist()
        if notes:
            st.warning("Protocol notes: " + ui.escape_md("; ".join(notes)), icon=":material/edit_note:")
        raw = st.expander(f"Raw outputs and provenance ({len(responses)} responses)", key="raw", on_change="rerun")
        if raw.open:  # drawn when opened: a folded table grid still costs the browser its drawing on every item
            raw.dataframe(
                responses[RESPONSE_COLUMNS],
                hide_index=True,
                column_config={
                    "confidence": st.column_config.NumberColumn(format="%.3f"),
                    "raw_output": st.column_config.TextColumn("raw output", width="large"),
                },
            )
            with raw:
                ui.downloads(responses.drop(columns=["frame_indices"]), f"responses-{item_id}")
        frame_strips(view, item, responses)
    rerun_panel(view, item, thumb_cache())
    annotation_panel(view.root, scope.benchmark, item_id, list(scope.models))
    ui.show_twin(views.inspect_twin(view, item_id))
