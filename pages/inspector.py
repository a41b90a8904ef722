"""Inspector: one item, every model's answer per configuration, raw output and provenance, the exact frames seen.

Everything about the item is drawn in one fragment (``item_view``): previous/next, the item box and the
walk's own buttons rerun the item's part of the page alone, not the sidebar and the scope it resolves
(``benchmarks/inspector_next.py`` times a "next"). The URL follows the item from a fragment run
(``state.publish``); the entry point publishes it after a full run.
"""

import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import streamlit as st

from backend import views
from backend.contracts.base import unset
from backend.contracts.inspector import InspectedItem
from backend.present import charts, series
from backend.present.palette import FRAME_ADDED, FRAME_KEPT, INK, model_colours
from backend.present.text import count
from backend.scope.inspector import answer_cells, frame_plan, shown_runs, trajectory_points
from backend.scope.runs import notice
from backend.scope.texts import number, trajectory_rows
from backend.scope.view import View
from pages.common import data, runlog, sidebar, state, ui, walk
from pages.common.annotations import annotation_panel
from pages.common.boot import ensure_entrypoint
from pages.common.player import player
from pages.common.rerun_panel import rerun_panel
from pages.common.strips import strip
from pages.common.texts_panel import texts_panel
from store import configs
from store.answers import letter_of
from store.errors import UserError
from store.rows import Record

THUMB_CACHE_ENV = "TRAJAUDIT_THUMB_CACHE"
# The raw outputs table's columns: the item's responses are records (``item_detail``), a table only where shown.
RESPONSE_COLUMNS = ["model", "config", "run", "origin", "answer", "correct", "confidence", "score", "raw_output",
                    "flags", "source_tag", "protocol_note", "run_source", "run_format", "provenance"]  # fmt: skip
STRIP_FRAMES = 32  # the default strips: configurations of at most this many frames (and every re-run)
FULL_RUN = "_inspector_full_run"  # set by a full run of the page, read (and cleared) by its fragment
STATUS_COLOURS = {series.FIRST: INK, series.KEPT: FRAME_KEPT, series.ADDED: FRAME_ADDED, series.DROPPED: INK}


def thumb_cache() -> str:
    return os.environ.get(THUMB_CACHE_ENV) or str(Path("~/.cache/trajaudit/thumbnails").expanduser())


def pick_item(view: View) -> str:
    """The item shown, and previous/next along the walk: the URL's selection (a flow, a node, picked items) or the
    filtered list. The buttons set the item in their callbacks, so a click costs one fragment run."""
    sel, focus = walk.current(), view.scope.focus
    try:
        ids = walk.ids(data.restate(view, beyond_noise=bool(state.get("noise"))), focus, sel)
    except UserError as exc:  # a walk that no longer fits the view (another grid or model)
        st.warning(
            f"The walk {ui.code(sel.describe() if sel else '')} does not fit this view ({ui.escape_md(exc)}); walking the filtered items."
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
        inside = target is not None and 0 <= target < len(ids)
        col.button(
            label,
            disabled=not inside,
            width="stretch",
            on_click=state.put,
            args=("item", ids[target] if inside and target is not None else item),
        )
    where = f"in the current filters{walk.describe_order()}" if sel is None else f"· {ui.escape_md(sel.describe())}"
    text, stop = st.columns([6, 2], vertical_alignment="center")
    if pos is None:
        text.caption(
            f"This item is not among the {count(len(ids), 'item')} {where}; it is shown from the store anyway."
        )
    else:
        text.markdown(f"**Item {pos + 1:,} of {len(ids):,}** {where}")
    if sel is not None:
        stop.button(
            "Walk the filtered items",
            icon=":material/close:",
            width="stretch",
            help="Stop walking this selection; previous/next then step through the filtered items.",
            on_click=state.put,
            args=("walk", None),
        )
    return item


def item_header(item: InspectedItem) -> None:
    """Question, options and metadata in one Markdown element (one for the browser to draw on every previous/next,
    not one per option and line): ingested text, so escaped (an option's Markdown image must not load)."""
    target = unset(item.target)
    lines = [f"#### {ui.escape_md(unset(item.question) or '(no question text)')}", ""]
    for option in item.options:
        text = ui.escape_md(option)
        lines.append(f"- **{text} ✓**" if letter_of(option) == target else f"- {text}")
    video = unset(item.video)
    facts = [unset(item.task_type), unset(item.duration), unset(item.domain), f"video {video}" if video else None]
    shown = "not recorded" if target is None else f"**{ui.escape_md(target)}**"  # a store may hold correctness only
    lines += ["", small(" · ".join([f"target {shown}"] + [ui.escape_md(f) for f in facts if f]))]
    st.markdown("\n".join(lines))


def small(markdown: str) -> str:
    """``markdown`` (escaped already) as a caption reads, small and grey, inside a larger Markdown element."""
    return f":small[:gray[{markdown}]]"


def run_notice(choices: tuple) -> None:
    """Which run each of the item's several-run cells shows, and how to pick another (issue 35)."""
    said = notice(choices, ui.PICK_RUN)
    if said:
        st.info(
            f"On this item, {ui.escape_md(said)}",
            icon=":material/layers:",
        )


def responses_table(responses: list[Record]) -> pd.DataFrame:
    """The item's responses as a table to show or download, built at the page's boundary: integer columns stay
    integers where a value is missing (pandas' nullable ints: ``1``, not ``1.0``)."""
    return pa.Table.from_pylist(responses).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)


def timeline(plan: list[Record], info) -> dict:
    """Every strip's frames on one axis by frame index (drawn where the clip cannot play): added frames stand out."""
    fps = None if info is None else info.fps
    marks, rows = series.frame_marks(plan, fps)
    title = "time in the video (s)" if fps else "frame index (video unavailable: no timestamps)"
    shown = {
        status: STATUS_COLOURS[status] for status in series.FRAME_STATUSES if any(m["status"] == status for m in marks)
    }
    return charts.frame_timeline(marks, rows, title, info.duration_s if fps else None, shown)


def show_new_reruns(item_id: str, rerun: set[str]) -> None:
    """Add a re-run's configuration to the chosen strips when it appears while the item is open: the strips'
    choice is kept once drawn, so a re-run answered after that would otherwise need the page reopened before
    its frames show as a strip row. A configuration the user then removes stays removed."""
    seen_key = f"_strip_reruns_{item_id}"
    seen = st.session_state.get(seen_key)
    st.session_state[seen_key] = set(rerun)
    chosen = state.get("strips")
    if seen is None or chosen is None:  # the item's first draw: its default (or the URL's choice) applies
        return
    state.put("strips", [*chosen, *configs.order(sorted(rerun - seen - set(chosen)))])


def frame_strips(view: View, item: InspectedItem, responses: list[Record]) -> None:
    """The clip with the frames of the grid's configurations and the re-runs marked on it (or, without a playable
    video, those frames on one axis), then thumbnail strips of the configurations chosen: logged rows first,
    each live re-run's frames under its configuration. The default strips stop at ``STRIP_FRAMES``: the dense
    ones are on the clip's marks, and their thumbnails were half of a "next" (``benchmarks/inspector_next.py``)."""
    scope = view.scope
    st.subheader("Frames seen")
    visual = configs.visual(configs.order([r["config"] for r in responses]))
    if not visual:
        st.info("This item has only text-only responses: no frames to show.")
        return
    rerun = {r["config"] for r in responses if r["live_rerun"]}
    marked = [c for c in visual if c in scope.grid or c in rerun] or visual[:4]
    default = [c for c in marked if c in rerun or configs.parse(c).frames <= STRIP_FRAMES]
    show_new_reruns(item.item_id, rerun)
    chosen = state.bind_many(st, "strips", "Strips of thumbnails", visual, default)
    path, info, problem = data.video(str(sidebar.video_root(view)), view, item)
    if problem:
        st.warning(
            f"Video unavailable: {ui.escape_md(problem)}. The strips show the frame indices only.",
            icon=":material/movie:",
        )
    length = data.catalog_length(view.root, view.version, scope.benchmark or "", item.item_id)
    every = frame_plan(responses, configs.order(list(dict.fromkeys(marked + chosen))), info, length)
    if any(row["indices"] is not None for row in every):
        played = False
        if path is not None and info is not None and info.fps:
            marks, rows = series.frame_marks(every, info.fps)
            played = player(path, info.duration_s, marks, rows, STATUS_COLOURS)
        if not played:
            ui.vega(timeline(every, info), f"frames-{item.item_id}")
        ui.downloads(lambda: pd.DataFrame(every), f"frame-plan-{item.item_id}")  # lists stay lists in the CSV
    plan = frame_plan(responses, chosen, info, length)
    for row in plan:
        source = {
            "logged": "logged frames",
            "reconstructed": f"reconstructed by the {row['sampler']} sampler",
            "unknown": "frames unknown",
        }[row["source"]]
        if row["rerun"] is not None:
            source = f"live re-run {row['rerun']}"
        label = series.strip_label(row["config"], row["models"], row["rerun"], named=False)
        mine = row["models"] and (len(row["models"]) < len(scope.models) or row["rerun"] is not None)
        owners = f" ({ui.escape_md(', '.join(row['models']))})" if mine else ""
        change = (
            ""
            if row["added"] is None
            else f" · {len(row['added'])} new · {len(row['dropped'])} dropped vs the logged row above"
        )
        rate = configs.parse(row["config"]).fps is not None  # a frame rate fixes no count: "?" until logged
        n = len(row["indices"]) if row["indices"] is not None else "?" if rate else configs.parse(row["config"]).frames
        title = f"**{ui.escape_md(label)}**{owners} · {n} frames · {ui.escape_md(source)}{change}"
        if row["indices"] is None:  # the title and why no frames, one element
            st.markdown(f"{title}  \n{small(ui.escape_md(row['note']))}")
            continue
        st.markdown(title)
        if path is None:
            st.text(" ".join(str(i) for i in row["indices"]))  # not st.code: its highlighter is a 1.5 MB script
            continue
        strip(path, row["indices"], row["timestamps"], set(row["added"] or []), thumb_cache())


def raw_outputs(responses: list[Record], item_id: str) -> None:
    """Every stored response with its raw output and provenance, drawn once opened (a folded table grid still
    costs the browser its drawing on every item); a missing value reads as a dash. The responses become a table
    here, when the section is open (``responses_table``)."""
    raw = st.expander(f"Raw outputs and provenance ({len(responses)} responses)", key="raw", on_change="rerun")
    if raw.open:
        shown = responses_table(responses)
        raw.dataframe(
            series.dashed(shown[RESPONSE_COLUMNS], {"confidence": 3, "score": 2}),
            hide_index=True,
            column_config=ui.plain_headers(
                RESPONSE_COLUMNS, {"raw_output": st.column_config.TextColumn("Raw output", width="large")}
            ),
        )
        with raw:
            ui.downloads(shown.drop(columns=["frame_indices"]), f"responses-{item_id}")


def item_body(view: View, item_id: str) -> None:
    """The item: question, answers and trajectories, texts, raw outputs, frames, re-run and annotations."""
    scope = view.scope
    detail = data.item_detail(view.root, view.version, scope.benchmark or "", item_id)
    item = detail.item
    responses, choices = shown_runs(detail.responses, scope.run)
    item_header(item)
    run_notice(choices)
    colours = model_colours(data.store_info(view.root, view.version).models)
    if not responses:
        st.info("No stored response for this item.")
    else:
        rows, reruns = trajectory_rows(responses)
        present = {r["model"] for r in responses}
        models = [m for m in scope.models if m in present] + sorted(present - set(scope.models))
        labels = configs.order([r["config"] for r in responses])
        ui.vega(charts.answer_grid(answer_cells(rows, reruns, models, labels)), f"answers-{item_id}")
        if any(number(r["confidence"]) is not None or number(r["score"]) is not None for r in responses):
            points = trajectory_points(rows, reruns, models, labels, fill=scope.include_reruns)
            ui.vega(charts.confidence_chart(points, colours), f"confidence-{item_id}")
        else:
            st.caption("No confidence or score stored for this item (its sources record answers only).")
        texts = data.item_texts(view.root, view.version, scope.benchmark or "", item_id)
        if texts is not None:
            texts_panel(texts, list(scope.models), colours)
        notes = list(dict.fromkeys(r["protocol_note"] for r in responses if r["protocol_note"] is not None))
        if notes:
            st.warning("Protocol notes: " + ui.escape_md("; ".join(notes)), icon=":material/edit_note:")
        raw_outputs(responses, item_id)
        frame_strips(view, item, responses)
    rerun_panel(view, item, thumb_cache())
    annotation_panel(view.root, scope.benchmark or "", item_id, list(scope.models))
    ui.show_twin(views.inspect_twin(view, item_id))


@st.fragment
def item_view(view: View) -> None:
    """The item part of the page, a fragment: a click on previous/next reruns this alone."""
    full = st.session_state.pop(FULL_RUN, False)
    timer = None if full else runlog.start("inspector-item")  # a full run is timed by the entry point
    try:
        with ui.guard():
            item_body(view, pick_item(view))
    finally:
        if timer is not None:  # a fragment run: the entry point, which publishes the URL after a full run, did not run
            state.publish()
            timer.stop()


ensure_entrypoint()
view = st.session_state["view"]
st.title("Inspector")
with ui.guard():
    ui.need_items(view)
st.session_state[FULL_RUN] = True
item_view(view)
