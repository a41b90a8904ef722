"""The shared sidebar: store, benchmark, models, focus model, grid and item filters -> one ``View``.

Every choice is URL state (``pages.common.state``). The grid offers the configurations every
selected model has (the matched grid); a fresh view starts on their budget ladder
(``backend.scope.resolve.default_grid``). An empty store gets the demo store, built with a progress bar.

The item filters and the options sit in two popovers, each button naming what is set: Streamlit's frontend
draws a popover's widgets only while it is open, and the browser redraws every element of the sidebar on each
full rerun (a page switch, a filter), so the sidebar is 14 elements instead of 26 (issue 33,
``benchmarks/dashboard_browser.py``). The models, the grid and each filter's values are pills (``state.bind_many``;
a searchable multiselect beyond 24 values): a pick is one click, without a select box's dropdown and menu for the
browser to draw, and a rerun redraws pills for less than the two multiselects the models and the grid were (a cached
rerun of the Overview 0.24 -> 0.18 s, ``benchmarks/README.md``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from backend import serverconfig
from backend.contracts.store import StoreContents
from backend.scope.annotations import VOCABULARY
from backend.scope.binary import STORED
from backend.scope.filters import ItemFilter
from backend.scope.paging import DEFAULT_MODELS, default_models, shared_configs
from backend.scope.resolve import Scope, default_benchmark, default_grid
from backend.scope.tags import TAGS
from backend.scope.view import View
from pages.common import data, scores, small_n, state, ui
from pages.common.data import demo_lock as _demo_lock
from store import configs
from store.store import MANIFEST, Store

DEMO_ITEMS_ENV = "TRAJAUDIT_DEMO_ITEMS"  # demo size when the app builds it (default: backend.demo.synthetic's)
ANY_TAG = "any"


def _demo_progress(bar: DeltaGenerator, root: Path) -> Callable[[float, str], None]:
    """The build's progress on the page and, line by line as it changes, in the server's terminal."""
    last = [""]

    def report(fraction: float, message: str) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        bar.progress(fraction, text=message)
        if message != last[0]:
            last[0] = message
            print(f"trajaudit: demo store {root}: {100 * fraction:3.0f}% {message}", file=sys.stderr, flush=True)

    return report


def _offer_demo(store: Store, default: bool) -> None:
    """Empty store: offer the demo (in the server's default store only), then stop.

    Automatic for the default store when its folder is fresh (a new install); a default store that
    already has a manifest gets a button. Other configured stores are the operator's: the page only
    says how to fill them.
    """
    st.title("trajaudit")
    st.info(f"The store **{ui.escape_md(store.root)}** holds no responses yet.", icon=":material/folder_open:")
    if not default:
        st.markdown("Ingest outputs into it with `trajaudit ingest --store DIR`, or pick another store in the sidebar.")
        st.stop()
    st.markdown(
        "Ingest real outputs with `trajaudit ingest`, or explore the **synthetic demo store** "
        "(four synthetic models on two synthetic benchmarks, with short generated videos, and a tiny "
        "random-weights model so that re-runs work on this machine)."
    )
    fresh = not (store.root / MANIFEST).exists()
    if fresh or st.button("Build the demo store here", type="primary"):
        bar = st.progress(0.0, text="Building the demo store…")
        from backend.demo.model import (
            build_demo_store,  # imported here: PyAV and the demo, not paid by every cold start
        )
        from backend.demo.synthetic import DEFAULT_ITEMS

        with ui.guard(), _demo_lock():
            if Store(store.root).is_empty():
                n_items = int(os.environ.get(DEMO_ITEMS_ENV) or DEFAULT_ITEMS)
                build_demo_store(store.root, n_items=n_items, progress=_demo_progress(bar, store.root))
        st.rerun()
    st.stop()


def _store(sb: DeltaGenerator) -> tuple[Store, bool]:
    """The store this view reads, and whether it is the server's default one.

    Folders are the server's configuration (``backend.serverconfig``); a link may only name one of
    the configured stores (``?db=NAME``). Anything else in it is ignored with a notice.
    """
    config = serverconfig.current()
    for key in state.ignored():
        sb.warning(
            f"The link's `{key}=` parameter is ignored: the store and the video root are set when "
            "the server starts (docs/dashboard.md, *Serving the dashboard*).",
            icon=":material/lock:",
        )
    asked = state.get("db")
    if asked is not None and asked not in config.stores:
        sb.warning(
            f"This server has no store named {ui.code(asked)}; showing {ui.code(config.default)}.",
            icon=":material/folder_open:",
        )
        state.put("db", None)
    if len(config.stores) > 1:
        name = state.bind(
            sb.selectbox,
            "db",
            "Store",
            options=list(config.stores),
            default=config.default,
            help="The stores this server was started with (--store NAME=DIR).",
        )
    else:
        name = config.default
    return Store(config.stores[name]), name == config.default


def draw() -> View | None:
    """Draw the sidebar and return the view it selects (the page stops on an empty store)."""
    sb = st.sidebar
    store, default_store = _store(sb)
    if store.is_empty():
        _offer_demo(store, default_store)
    version = store.version()
    info = data.store_info(str(store.root), version)

    benchmarks = info.benchmarks
    bench = state.bind_one(sb, "bench", "Benchmark", benchmarks, default_benchmark(info))
    with_bench = [m for m in info.models if bench in info.configs.get(m, {})]
    fresh = default_models(info, bench)
    models = state.bind_many(
        sb,
        "models",
        "Models",
        with_bench,
        fresh,
        help="Metrics use the items every selected model answered at every configuration (matched grid).",
    )
    unpicked = [m for m in with_bench if m not in fresh and m not in models]
    if unpicked:  # a model ingested and nowhere on screen read as lost; say why it waits in the list
        sb.caption(
            f"Not selected at first: {ui.escape_md(', '.join(unpicked))}. A fresh view compares up to "
            f"{DEFAULT_MODELS} models that share two or more configurations; add one above."
        )
    if not models:
        st.info("Select at least one model in the sidebar.", icon=":material/arrow_back:")
        return None
    focus = state.bind_one(
        sb,
        "model",
        "Focus model",
        models,
        models[0],
        help="The model drawn on the flows, items and inspector pages, and whose tags filter items.",
    )
    grid_slot = sb.container(gap=None)  # the grid, drawn once the options' re-runs switch says which configs count
    filters_slot = sb.container(gap=None)  # the item filters, once there is a grid to filter
    options = sb.popover(options_label(), icon=":material/tune:", width="stretch")
    reruns = bool(
        state.bind(
            options.toggle,
            "reruns",
            "Include live re-runs",
            default=False,
            help="Re-runs are an overlay: shown on an item's trajectory, never counted. Switch on to let "
            "them fill cells and configurations and compare them explicitly (--include-reruns).",
        )
    )
    default = default_grid(info, models, bench, store.root)
    shared = shared_configs(info, models, bench, reruns)
    grid = state.bind_many(
        grid_slot,
        "grid",
        "Grid (configurations)",
        shared,
        default,
        help="Configurations every selected model has, ordered by cost. The default (docs/metrics.md) is the budget ladder "
        "of main runs covering 90% of the items; spatial budgets (@) and sampling policies (/) are one click away.",
    )
    grid = configs.order(grid)
    if len(shared) < 2:
        have = "no configuration" if not shared else f"only {ui.code(shared[0])}"
        st.info(
            f"The selected models share {have} on {ui.escape_md(bench)}, so there is no grid to compare them on: "
            "drop a model in the sidebar (`trajaudit info` lists each model's configurations).",
            icon=":material/arrow_back:",
        )
        return None
    if len(grid) < 2:
        st.info("Select at least two configurations for the grid in the sidebar.", icon=":material/arrow_back:")
        return None

    grid_choice = () if grid == default else tuple(grid)  # the default grid stays "default" in the CLI twin
    bare = Scope(benchmark=bench, models=tuple(models), grid=grid_choice, tag_model=focus, include_reruns=reruns)
    bare = _run_choice(grid_slot, store, info, bare)
    choices = data.facets(str(store.root), version, bare.resolve(store, info))
    offered = {
        "task": choices["task_types"],
        "dur": choices["durations"],
        "tag": [ANY_TAG, *TAGS],
        "atag": list(VOCABULARY),
    }
    filters = filters_slot.popover(filters_label(offered), icon=":material/filter_alt:", width="stretch")
    tasks = state.bind_many(filters, "task", "Task type", offered["task"])
    durations = state.bind_many(filters, "dur", "Duration", offered["dur"])
    tag = state.bind_one(filters, "tag", "Trajectory tag (focus model)", offered["tag"], ANY_TAG)
    atags = state.bind_many(
        filters,
        "atag",
        "Annotation tag",
        offered["atag"],
        help="Items annotated with any of these tags (by anyone, for any model).",
    )
    search = state.bind(filters.text_input, "q", "Search", default="", placeholder="question, option or item id")
    cutoff = scores.cutoff_control(options, choices["scored"])
    small_n.control(options)
    options.caption(
        f"Store {ui.code(store.root)} · video root {ui.code(serverconfig.current().video_root_for(store.root))} "
        "(both set when the server starts: --store, --video-root or $TRAJAUDIT_VIDEO_ROOT; items' video paths are "
        "confined to it) · charts save as SVG or PNG from their ⋯ menu; the Sankey saves an SVG from its own button."
    )

    item_filter = ItemFilter(
        task_types=tuple(tasks), durations=tuple(durations), search=search or None, tags=tuple(atags)
    )
    scope = dataclasses.replace(bare, item_filter=item_filter, tag=None if tag == ANY_TAG else tag, score_cutoff=cutoff)
    return data.view(str(store.root), version, scope.resolve(store, info))


FIRST_RUN = "main, else first ingested"
FILTERS = {"task": "task type", "dur": "duration", "tag": "trajectory tag", "atag": "annotation tag", "q": "search"}


def filters_label(offered: dict[str, list[str]]) -> str:
    """The item filters' popover button: what is filtered, so a closed popover still says it. A link's value the
    filter does not offer (``task=Nope``) filters nothing, so it is named only where its widget will show it."""
    values = {
        key: state.shown(key, offered[key], ANY_TAG if key == "tag" else []) if key in offered else state.get(key)
        for key in FILTERS
    }
    on = [name for key, name in FILTERS.items() if values[key] not in (None, "", [], ANY_TAG)]
    return "Filter items: " + ", ".join(on) if on else "Filter items"


def options_label() -> str:
    """The options' popover button, naming the options that differ from their defaults."""
    on = [
        "re-runs included" if state.get("reruns") else "",
        "" if state.get("cut") in (None, STORED) else "score cut-off",
        "" if small_n.minimum() == small_n.DEFAULT else f"charts from {small_n.minimum():,} items",
    ]
    on = [o for o in on if o]
    return "Options: " + ", ".join(on) if on else "Options"


def _run_choice(sb: DeltaGenerator, store: Store, info: StoreContents, bare: Scope) -> Scope:
    """Where a cell of the grid holds several runs, a choice of the run every cell is read from (``--run``,
    URL ``run=``); the scope line says which run each such cell shows (``backend.scope.runs``)."""
    held = bare.resolve(store, info).runs
    if not held:
        return bare
    names = sorted({r for c in held for r in c.runs})
    run = state.bind_one(
        sb,
        "run",
        "Run (cells holding several)",
        [FIRST_RUN, *names],
        FIRST_RUN,
        help="Some cells hold several runs (ingest --run). By default each shows the main run, else the run "
        "ingested first; pick one run for every cell (--run).",
    )
    return bare if run == FIRST_RUN else dataclasses.replace(bare, run=run)


def noise_toggle() -> bool:
    """The "hide within-noise flips" switch, in the sidebar of the pages that draw flips (Overview, Flows)."""
    return bool(
        state.bind(
            st.sidebar.toggle,
            "noise",
            "Hide within-noise flips",
            default=False,
            help="Leave out flips of items whose correctness already flips under repeats (seeds, sampling policies "
            "at the same budget) at either side of the transition; flips beyond noise and items without repeats "
            "stay. Same numbers as `trajaudit flows --beyond-noise`.",
        )
    )


def video_root(view: View) -> Path:
    """The configured video root of the view's store (never a URL's: frames are decoded only under it)."""
    return serverconfig.current().video_root_for(view.root)
