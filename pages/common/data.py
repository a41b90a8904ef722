"""Cached backend calls: every page asks here, so a filter change recomputes only what changed.

This module holds every ``st.cache_data`` / ``st.cache_resource`` of the dashboard (``docs/architecture.md``,
process-wide state); a page module that had its own keeps its name for it by importing it from here.

The sidebar's choices make a ``backend.scope.resolve.Resolved``; ``view`` opens its
``backend.scope.view.View`` (store, version, resolved scope, matrix) with ``open_view``, the
function the CLI opens its view with, and caches it (``cache_resource``: shared, never copied:
pages treat it as read-only). Every key holds the store's root and version (``Store.version()``
grows with every write, so new data invalidates everything read before). The numbers come from
``backend.views``, the same functions the CLI twins print, so a page and its ``--json`` twin
cannot disagree; reports derived from a view are small and go through ``cache_data``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from backend import views
from backend.analysis.flows import Heatmap
from backend.analysis.target import Target
from backend.contracts.audits import CrossmodelAudit, InterventionsAudit, IsocomputeAudit, NoiseAudit
from backend.contracts.base import unset
from backend.contracts.explain import ExplainReport
from backend.contracts.inspector import InspectedItem, ItemTexts
from backend.contracts.policies import CascadeSweepReport, CascadeThresholdReport, PredictorReport, PredictorRow
from backend.contracts.store import Annotation, StoreContents
from backend.contracts.views import BinaryView, CompareReport, FlowsReport, ItemsPage, OverviewReport, ScoreFlowsReport
from backend.export import csv_text
from backend.present import drawn
from backend.runtime import client
from backend.scope import annotations as scope_annotations
from backend.scope import arrow_numpy, inspector
from backend.scope.binary import binary_view
from backend.scope.filters import offered
from backend.scope.items import flat_table, trajectory_table
from backend.scope.items import item_order as item_order_of
from backend.scope.matrix import available
from backend.scope.resolve import Resolved
from backend.scope.selection import Selection, state_items
from backend.scope.view import View, open_view, view_key
from backend.videos.decode import thumbnails
from store.store import Store

BOOTSTRAP = 1000
THUMB_HEIGHT = 72
PREDICTOR_POLL_S = 0.2  # how often the Policies page redraws the predictor's progress bar


HASH: dict[str | type[Any], Callable[[Any], Any]] = {
    View: View.key,
    Resolved: Resolved.key,
}  # cheap keys (Resolved.key says why)


@st.cache_data(show_spinner=False, max_entries=16)
def store_info(root: str, version: int) -> StoreContents:
    return available(Store(root))


@st.cache_resource(show_spinner=False, max_entries=4)
def warm_snapshot(root: str, version: int) -> threading.Thread:
    """Build this version's DuckDB views (``Store.connect``) once, in the background, after a run has
    drawn its page: the first page that queries the store (the Inspector, an annotation) then does not
    wait for them, and the first page drawn does not share the CPU with them."""
    thread = threading.Thread(target=_open_snapshot, args=(root,), name="trajaudit-snapshot", daemon=True)
    thread.start()
    return thread


def _open_snapshot(root: str) -> None:
    with contextlib.suppress(Exception):  # a store being repaired: the page that needs it says so
        Store(root).connect().close()


def view(root: str, version: int, resolved: Resolved) -> View:
    """The cached ``View`` of ``resolved`` on the store at ``root`` (``version``): ``open_view``, as the CLI opens it."""
    return _view(view_key(root, version, resolved), root, version, resolved)


@st.cache_resource(show_spinner="Loading the response matrix…", max_entries=16)
def _view(key: str, root: str, version: int, _resolved: Resolved) -> View:
    """Keyed on ``key`` alone (``view_key``: cheap). A filter or tag change cuts the cached matrix of the
    unfiltered view (``Resolved.unfiltered``) in memory instead of rescanning every response, and the
    noise toggle, which changes no item, reuses the matrix of the view without it."""
    store, s = Store(root), _resolved.scope
    if s.beyond_noise:
        quiet = dataclasses.replace(_resolved, scope=dataclasses.replace(s, beyond_noise=False))
        return dataclasses.replace(view(root, version, quiet), resolved=_resolved)
    bare = _resolved.unfiltered()
    base = None if bare.scope == s else view(root, version, bare).matrix
    return open_view(store, _resolved, version=version, base=base)


def restate(v: View, **changes: Any) -> View:
    """The same view with some scope fields changed (the noise toggle, the explain panel's untagged view)."""
    resolved = dataclasses.replace(v.resolved, scope=dataclasses.replace(v.scope, **changes))
    return view(v.root, v.version, resolved)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH)
def facets(root: str, version: int, resolved: Resolved) -> dict:
    """Filter choices present among the matched items of the unfiltered view (durations ordered by their length),
    and whether some of their responses carry a score (the sidebar offers the score cut-off then)."""
    full = view(root, version, resolved.unfiltered()).matrix
    task_types, durations = offered(full.item_table)
    return {"task_types": task_types, "durations": durations, "scored": full.has_scores}


@st.cache_data(show_spinner="Computing metrics and bootstrap intervals…", max_entries=32, hash_funcs=HASH)
def overview(v: View) -> OverviewReport:
    """``trajaudit metrics --json`` for the view."""
    return views.overview(v, bootstrap=BOOTSTRAP)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH)
def flows_view(v: View, model: str, pair: tuple[str, str] | None, kind: str | None = None) -> FlowsReport:
    """``trajaudit flows --json`` for the view (every flow item when ``kind`` is given)."""
    return views.flows_view(v, model, pair, kind, limit=None)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH)
def heatmap(v: View, model: str, max_rows: int) -> Heatmap:
    """The Items page's trajectory heatmap (its class counts are ``trajaudit flows --json``'s ``trajectory_classes``)."""
    return views.heatmap(v, model, max_rows)


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=HASH)
def item_order(v: View, model: str, sort: str, descending: bool) -> np.ndarray:
    """The view's items' positions in the Items page's order (``backend.scope.items.item_order``): one shared,
    read-only array per view and sort, which the Items page cuts its pages from and the Inspector walks (a sort
    of 250k items by a computed key took 0.1-0.2 s, once per page turn before)."""
    order = item_order_of(v.matrix, model, sort, descending)
    order.setflags(write=False)
    return order


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=HASH)
def filtered_ids(v: View, model: str, sort: str, descending: bool) -> tuple[str, ...]:
    """The view's matched items' ids in the Items page's order (``item_order``), which the Inspector walks without
    a selection: one shared, immutable object per view and order (not a pickled copy per call), since listing
    250k ids cost 0.1 s of every previous/next."""
    order = arrow_numpy.array(item_order(v, model, sort, descending))
    return tuple(v.matrix.item_table.column("item_id").take(order).to_pylist())


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH)
def item_page(v: View, model: str, sort: str, descending: bool, page: int, size: int) -> ItemsPage:
    """``trajaudit items --sort S --page P --json`` for the view."""
    return views.items_page(v, model, sort, descending, page, size, item_order(v, model, sort, descending))


@st.cache_data(show_spinner=False, max_entries=32)
def chart_svg(spec: str) -> str:
    """A first-screen chart drawn on the server (``backend.present.drawn.svg``); ``spec`` is its JSON text, one
    string to hash, so a new session on the same view draws nothing anew."""
    return drawn.svg(json.loads(spec))


def chart_png(spec: str) -> bytes:
    """The same chart as PNG, built when its save button is clicked."""
    return drawn.png(json.loads(spec))


def single(v: View, grid: tuple[str, ...] = ()) -> Resolved:
    """The one-model commands' scope of the view (``views.single_scope``: Policies, Audits), resolved."""
    return views.single_scope(v.scope, grid).resolve(v.store, store_info(v.root, v.version))


@st.cache_resource(show_spinner="Loading the ladder…", max_entries=8, hash_funcs=HASH)
def ladder(root: str, version: int, resolved: Resolved, labels: tuple[str, ...]) -> views.Ladder:
    """The focus model's responses on the policy ladder (``views.load_ladder``, as ``trajaudit cascade`` loads them)."""
    return views.load_ladder(Store(root), resolved, list(labels))


@st.cache_data(show_spinner="Sweeping thresholds…", max_entries=64, hash_funcs=HASH)
def cascade_view(
    root: str, version: int, resolved: Resolved, labels: tuple[str, ...], threshold: float | None
) -> CascadeThresholdReport | CascadeSweepReport:
    """``trajaudit cascade --sweep --json`` (``threshold`` None) or ``--threshold T --json``."""
    return views.cascade_view(ladder(root, version, resolved, labels), resolved, threshold)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH)
def fixed_budgets(root: str, version: int, resolved: Resolved, labels: tuple[str, ...]) -> list[PredictorRow]:
    """Fixed budgets and the oracle (the first rows of ``trajaudit predictor --json``'s frontier)."""
    return views.fixed_budgets(ladder(root, version, resolved, labels))


@dataclasses.dataclass
class PredictorJob:
    """A budget predictor's cross-validation running in a thread of its own (``predictor_job``): its report when
    done, and how many folds are done meanwhile."""

    report: Future[PredictorReport] = dataclasses.field(default_factory=Future)
    done: int = 0

    def advance(self, done: int, _folds: int) -> None:
        """``cross_validate``'s progress: called in the job's thread, read by the page's."""
        self.done = done


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=HASH)
def predictor_job(
    root: str, version: int, resolved: Resolved, labels: tuple[str, ...], folds: int, seed: int
) -> PredictorJob:
    """``trajaudit predictor --json``, computed in the background (25 s at 250k items).

    Why not a cached call like the other views: the page polls the job and draws a bar per fold (a bar drawn from
    inside a cached call would be replayed on every cache hit), and each redraw is one of Streamlit's yield points,
    where a click's rerun can take over (a cached call holds the run until it returns); the rerun finds the same
    job, which it neither restarts nor stops. A job that failed is dropped by ``predictor_view``, so a retry runs
    it anew."""
    loaded = ladder(root, version, resolved, labels)
    job = PredictorJob()

    def run() -> None:
        try:
            job.report.set_result(views.predictor_view(loaded, resolved, folds, seed, job.advance))
        except BaseException as exc:  # handed to the page, which shows a UserError as a warning
            job.report.set_exception(exc)

    threading.Thread(target=run, name="trajaudit-predictor", daemon=True).start()
    return job


def predictor_view(
    root: str, version: int, resolved: Resolved, labels: tuple[str, ...], folds: int, seed: int
) -> PredictorReport:
    """``trajaudit predictor --json``: the background job's report, with a bar per fold while it runs."""
    job = predictor_job(root, version, resolved, labels, folds, seed)
    if not job.report.done():
        bar = st.progress(0.0)
        while not job.report.done():  # a click meanwhile stops this run here, not the job
            bar.progress(
                job.done / folds, text=f"Cross-validating the budget predictor: {job.done} of {folds} folds done…"
            )
            wait([job.report], timeout=PREDICTOR_POLL_S)
        bar.empty()
    if job.report.exception() is not None:
        predictor_job.clear(root, version, resolved, labels, folds, seed)
    return job.report.result()


@st.cache_data(show_spinner="Counting repeats…", max_entries=16, hash_funcs=HASH)
def noise_audit(v: View) -> tuple[NoiseAudit, pd.DataFrame]:
    """``trajaudit audit noise --json`` of a one-model view, and its items with repeats (noisiest first)."""
    return views.noise_audit(v), views.noise_items(v)


@st.cache_data(show_spinner="Preparing the export…", max_entries=8, hash_funcs=HASH)
def items_export(v: View, model: str) -> pd.DataFrame:
    """Every filtered item of ``model``, flat: the same table as ``trajaudit items --format csv``."""
    return flat_table(trajectory_table(v.matrix, model), list(v.matrix.grid))


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """Every page's CSV download: spreadsheet-safe, as ``trajaudit items --format csv``."""
    return csv_text(frame).encode()


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


@st.cache_data(show_spinner="Comparing models…", max_entries=16, hash_funcs=HASH)
def compare_view(v: View, top: int) -> CompareReport:
    """``trajaudit compare --json`` for the view."""
    return views.compare_view(v, top=top, bootstrap=BOOTSTRAP)


@st.cache_data(show_spinner=False, max_entries=64)
def item_detail(root: str, version: int, benchmark: str, item_id: str) -> inspector.ItemDetail:
    return inspector.item_detail(Store(root), benchmark, item_id)


@st.cache_data(show_spinner=False, ttl=300, max_entries=256)
def _video(
    video_root: str, rel: str | None, root: str, version: int, benchmark: str, item_id: str
) -> tuple[Path | None, inspector.VideoInfo | None, str | None]:
    return inspector.locate_video(video_root, rel, Store(root), benchmark, item_id)


def video(video_root: str, v: View, item: InspectedItem) -> tuple[Path | None, inspector.VideoInfo | None, str | None]:
    """The item's video (the catalog's link first, then ``items.video``), probed; cached for a few minutes
    (files may appear or change) and per store version (a new link shows at once)."""
    return _video(video_root, unset(item.video), v.root, v.version, v.scope.benchmark or "", item.item_id)


@st.cache_data(show_spinner=False, max_entries=256)
def catalog_length(root: str, version: int, benchmark: str, item_id: str) -> tuple[int, float] | None:
    """The item's video (frames, fps) from the store's catalog; None where it is not linked."""
    return inspector.video_length(Store(root), benchmark, item_id, None)


@st.cache_data(show_spinner=False, max_entries=512)
def thumbs(path: str, mtime_ns: int, indices: tuple[int, ...], cache_dir: str, height: int = THUMB_HEIGHT) -> list[str]:
    """Thumbnail files ``height`` pixels tall (cached on disk by ``backend.videos.decode.thumbnails``; keyed on the
    file's mtime)."""
    return [str(p) for p in thumbnails(path, list(indices), cache_dir, height=height)]


@st.cache_data(show_spinner=False, max_entries=64)
def item_texts(root: str, version: int, benchmark: str, item_id: str) -> ItemTexts | None:
    """``trajaudit inspect --json``'s ``texts`` for the Inspector's texts panel (None unless open-ended)."""
    return views.texts_view(item_detail(root, version, benchmark, item_id))


# --- the Audits page, the annotation panel, the explain panel, the score sections, the sidebar, the walk ---------
# (each imports its caches from here under the name it uses: ``from pages.common.data import interventions_audit as audit``)

CROSS_ITEM_COLUMNS = ("benchmark", "item_id", "task_type", "question")  # the Audits page's cross-model item list
CROSS_LIMIT = 500


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH)
def protocol_labels(root: str, version: int, resolved: Resolved) -> list[str]:
    return views.protocol_labels(Store(root), resolved)


@st.cache_data(show_spinner="Comparing protocols…", max_entries=16, hash_funcs=HASH)
def interventions_audit(root: str, version: int, resolved: Resolved) -> InterventionsAudit:
    """``trajaudit audit interventions --json`` on the focus model's grid up to the chosen top budget."""
    return views.interventions_view(Store(root), resolved)


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=HASH)
def intervention_requests(v: View, label: str) -> list[client.RerunRequest]:
    """Re-run requests for the terminal regressions of the audited grid (``views.intervention_requests``,
    as ``--enqueue LABEL`` builds them)."""
    return views.intervention_requests(v, label)


@st.cache_data(show_spinner="Grouping allocations…", max_entries=16, hash_funcs=HASH)
def isocompute_audit(
    root: str, version: int, resolved: Resolved, tolerance: float, pixels: int | None
) -> IsocomputeAudit:
    """``trajaudit audit isocompute --json`` of the focus model."""
    return views.isocompute_view(Store(root), resolved, tolerance, pixels)


@st.cache_data(show_spinner="Matching the two models…", max_entries=16, hash_funcs=HASH)
def crossmodel_audit(root: str, version: int, resolved: Resolved, a: str, b: str, ca: str, cb: str) -> CrossmodelAudit:
    """``trajaudit audit crossmodel --json`` (with the question beside each listed item)."""
    return views.crossmodel_view(Store(root), resolved, (a, b), ca, cb, CROSS_LIMIT, CROSS_ITEM_COLUMNS)


@st.cache_data(show_spinner=False, max_entries=128)
def annotation_listing(root: str, version: int, benchmark: str, item_id: str) -> list[Annotation]:
    """An item's annotations, newest first (``pages.common.annotations``' panel); a write bumps ``version``."""
    return scope_annotations.records(scope_annotations.annotations_for(Store(root), benchmark, item_id))


@st.cache_data(show_spinner="Finding what these items share…", max_entries=32, hash_funcs=HASH)
def explain_report(view: View, model: str, target: Target, exclude_unparsed: bool) -> ExplainReport:
    """``trajaudit explain --json`` of ``model``'s ``target`` on ``view`` (an ``explain_scope``)."""
    return views.explain_view(view, model, target, top=25, exclude_unparsed=exclude_unparsed)


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=HASH)
def score_binary(v: View) -> BinaryView:
    """How the view's scored items enter accuracy (``metrics --json``'s ``binary``)."""
    return binary_view(v.scores, v.scope.score_cutoff)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH)
def score_flows(
    v: View, model: str, pair: tuple[str, str] | None, kind: str | None, tolerance: float
) -> ScoreFlowsReport:
    """``trajaudit flows --scores --tolerance E --json`` for the view (every flow item when ``kind`` is given)."""
    return views.score_flows_view(v, model, pair, kind, tolerance, limit=None)


@st.cache_resource
def demo_lock() -> threading.Lock:
    """One demo build per server process, however many sessions open the empty store at once."""
    return threading.Lock()


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=HASH)
def walk_items(view: View, model: str, sel: Selection) -> pd.DataFrame:
    """The selection's items (item_id, task type, duration, question, confidence where it has one; a flow's are
    ``trajaudit flows --from A --to B --kind K``'s): one shared frame per selection, read-only like
    ``filtered_ids``. Why not ``cache_data``: a large flow (56k items at 10M responses) cost 0.035 s to pickle
    on every open, and did twice when its list had a cache of its own."""
    if sel.kind == "flow":
        a, b, kind = sel.args
        return views.flow_item_table(view, model, (a, b), kind)
    m = view.matrix
    if sel.kind == "state":
        return state_items(m, model, *sel.args)
    ids = views.selected_ids(view, model, sel)
    frame = m.items.set_index(m.items["item_id"].astype(str))
    return frame.loc[[i for i in ids if i in frame.index]].reset_index(drop=True)


@st.cache_resource(show_spinner=False, max_entries=2, ttl=600)
def video_bytes(path: str, mtime_ns: int, size: int) -> bytes:
    """A video's bytes for the Inspector's player, read once per file version (``mtime_ns`` and ``size`` key a
    replaced file anew); a resource, not data: the bytes are handed to ``st.video`` as they are, never copied."""
    return Path(path).read_bytes()
