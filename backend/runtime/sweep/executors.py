"""Where shards run: in this process (``local``) or on Ray actors (``ray``), one model per actor.

Both return the shards' reports and the cold answers of the cells picked for the drift check, so
the summary and the check do not care which ran. Under Ray, video groups are handed out one at a
time to whichever actor is free (largest first), so a slow video does not hold a fixed shard back.
Each actor returns its batches to the driver as they fill (a streaming generator), and the driver
appends them: the store keeps one writer, on the driver's machine, and a crash loses at most the
batches in flight. Actors are never given the store's path: each gets the model's registry entry,
the checkpoint's path (which its node must hold, outside the store folder) and the videos' folder
on its node (``--video-root``, else ``$TRAJAUDIT_VIDEO_ROOT`` in the node's environment), and the
items of each group travel with it. An actor takes one GPU when the cluster has GPUs.

Running on a Ray cluster::

    # on the head node, then on every worker node (``ray start --address=<head>:6379``)
    ray start --head
    # on the machine that holds the store, with the checkpoint and the videos at the same paths on the nodes:
    trajaudit sweep --store ~/trajaudit-data --model qwen25-7b --benchmark videomme \\
        --grid text,8f,16f,32f,64f --executor ray --ray-address auto --video-root /data/videos --resume
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from backend.runtime import registry
from backend.runtime.inference.records import library_versions
from backend.runtime.sweep.plan import VideoGroup
from backend.runtime.sweep.shard import (
    Batch,
    Outcome,
    ShardReport,
    ShardRunner,
    ShardSettings,
    StoreSink,
    load_model,
)
from backend.runtime.sweep.verify import pick
from backend.videos.decode import VIDEO_ROOT_ENV
from store.configs import parse
from store.errors import UserError
from store.registry import ModelSpec
from store.store import Store

Progress = Callable[[int], None]


def twins(chosen: list[Outcome]) -> list[tuple[str, str]]:
    """The cells the drift check answers cold: the same item at the exact twin of each label
    (an approximate ``32f~prune85`` cell is compared with ``32f``)."""
    return [(o.item_id, parse(o.config).exact_label) for o in chosen]


def run_local(
    groups: list[VideoGroup], settings: ShardSettings, on_cell: Progress, verify_k: int, seed: int
) -> tuple[list[ShardReport], list[Outcome], list[Outcome]]:
    """One shard in this process: (reports, picked cells as stored, the same cells answered cold)."""
    runner = ShardRunner(settings)
    runner.run(groups, on_cell)
    report = runner.finish()
    chosen = pick(report.outcomes, verify_k, seed)
    return [report], chosen, runner.answer_cold(twins(chosen))


def _never_written(batch: Batch) -> None:
    raise RuntimeError("a sweep actor never writes the store: its batches go back to the driver")


class SweepActor:
    """A Ray actor around one :class:`ShardRunner` (the model is loaded once, in ``__init__``); its batches go
    back to the driver, which writes them."""

    def __init__(self, settings: ShardSettings, spec: ModelSpec, checkpoint: str, video_root: str | None):
        root = video_root or os.environ.get(VIDEO_ROOT_ENV)
        if not root:
            raise UserError(
                f"node {socket.gethostname()} has no video root: give the sweep --video-root (the videos' folder "
                f"on the nodes) or set {VIDEO_ROOT_ENV} on the node"
            )
        t0 = time.perf_counter()
        loaded = load_model(settings, spec, Path(checkpoint))
        self.runner = ShardRunner(settings, loaded, video_root=root, sink=_never_written)
        self.runner.report.load_seconds = time.perf_counter() - t0

    def run(self, group: VideoGroup) -> Iterator[Batch]:
        """The group's batches as they fill (a streaming generator: the driver writes each as it comes)."""
        yield from self.runner.stream([group])

    def finish(self) -> tuple[Batch, ShardReport]:
        """The last, partial batch and what this shard measured (its counters, failures and times)."""
        return self.runner.take(), self.runner.report

    def answer_cold(self, cells: list[tuple[str, str]], items: pd.DataFrame) -> list[Outcome]:
        return self.runner.answer_cold(cells, items)


def _merged(computed: ShardReport, written: ShardReport) -> ShardReport:
    """One shard's report: what its actor measured, with what the driver wrote of its batches."""
    return replace(
        computed,
        cells=written.cells,
        raced=written.raced,
        batches=written.batches,
        files=written.files,
        outcomes=written.outcomes,
    )


def run_ray(
    groups: list[VideoGroup],
    settings: ShardSettings,
    on_cell: Progress,
    verify_k: int,
    seed: int,
    workers: int | None = None,
    address: str | None = None,
    video_root: str | None = None,
) -> tuple[list[ShardReport], list[Outcome], list[Outcome]]:
    """Shards on Ray actors whose batches this process appends; uses the running Ray instance, or starts /
    joins one at ``address``. ``video_root``: the videos' folder on the nodes (else their $TRAJAUDIT_VIDEO_ROOT)."""
    from backend.runtime.dispatch import connect, ray_module, remote_checkpoint

    ray = ray_module()
    store = Store(settings.store_root)
    spec = registry.get(store.root, settings.model)
    checkpoint = remote_checkpoint(spec, store.root)
    if video_root is not None and Path(video_root).resolve().is_relative_to(store.root.resolve()):
        raise UserError(f"--video-root {video_root} is inside the store folder, which the actors never see")
    connect(ray, address)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    workers = workers or max(1, gpus)
    actor_class = ray.remote(num_cpus=1, num_gpus=1 if gpus else 0)(SweepActor)
    remote = replace(settings, store_root="")  # the actor's copy names no store
    written = [ShardReport(k) for k in range(workers)]
    version = library_versions().get("trajaudit")  # the driver writes the batches' runs rows
    sinks = [StoreSink(store, replace(settings, shard=k), written[k], version) for k in range(workers)]
    # Any: a handle's methods gain ``.remote`` at run time, which Ray's annotations do not describe
    actors: list[Any] = [
        actor_class.remote(replace(remote, shard=k), spec, checkpoint, video_root) for k in range(workers)
    ]
    queue = sorted(groups, key=lambda g: g.n_cells, reverse=True)
    running: dict[Any, tuple[int, VideoGroup]] = {}
    try:
        for k in range(workers):
            if queue:
                group = queue.pop(0)
                running[actors[k].run.remote(group)] = (k, group)
        while running:
            (ready,), _ = ray.wait(list(running), num_returns=1)
            k, group = running[ready]
            try:
                batch = ray.get(next(ready))
            except StopIteration:  # the group is answered: the actor takes the next one
                del running[ready]
                on_cell(group.n_cells)
                if queue:
                    group = queue.pop(0)
                    running[actors[k].run.remote(group)] = (k, group)
                continue
            sinks[k](batch)
        finished = ray.get([a.finish.remote() for a in actors])
        reports = []
        for k, (last, computed) in enumerate(finished):
            sinks[k](last)
            reports.append(_merged(computed, written[k]))
        outcomes = [o for r in reports for o in r.outcomes]
        chosen = pick(outcomes, verify_k, seed)
        cells = twins(chosen)
        items = pd.concat([g.items for g in groups], ignore_index=True).drop_duplicates("item_id")
        wanted = items[items["item_id"].isin({item_id for item_id, _ in cells})]
        cold = ray.get(actors[0].answer_cold.remote(cells, wanted)) if chosen else []
        return reports, chosen, cold
    finally:
        for actor in actors:
            ray.kill(actor)
