"""The shared sidebar: store, benchmark, models, focus model, grid and item filters -> one ``Scope``.

Every choice is URL state (``pages.common.state``). The grid offers the configurations every
selected model has (the matched grid); a fresh view starts on their budget ladder
(``backend.views.default_grid``). An empty store gets the demo store, built with a progress bar.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import streamlit as st

from backend.annotations import VOCABULARY
from backend.demo import build_demo_store
from backend.filters import ItemFilter
from backend.tags import TAGS
from backend.video import default_video_root
from backend.views import default_grid, default_models, shared_configs
from pages.common import data, state, ui
from store import configs
from store.demo import DEFAULT_ITEMS
from store.store import MANIFEST, Store, resolve_root

DEMO_ITEMS_ENV = "TRAJAUDIT_DEMO_ITEMS"  # demo size when the app builds it (default: store.demo's)
MAX_DEFAULT_MODELS = 4
ANY_TAG = "any"


@st.cache_resource
def _demo_lock() -> threading.Lock:
    """One demo build per server process, however many sessions open the empty store at once."""
    return threading.Lock()


def _offer_demo(store: Store) -> None:
    """Empty store: build the demo, then stop.

    Automatic only for the store the server was started on, when that folder is fresh (a new
    install); a folder typed into the sidebar, or one that already has a manifest, gets a button.
    """
    st.title("trajaudit")
    st.info(f"The store **{store.root}** holds no responses yet.", icon="🗂️")
    st.markdown(
        "Ingest real outputs with `trajaudit ingest`, or explore the **synthetic demo store** "
        "(four synthetic models on two synthetic benchmarks, with short generated videos, and a tiny "
        "random-weights model so that re-runs work on this machine)."
    )
    fresh = store.root == resolve_root(None) and not (store.root / MANIFEST).exists()
    if fresh or st.button("Build the demo store here", type="primary"):
        bar = st.progress(0.0, text="Building the demo store…")
        with ui.guard(), _demo_lock():
            if Store(store.root).is_empty():
                n_items = int(os.environ.get(DEMO_ITEMS_ENV) or DEFAULT_ITEMS)
                build_demo_store(store.root, n_items=n_items, progress=lambda f, msg: bar.progress(min(max(f, 0.0), 1.0), text=msg))
        st.rerun()
    st.stop()


def draw() -> data.Scope | None:
    """Draw the sidebar and return the view's scope (the page stops on an empty store)."""
    sb = st.sidebar
    root = state.bind(sb.text_input, "store", "Store folder", default=str(resolve_root(None)),
                      help="--store / $TRAJAUDIT_STORE; default ./trajaudit-data")  # fmt: skip
    store = Store(root or None)
    if store.is_empty():
        _offer_demo(store)
    version = store.version()
    info = data.store_info(str(store.root), version)

    benchmarks = info["benchmarks"]
    bench = state.bind(sb.selectbox, "bench", "Benchmark", options=benchmarks, default=benchmarks[0])
    with_bench = [m for m in info["models"] if bench in info["configs"].get(m, {})]
    models = state.bind(
        sb.multiselect, "models", "Models", options=with_bench, default=default_models(info, bench, MAX_DEFAULT_MODELS),
        help="Metrics use the items every selected model answered at every configuration (matched grid).",
    )  # fmt: skip
    if not models:
        st.info("Select at least one model in the sidebar.", icon="👈")
        return None
    focus = state.bind(sb.selectbox, "model", "Focus model", options=models, default=models[0],
                       help="The model drawn on the flows, items and inspector pages, and whose tags filter items.")  # fmt: skip
    shared = shared_configs(info, models, bench)
    grid = state.bind(
        sb.multiselect, "grid", "Grid (configurations)", options=shared, default=default_grid(info, models, bench),
        help="Configurations every selected model has (matched grid), ordered by cost. The default is the budget "
        "ladder; spatial budgets (@) and sampling policies (/) are one click away.",
    )  # fmt: skip
    grid = configs.order(grid)
    if len(grid) < 2:
        st.info("Select at least two configurations for the grid in the sidebar.", icon="👈")
        return None

    sb.markdown("**Items**")
    choices = data.facets(str(store.root), version, tuple(models), bench, tuple(grid))
    tasks = state.bind(sb.multiselect, "task", "Task type", options=choices["task_types"], default=[])
    durations = state.bind(sb.multiselect, "dur", "Duration", options=choices["durations"], default=[])
    tag = state.bind(sb.selectbox, "tag", "Trajectory tag (focus model)", options=[ANY_TAG, *TAGS], default=ANY_TAG)
    atags = state.bind(sb.multiselect, "atag", "Annotation tag", options=list(VOCABULARY), default=[],
                       help="Items annotated with any of these tags (by anyone, for any model).")  # fmt: skip
    search = state.bind(sb.text_input, "q", "Search", default="", placeholder="question, option or item id")

    with sb.expander("Videos and export"):
        state.bind(st.text_input, "vroot", "Video root", default=str(default_video_root(store.root)),
                   help="Folder that items' video paths are relative to ($TRAJAUDIT_VIDEO_ROOT).")  # fmt: skip
        state.bind(st.segmented_control, "fmt", "Chart export format", options=list(ui.EXPORT_FORMATS), default="png")

    return data.Scope(
        root=str(store.root),
        version=version,
        benchmark=bench,
        models=tuple(models),
        grid=tuple(grid),
        item_filter=ItemFilter(task_types=tuple(tasks), durations=tuple(durations), search=search or None, tags=tuple(atags)),
        focus=focus,
        tag=None if tag == ANY_TAG else tag,
    )


def noise_toggle() -> bool:
    """The "hide within-noise flips" switch, in the sidebar of the pages that draw flips (Overview, Flows)."""
    return bool(state.bind(
        st.sidebar.toggle, "noise", "Hide within-noise flips", default=False,
        help="Leave out flips of items whose correctness already flips under repeats (seeds, sampling policies "
        "at the same budget) at either side of the transition; flips beyond noise and items without repeats "
        "stay. Same numbers as `trajaudit flows --beyond-noise`.",
    ))  # fmt: skip


def video_root(scope: data.Scope) -> Path:
    return Path(state.get("vroot") or default_video_root(scope.root)).expanduser()
