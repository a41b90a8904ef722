"""Cached backend calls: every page asks here, so a filter change recomputes only what changed.

Each cache key holds the store's root and version (``Store.version()`` grows with every write, so
new data invalidates everything read before) and the frozen ``Scope`` of the view. The matrix is
a ``cache_resource`` (shared, never copied: pages treat it as read-only); results derived from it
are small and go through ``cache_data``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from backend import compare, flows, inspector, noise, views
from backend.cli.items import flatten
from backend.filters import ItemFilter
from backend.items import trajectory_table
from backend.matrix import Matrix, available, load_matrix
from backend.metrics import flow_items, mcqa_metrics, task_type_breakdown
from backend.video import thumbnails
from store.store import Store

BOOTSTRAP = 1000
THUMB_HEIGHT = 72


@dataclass(frozen=True)
class Scope:
    """What a view is about: hashable, so it is the cache key of everything computed for it."""

    root: str
    version: int
    benchmark: str
    models: tuple[str, ...]
    grid: tuple[str, ...]
    item_filter: ItemFilter
    focus: str
    tag: str | None = None


@st.cache_data(show_spinner=False, max_entries=16)
def store_info(root: str, version: int) -> dict:
    return available(Store(root))


@st.cache_resource(show_spinner="Loading the response matrix…", max_entries=8)
def _matched(root: str, version: int, models: tuple, benchmark: str, grid: tuple, item_filter: ItemFilter) -> Matrix:
    return load_matrix(Store(root), list(models), benchmark, list(grid), item_filter)


@st.cache_data(show_spinner=False, max_entries=16)
def facets(root: str, version: int, models: tuple, benchmark: str, grid: tuple) -> dict[str, list[str]]:
    """Filter choices present among the matched items (durations ordered by their length in seconds)."""
    items = _matched(root, version, models, benchmark, grid, ItemFilter()).items
    durations = items.dropna(subset=["duration"]).groupby("duration")["duration_s"].median().sort_values(na_position="last")
    return {"task_types": sorted(items["task_type"].dropna().unique()), "durations": durations.index.tolist()}


@st.cache_resource(show_spinner=False, max_entries=16)
def matrix(scope: Scope) -> Matrix:
    """The matched matrix of the scope, narrowed to the trajectory tag of the focus model."""
    full = _matched(scope.root, scope.version, scope.models, scope.benchmark, scope.grid, scope.item_filter)
    return views.tag_subset(full, scope.focus, scope.tag)


@st.cache_data(show_spinner="Computing metrics and bootstrap intervals…", max_entries=32)
def metrics(scope: Scope) -> dict:
    return mcqa_metrics(matrix(scope), bootstrap=BOOTSTRAP)


@st.cache_data(show_spinner=False, max_entries=32)
def task_types(scope: Scope, model: str) -> pd.DataFrame:
    return task_type_breakdown(matrix(scope), model)


@st.cache_data(show_spinner=False, max_entries=64)
def sankey(scope: Scope, model: str, configs: tuple[str, ...] | None) -> dict:
    return flows.sankey(matrix(scope), model, None if configs is None else list(configs))


@st.cache_data(show_spinner=False, max_entries=64)
def flow_item_list(scope: Scope, model: str, a: str, b: str, kind: str) -> pd.DataFrame:
    return flow_items(matrix(scope), model, a, b, kind)


@st.cache_resource(show_spinner="Counting repeats…", max_entries=8)
def noise_profile(scope: Scope) -> noise.NoiseProfile:
    """Repeat counts and flip rates of the scope's cells (the "hide within-noise flips" toggle)."""
    return noise.noise_profile(Store(scope.root), matrix(scope))


@st.cache_data(show_spinner=False, max_entries=16)
def quiet_transitions(scope: Scope) -> dict[str, list[dict]]:
    """Per model, the consecutive transitions without within-noise flips."""
    m = matrix(scope)
    return {model: noise.transitions_without_noise(m, noise_profile(scope), model) for model in m.models}


@st.cache_data(show_spinner=False, max_entries=64)
def quiet_sankey(scope: Scope, model: str, configs: tuple[str, ...] | None) -> dict:
    """``sankey`` without within-noise flips (``trajaudit flows --beyond-noise``)."""
    return noise.sankey_without_noise(sankey(scope, model, configs), matrix(scope), noise_profile(scope))


@st.cache_data(show_spinner=False, max_entries=64)
def quiet_flow_items(scope: Scope, model: str, a: str, b: str, kind: str) -> pd.DataFrame:
    return noise.drop_within_noise(flow_item_list(scope, model, a, b, kind), matrix(scope), noise_profile(scope), model, a, b)


@st.cache_data(show_spinner=False, max_entries=16)
def heatmap(scope: Scope, model: str, max_rows: int) -> dict:
    return flows.heatmap(matrix(scope), model, max_rows=max_rows)


@st.cache_data(show_spinner=False, max_entries=64)
def item_page(scope: Scope, model: str, sort: str, descending: bool, page: int, size: int) -> tuple[pd.DataFrame, int]:
    return views.item_page(matrix(scope), model, sort, descending, page, size)


@st.cache_data(show_spinner="Preparing the export…", max_entries=8)
def items_export(scope: Scope, model: str) -> pd.DataFrame:
    """Every filtered item of ``model``, flat: the same table as ``trajaudit items --format csv``."""
    table = trajectory_table(matrix(scope), model)
    return flatten(table, table.attrs["grid"])


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


@st.cache_data(show_spinner=False, max_entries=16)
def overlap(scope: Scope) -> dict:
    return compare.confusion_overlap(matrix(scope))


@st.cache_data(show_spinner=False, max_entries=16)
def disagreement(scope: Scope, top: int) -> pd.DataFrame:
    return compare.disagreement(matrix(scope), top=top)


@st.cache_data(show_spinner=False, max_entries=64)
def item_detail(root: str, version: int, benchmark: str, item_id: str) -> dict:
    return inspector.item_detail(Store(root), benchmark, item_id)


@st.cache_data(show_spinner=False, ttl=300, max_entries=256)
def video(video_root: str, rel: str | None) -> tuple[Path | None, inspector.VideoInfo | None, str | None]:
    """The item's video, probed (cached for a few minutes: files may appear or change)."""
    return inspector.locate_video(video_root, rel)


@st.cache_data(show_spinner=False, max_entries=512)
def thumbs(path: str, mtime_ns: int, indices: tuple[int, ...], cache_dir: str) -> list[str]:
    """Thumbnail files (cached on disk by ``backend.video.thumbnails``; keyed on the file's mtime)."""
    return [str(p) for p in thumbnails(path, list(indices), cache_dir, height=THUMB_HEIGHT)]
