"""Inspector: one item, every model's answer per configuration, raw output and provenance, the exact frames seen."""

import os
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from backend.analysis.ladders import ladders
from backend.report.palette import CORRECT, FRAME_ADDED, FRAME_KEPT, INK, WRONG, model_colours
from backend.scope.inspector import frame_plan, trajectory_rows
from pages.common import data, sidebar, state, ui, walk
from pages.common.annotations import annotation_panel
from pages.common.boot import ensure_entrypoint
from pages.common.rerun_panel import rerun_panel
from store import configs
from store.answers import letter_of
from store.errors import UserError

THUMB_CACHE_ENV = "TRAJAUDIT_THUMB_CACHE"
STRIP_ROW = 16  # frames shown in one sideways row; longer strips wrap onto rows
RERUN_SYMBOL = "star"  # live re-runs on the confidence chart (logged points are circles)
RESPONSE_COLUMNS = ["model", "config", "run", "origin", "answer", "correct", "confidence", "score", "raw_output",
                    "flags", "source_tag", "protocol_note", "run_source", "run_format", "provenance"]  # fmt: skip


def thumb_cache() -> str:
    return os.environ.get(THUMB_CACHE_ENV) or str(Path("~/.cache/trajaudit/thumbnails").expanduser())


def pick_item(scope: data.Scope) -> str:
    """The item shown, and previous/next along the walk: the URL's selection (a flow, a node, picked items) or the filtered list."""
    sel = walk.current()
    try:
        ids = walk.ids(scope.with_noise(bool(state.get("noise"))), scope.focus, sel)
    except UserError as exc:  # a walk that no longer fits the view (another grid or model)
        st.warning(
            f"The walk {ui.code(sel.describe())} does not fit this view ({ui.escape_md(exc)}); walking the filtered items."
        )
        sel, ids = None, walk.ids(scope, scope.focus, None)
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
        text.caption(f"This item is not among the {len(ids):,} items {where}; it is shown from the store anyway.")
    else:
        text.markdown(f"**Item {pos + 1:,} of {len(ids):,}** {where}")
    if sel is not None and stop.button("Walk the filtered items", icon=":material/close:", width="stretch",
                                       help="Stop walking this selection; previous/next then step through the filtered items."):  # fmt: skip
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
    st.caption(" · ".join([f"target **{ui.escape_md(target)}**"] + [ui.escape_md(f) for f in facts if f]))


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


def answer_grid(rows: pd.DataFrame, reruns: pd.DataFrame, models: list[str], labels: list[str]) -> go.Figure:
    """Logged answers, one row per model; each model's live re-runs on a row of their own below."""
    extra = rerun_rows(reruns)
    models = [m for m in models if m in set(rows["model"])] + list(dict.fromkeys(extra["model"]))
    rows = pd.concat([rows, extra], ignore_index=True)

    def pivot(col: str) -> pd.DataFrame:
        return rows.pivot(index="model", columns="config", values=col).reindex(index=models, columns=labels)

    value, _ = value_column(rows)
    z = pivot("correct").to_numpy(dtype=float)
    answers, values = pivot("answer"), pivot(value).to_numpy(dtype=float)
    shown = answers.fillna("–").to_numpy().astype(str) if value == "confidence" else np.char.mod("%.2f", values)
    text = np.where(np.isnan(z), "", shown)
    conf = pivot(value)
    fig = go.Figure(
        go.Heatmap(
            z=z, x=labels, y=models, zmin=0, zmax=1, showscale=False, xgap=3, ygap=3,
            colorscale=[[0, WRONG], [0.5, WRONG], [0.5, CORRECT], [1, CORRECT]],
            text=text, texttemplate="%{text}", textfont={"color": "white", "size": 14},
            customdata=conf.to_numpy(dtype=float),
            hovertemplate=f"%{{y}} at %{{x}}<br>%{{text}} · {value} %{{customdata:.2f}}<extra></extra>",
        )
    )  # fmt: skip
    fig.update_xaxes(title_text="configuration", type="category")
    fig.update_yaxes(autorange="reversed", type="category", title_text="model")
    return ui.style(
        fig,
        "Answer per model and configuration (green correct, red wrong, – no answer; open-ended: score)",
        height=140 + 44 * len(models),
    )


def confidence_chart(
    rows: pd.DataFrame, reruns: pd.DataFrame, models: list[str], labels: list[str], colours: dict[str, str]
) -> go.Figure:
    """Each model's logged values joined only along a budget ladder (``backend.analysis.ladders``); other
    protocols (another resolution or policy at one budget) as separate diamonds; live re-runs as stars."""
    value, axis = value_column(pd.concat([rows, reruns]))
    fig = go.Figure()
    live = rerun_rows(reruns)
    names = dict(zip(reruns["model"], live["model"], strict=True))  # model -> the name of its re-run series
    lines, alone = ladders(labels)
    for model in [m for m in models if m in set(rows["model"])]:
        r = rows[rows["model"] == model].set_index("config")
        steps = [(ladder, "lines+markers", "circle", 11) for ladder in lines] + [(alone, "markers", "diamond", 12)]
        for k, (cfgs, mode, symbol, size) in enumerate(steps):
            pts = r.reindex([c for c in cfgs if c in r.index])
            if pts.empty:
                continue
            other = mode == "markers"
            fig.add_trace(_points(pts, f"{model} · other protocols" if other else model, mode, symbol, size, colours[model],
                                  value, legendgroup=f"{model}-{other}", showlegend=other or k == 0))  # fmt: skip
    for model in [m for m in models if m in names]:
        pts = live[live["model"] == names[model]].set_index("config").reindex(labels).dropna(subset=["correct"])
        fig.add_trace(_points(pts, names[model], "markers", RERUN_SYMBOL, 18, colours[model], value))
    order = [c for ladder in lines for c in ladder] + alone  # a ladder's steps side by side, other protocols after them
    fig.update_xaxes(title_text="configuration", type="category", categoryorder="array", categoryarray=order)
    fig.update_yaxes(title_text=axis, range=[0, 1.05])
    title = f"{value.capitalize()} per configuration (lines join budget steps only; ◆ other protocols; ★ live re-run)"
    return ui.style(fig, title, height=360)


def _points(
    pts: pd.DataFrame, name: str, mode: str, symbol: str, size: int, colour: str, value: str, **kwargs
) -> go.Scatter:
    """One series: marker colour says correct (green) or wrong (red); the outline is the model's colour."""
    line = {"color": colour, "width": 2}
    return go.Scatter(
        x=pts.index.tolist(), y=pts[value], mode=mode, name=name, line=line,
        marker={"size": size, "symbol": symbol, "color": [CORRECT if c == 1 else WRONG for c in pts["correct"]], "line": line},
        customdata=pts["answer"].fillna("–"), hovertemplate=f"{name} %{{x}}: answer %{{customdata}}, {value} %{{y:.2f}}<extra></extra>",
        **kwargs,
    )  # fmt: skip


def timeline(plan: pd.DataFrame, info) -> go.Figure:
    """Every strip's frames on one time axis (frame index without the video): added frames stand out."""
    fig = go.Figure()
    fps = None if info is None else info.fps
    unit = " s" if fps else ""
    duplicated = plan["config"].duplicated(keep=False)
    for k, row in plan.iterrows():
        if row["indices"] is None:
            continue
        label = f"{row['config']} ({', '.join(row['models'])})" if duplicated[k] else row["config"]
        idx = np.array(row["indices"])
        added = np.isin(idx, row["added"] or [])
        dropped = np.array(row["dropped"] or [], dtype=int)
        marks = (
            (idx[~added], FRAME_KEPT, "line-ns-open", "kept"),
            (idx[added], FRAME_ADDED, "line-ns", "added"),
            (dropped, INK, "x-thin", "dropped"),
        )
        for frames, colour, symbol, name in marks:
            fig.add_trace(go.Scatter(
                x=frames / fps if fps else frames, y=[label] * len(frames), mode="markers", showlegend=False,
                marker={"color": colour, "size": 10, "symbol": symbol, "line": {"width": 2.5, "color": colour}}, customdata=frames,
                hovertemplate=f"{label}: frame #%{{customdata}} at %{{x:.2f}}{unit} ({name})<extra></extra>",
            ))  # fmt: skip
    for name, colour, symbol in (
        ("kept from the row above", FRAME_KEPT, "line-ns-open"),
        ("added", FRAME_ADDED, "line-ns"),
        ("dropped", INK, "x-thin"),
    ):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker={"color": colour, "size": 10, "symbol": symbol, "line": {"width": 2.5, "color": colour}}))  # fmt: skip
    fig.update_xaxes(title_text="time in the video (s)" if fps else "frame index (video unavailable: no timestamps)",
                     range=[0, info.duration_s] if fps else None)  # fmt: skip
    fig.update_yaxes(title_text="configuration", type="category", autorange="reversed")
    return ui.style(fig, "Frames sampled per configuration, on one timeline", height=140 + 34 * len(plan))


def frame_strips(scope: data.Scope, item: dict, responses: pd.DataFrame) -> None:
    st.subheader("Frame strips")
    visual = configs.visual(configs.order(responses["config"].unique().tolist()))
    if not visual:
        st.info("This item has only text-only responses: no frames to show.")
        return
    default = [c for c in visual if c in scope.grid] or visual[:4]
    chosen = state.bind(st.multiselect, "strips", "Configurations", options=visual, default=default)
    if not chosen:
        return
    path, info, problem = data.video(str(sidebar.video_root(scope)), item.get("video"))
    if problem:
        st.warning(f"Video unavailable: {ui.escape_md(problem)}. The strips show the frame indices only.", icon="🎞️")
    plan = frame_plan(responses, chosen, info)
    if plan["indices"].notna().any():
        ui.chart(timeline(plan, info), f"frames-{item['item_id']}")
        ui.downloads(plan, f"frame-plan-{item['item_id']}")
    for _, row in plan.iterrows():
        source = {"stored": "stored indices", "policy": "recomputed by the policy", "unknown": "indices unknown"}[
            row["source"]
        ]
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
        n = configs.parse(row["config"]).frames if row["indices"] is None else len(row["indices"])
        st.markdown(f"**{ui.escape_md(row['config'])}**{owners} · {n} frames · {source}{change}")
        if row["indices"] is None:
            st.caption(ui.escape_md(row["note"]))
            continue
        if path is None:
            st.text(" ".join(str(i) for i in row["indices"]))  # not st.code: its highlighter is a 1.5 MB script
            continue
        files = data.thumbs(str(path), path.stat().st_mtime_ns, tuple(row["indices"]), thumb_cache())
        added = set(row["added"] or [])
        captions = [
            f"{'+' if i in added else ''}#{i} · {t:.2f}s"
            for i, t in zip(row["indices"], row["timestamps"], strict=True)
        ]
        if len(files) <= STRIP_ROW:
            with st.container(key=f"strip-{row['config']}"):  # one scrolling row: assets/style.css
                st.image(files, caption=captions, width=96)
        else:  # a long strip wraps onto rows of smaller frames, so all of it is readable without scrolling
            with st.container(key=f"stripgrid-{row['config']}"):
                st.image(files, caption=[f"{'+' if i in added else ''}{t:.2f}s" for i, t in zip(row["indices"], row["timestamps"], strict=True)],
                         width=72)  # fmt: skip


ensure_entrypoint()
scope = st.session_state["scope"]
st.title("Inspector")
with ui.guard():
    ui.need_items(scope)
    item_id = pick_item(scope)
    detail = data.item_detail(scope.root, scope.version, scope.benchmark, item_id)
    item, responses = detail["item"], detail["responses"]
    item_header(item)
    colours = model_colours(data.store_info(scope.root, scope.version)["models"])
    if responses.empty:
        st.info("No stored response for this item.")
    else:
        rows, reruns = trajectory_rows(responses)
        present = set(responses["model"])
        models = [m for m in scope.models if m in present] + sorted(present - set(scope.models))
        labels = configs.order(responses["config"].unique().tolist())
        ui.chart(answer_grid(rows, reruns, models, labels), f"answers-{item_id}")
        if responses[["confidence", "score"]].notna().to_numpy().any():
            ui.chart(confidence_chart(rows, reruns, models, labels, colours), f"confidence-{item_id}")
        else:
            st.caption("No confidence or score stored for this item (its sources record answers only).")
        notes = responses["protocol_note"].dropna().unique().tolist()
        if notes:
            st.warning("Protocol notes: " + ui.escape_md("; ".join(notes)), icon="📝")
        with st.expander(f"Raw outputs and provenance ({len(responses)} responses)"):
            st.dataframe(responses[RESPONSE_COLUMNS], hide_index=True,
                         column_config={"confidence": st.column_config.NumberColumn(format="%.3f"),
                                        "raw_output": st.column_config.TextColumn("raw output", width="large")})  # fmt: skip
            ui.downloads(responses.drop(columns=["frame_indices"]), f"responses-{item_id}")
        frame_strips(scope, item, responses)
    rerun_panel(scope, item, thumb_cache())
    annotation_panel(scope.root, scope.benchmark, item_id, list(scope.models))
    ui.show_twin(
        shlex.join(
            ["trajaudit", "inspect", "--store", scope.root, "--benchmark", scope.benchmark, "--item", item_id, "--json"]
        )
    )
