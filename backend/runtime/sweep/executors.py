"""Where shards run: in this process (``local``) or on Ray actors (``ray``), one model per actor.

Both return the shards' reports and the cold answers of the cells picked for the drift check, so
the summary and the check do not care which ran. Under Ray, video groups are handed out one at a
time to whichever actor is free (largest first), so a slow video does not hold a fixed shard back;
each actor appends its own batches to the store (on a cluster the store folder must be on storage
every node mounts at the same path). An actor takes one GPU when the cluster has GPUs.

Running on a Ray cluster::

    # on the head node, then on every worker node (``ray start --address=<head>:6379``)
    ray start --head
    # from any node, with the store on shared storage (same path everywhere) and the model
    # registered with a path every node can read:
    trajaudit sweep --store /shared/trajaudit-data --model qwen25-7b --benchmark videomme \\
        --grid text,8f,16f,32f,64f --executor ray --ray-address auto --workers 8 --resume
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from backend.runtime.sweep.plan import VideoGroup
from backend.runtime.sweep.shard import Outcome, ShardReport, ShardRunner, ShardSettings
from backend.runtime.sweep.verify import pick
from store.configs import parse
from store.errors import UserError

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


class SweepActor:
    """A Ray actor around one :class:`ShardRunner` (the model is loaded once, in ``__init__``)."""

    def __init__(self, settings: ShardSettings):
        self.runner = ShardRunner(settings)

    def run(self, group: VideoGroup) -> int:
        self.runner.run([group])
        return group.n_cells

    def finish(self) -> ShardReport:
        return self.runner.finish()

    def answer_cold(self, cells: list[tuple[str, str]]) -> list[Outcome]:
        return self.runner.answer_cold(cells)


def run_ray(
    groups: list[VideoGroup],
    settings: ShardSettings,
    on_cell: Progress,
    verify_k: int,
    seed: int,
    workers: int | None = None,
    address: str | None = None,
) -> tuple[list[ShardReport], list[Outcome], list[Outcome]]:
    """Shards on Ray actors; uses the running Ray instance, or starts / joins one at ``address``."""
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'trajaudit[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=True)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    workers = workers or max(1, gpus)
    actor_class = ray.remote(num_cpus=1, num_gpus=1 if gpus else 0)(SweepActor)
    # Any: a handle's methods gain ``.remote`` at run time, which Ray's annotations do not describe
    actors: list[Any] = [actor_class.remote(replace(settings, shard=k)) for k in range(workers)]
    queue = sorted(groups, key=lambda g: g.n_cells, reverse=True)
    running = {}
    try:
        for actor in actors:
            if queue:
                running[actor.run.remote(queue.pop(0))] = actor
        while running:
            (ready,), _ = ray.wait(list(running), num_returns=1)
            actor = running.pop(ready)
            on_cell(ray.get(ready))
            if queue:
                running[actor.run.remote(queue.pop(0))] = actor
        reports = ray.get([a.finish.remote() for a in actors])
        outcomes = [o for r in reports for o in r.outcomes]
        chosen = pick(outcomes, verify_k, seed)
        cold = ray.get(actors[0].answer_cold.remote(twins(chosen))) if chosen else []
        return reports, chosen, cold
    finally:
        for actor in actors:
            ray.kill(actor)
