"""Cached backend calls: every page asks here, so a filter change recomputes only what changed.

Each cache key holds the store's root and version (``Store.version()`` grows with every write, so
new data invalidates everything read before) and the view's resolved ``backend.scope.resolve.Scope``. The
numbers come from ``backend.views``, the same functions the CLI twins print, so a page and its
``--json`` twin cannot disagree. The matrix is a ``cache_resource`` (shared, never copied: pages
treat it as read-only); reports derived from it are small and go through ``cache_data``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import threading
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from backend import views
from backend.analysis import flows, noise
from backend.contracts.inspector import ItemTexts
from backend.contracts.store import StoreContents
from backend.contracts.views import CompareReport, FlowsReport, ItemsPage, OverviewReport
from backend.export import csv_text
from backend.scope import inspector
from backend.scope.filters import ItemFilter
from backend.scope.items import flat_table, trajectory_table
from backend.scope.matrix import Matrix, available, load_matrix, narrow
from backend.scope.resolve import Resolved, tag_subset
from backend.scope.resolve import Scope as BackendScope
from backend.videos.decode import thumbnails
from store.store import Store

BOOTSTRAP = 1000
THUMB_HEIGHT = 72


@dataclass(frozen=True)
class Scope:
    """What a view is about, on which store version: hashable, the cache key of everything computed for it.

    The view's fields (``benchmark``, ``models``, ``grid``, ``focus``, ``item_filter``, ``tag``)
    read through to the resolved backend scope, which the CLI twin builds from its flags.
    """

    root: str
    version: int
    resolved: Resolved

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "resolved":  # unpickling asks before the fields exist
            raise AttributeError(name)
        return getattr(self.resolved.scope, name)

    @classmethod
    def of(cls, root: str, scope: BackendScope) -> Scope:
        """The view of ``scope`` on the store at ``root`` as it is now (resolved: default grid applied)."""
        store = Store(root)
        return cls(str(store.root), store.version(), scope.resolve(store))

    def with_noise(self, beyond_noise: bool) -> Scope:
        """The same view with the "hide within-noise flips" toggle set (Overview, Flows)."""
        inner = dataclasses.replace(self.resolved.scope, beyond_noise=beyond_noise)
        return dataclasses.replace(self, resolved=dataclasses.replace(self.resolved, scope=inner))


def scope_key(scope: Scope) -> str:
    """What a result cached on ``scope`` depends on. Streamlit hashes a dataclass argument by deep-copying
    it into a dict (``dataclasses.asdict``) on every call, which a cold Overview pays many times."""
    r = scope.resolved
    return repr((scope.root, scope.version, r.scope, r.grid_source, sorted(r.grid_excluded)))


SCOPE_HASH = {Scope: scope_key}


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


@st.cache_resource(show_spinner="Loading the response matrix…", max_entries=8)
def _matched(
    root: str, version: int, models: tuple, benchmark: str, grid: tuple, item_filter: ItemFilter, reruns: bool
) -> Matrix:
    """A filter change cuts the cached unfiltered matrix in memory (``backend.scope.matrix.narrow``) when
    that is exact, instead of rescanning every response."""
    if not item_filter.is_empty():
        full = _matched(root, version, models, benchmark, grid, ItemFilter(), reruns)
        cut = narrow(Store(root), full, item_filter)
        if cut is not None:
            return cut
    return load_matrix(Store(root), list(models), benchmark, list(grid), item_filter, include_reruns=reruns)


@st.cache_data(show_spinner=False, max_entries=16)
def facets(root: str, version: int, models: tuple, benchmark: str, grid: tuple) -> dict[str, list[str]]:
    """Filter choices present among the matched items (durations ordered by their length in seconds)."""
    items = _matched(root, version, models, benchmark, grid, ItemFilter(), False).items
    durations = (
        items.dropna(subset=["duration"]).groupby("duration")["duration_s"].median().sort_values(na_position="last")
    )
    return {"task_types": sorted(items["task_type"].dropna().unique()), "durations": durations.index.tolist()}


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=SCOPE_HASH)
def matrix(scope: Scope) -> Matrix:
    """The matched matrix of the scope, narrowed to the trajectory tag of the focus model (``Resolved.load``)."""
    s = scope.resolved.scope
    full = _matched(scope.root, scope.version, s.models, s.benchmark, s.grid, s.item_filter, s.include_reruns)
    return tag_subset(full, s.focus, s.tag)


@st.cache_data(show_spinner="Computing metrics and bootstrap intervals…", max_entries=32, hash_funcs=SCOPE_HASH)
def overview(scope: Scope) -> OverviewReport:
    """``trajaudit metrics --json`` for the view."""
    return views.overview(Store(scope.root), scope.resolved, matrix(scope), bootstrap=BOOTSTRAP)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=SCOPE_HASH)
def flows_view(scope: Scope, model: str, pair: tuple[str, str] | None, kind: str | None = None) -> FlowsReport:
    """``trajaudit flows --json`` for the view (every flow item when ``kind`` is given)."""
    return views.flows_view(Store(scope.root), scope.resolved, matrix(scope), model, pair, kind, limit=None)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=SCOPE_HASH)
def flow_item_list(scope: Scope, model: str, a: str, b: str, kind: str) -> pd.DataFrame:
    """Every item of one flow: ``trajaudit flows --from A --to B --kind K``'s items, as a table."""
    return views.flow_item_table(Store(scope.root), scope.resolved, matrix(scope), model, (a, b), kind)


@st.cache_resource(show_spinner="Counting repeats…", max_entries=8, hash_funcs=SCOPE_HASH)
def noise_profile(scope: Scope) -> noise.NoiseProfile:
    """Repeat counts and flip rates of the scope's cells."""
    return views.noise_profile(Store(scope.root), matrix(scope))


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=SCOPE_HASH)
def heatmap(scope: Scope, model: str, max_rows: int) -> dict:
    return flows.heatmap(matrix(scope), model, max_rows=max_rows)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=SCOPE_HASH)
def item_page(scope: Scope, model: str, sort: str, descending: bool, page: int, size: int) -> ItemsPage:
    """``trajaudit items --sort S --page P --json`` for the view."""
    return views.items_page(scope.resolved, matrix(scope), model, sort, descending, page, size)


@st.cache_data(show_spinner="Preparing the export…", max_entries=8, hash_funcs=SCOPE_HASH)
def items_export(scope: Scope, model: str) -> pd.DataFrame:
    """Every filtered item of ``model``, flat: the same table as ``trajaudit items --format csv``."""
    table = trajectory_table(matrix(scope), model)
    return flat_table(table, table.attrs["grid"])


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """Every page's CSV download: spreadsheet-safe, as ``trajaudit items --format csv``."""
    return csv_text(frame).encode()


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


@st.cache_data(show_spinner="Comparing models…", max_entries=16, hash_funcs=SCOPE_HASH)
def compare_view(scope: Scope, top: int) -> CompareReport:
    """``trajaudit compare --json`` for the view."""
    return views.compare_view(scope.resolved, matrix(scope), top=top, bootstrap=BOOTSTRAP)


@st.cache_data(show_spinner=False, max_entries=64)
def item_detail(root: str, version: int, benchmark: str, item_id: str) -> dict:
    return inspector.item_detail(Store(root), benchmark, item_id)


@st.cache_data(show_spinner=False, ttl=300, max_entries=256)
def _video(
    video_root: str, rel: str | None, root: str, version: int, benchmark: str, item_id: str
) -> tuple[Path | None, inspector.VideoInfo | None, str | None]:
    return inspector.locate_video(video_root, rel, Store(root), benchmark, item_id)


def video(video_root: str, scope: Scope, item: dict) -> tuple[Path | None, inspector.VideoInfo | None, str | None]:
    """The item's video (the catalog's link first, then ``items.video``), probed; cached for a few minutes
    (files may appear or change) and per store version (a new link shows at once)."""
    return _video(video_root, item.get("video"), scope.root, scope.version, scope.benchmark, str(item["item_id"]))


@st.cache_data(show_spinner=False, max_entries=256)
def catalog_length(root: str, version: int, benchmark: str, item_id: str) -> tuple[int, float] | None:
    """The item's video (frames, fps) from the store's catalog; None where it is not linked."""
    return inspector.video_length(Store(root), benchmark, item_id, None)


@st.cache_data(show_spinner=False, max_entries=512)
def thumbs(path: str, mtime_ns: int, indices: tuple[int, ...], cache_dir: str) -> list[str]:
    """Thumbnail files (cached on disk by ``backend.videos.decode.thumbnails``; keyed on the file's mtime)."""
    return [str(p) for p in thumbnails(path, list(indices), cache_dir, height=THUMB_HEIGHT)]


@st.cache_data(show_spinner=False, max_entries=64)
def item_texts(root: str, version: int, benchmark: str, item_id: str) -> ItemTexts | None:
    """``trajaudit inspect --json``'s ``texts`` for the Inspector's texts panel (None unless open-ended)."""
    return views.texts_view(item_detail(root, version, benchmark, item_id))
