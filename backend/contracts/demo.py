"""``trajaudit demo --json``: what the demo build wrote (``backend.demo.model.build_demo_store``).

Its own module: the demo model's record is ``store.registry.ModelSpec``, whose module loads the store's
Parquet plumbing, which no other contract module's reader should pay for."""

from __future__ import annotations

from typing import Annotated

from backend.contracts.base import Contract, doc
from store.registry import ModelSpec


class DemoSummary(Contract, kw_only=True):
    """The synthetic demo store just written, and the random-weights model registered for re-runs."""

    store: Annotated[str, doc("the store folder (resolved)")]
    store_version: Annotated[int, doc("the store version the demo's write published")]
    run_id: Annotated[str, doc("the id of the demo's run (the runs table)")]
    items: Annotated[int, doc("items written, over both benchmarks")]
    responses: Annotated[int, doc("responses written")]
    models: Annotated[list[str], doc("the synthetic models")]
    benchmarks: Annotated[list[str], doc("the synthetic benchmarks")]
    configs: Annotated[list[str], doc("the configurations answered (the main grid, then the subset's)")]
    videos: Annotated[int, doc("demo videos written (0 with --no-videos)")]
    video_root: Annotated[str | None, doc("where the videos are (null with --no-videos)")]
    seconds: Annotated[float, doc("wall time of the data's build, rounded to 0.01 s")]
    demo_model: Annotated[
        ModelSpec | None, doc("the random-weights re-run model registered (null without the worker extra)")
    ]
