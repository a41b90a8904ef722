"""``trajaudit dispatch``: answer the queue's re-runs on a Ray cluster, writing the store from this machine alone."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, command, print_json
from backend.runtime.dispatch import DEFAULT_WRITE_BATCH, VIDEOS
from store.errors import UserError
from store.store import resolve_root


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "dispatch",
        "Runs where the store is: claims queued re-run jobs (with the queue's leases), answers them on Ray "
        "actors (one per model, one GPU each when the cluster has GPUs) and appends the answers itself, so "
        "the store keeps one writer and no node needs the store folder. An actor that dies or a node that "
        "leaves gives its job back (attempt counted); a model that cannot load fails its jobs with the "
        "reason; Ctrl-C gives the jobs in flight back to the queue.",
    )
    p.add_argument("--ray-address", required=True, help="the Ray cluster (HOST:6379 of `ray start --head`, or auto)")
    p.add_argument("--model", action="append", default=None, help="a model to serve (repeatable; default: every "
                   "registered model whose checkpoint is outside the store folder)")  # fmt: skip
    p.add_argument(
        "--actor-resources",
        default=None,
        metavar="JSON",
        help="Ray resources of each actor, over the default of one GPU (one CPU on a cluster without GPUs): "
        '\'{"gpu_node": 1}\', \'{"GPU": 1, "CPU": 4}\'',
    )
    p.add_argument(
        "--videos",
        choices=VIDEOS,
        default="ship",
        help="ship: decode the requested frames here and send them (nodes need no videos); node: each actor "
        "reads the video under its node's video root (--video-root, else TRAJAUDIT_VIDEO_ROOT on the node)",
    )
    p.add_argument(
        "--video-root", default=None, metavar="DIR", help="with --videos node: the videos' folder on the nodes"
    )
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"), help="the actors' device")
    p.add_argument("--write-batch", type=int, default=DEFAULT_WRITE_BATCH, metavar="N",
                   help="answers that arrive together are written together, at most N per store write")  # fmt: skip
    p.add_argument("--once", action="store_true", help="exit when no job of the served models is left")
    p.add_argument("--poll", type=float, default=1.0, metavar="S", help="seconds between queue polls when idle")
    p.add_argument("--lease", type=float, default=60.0, metavar="S", help="job lease, renewed every S/3 seconds")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from backend.runtime.dispatch import LOG, Dispatcher, parse_resources  # Ray loads only for this command

    if args.video_root is not None and args.videos != "node":
        raise UserError("--video-root names the videos' folder on the nodes: it needs --videos node")
    if not args.lease > 0 or not args.poll > 0:
        raise UserError("--lease and --poll must be positive numbers of seconds")
    dispatcher = Dispatcher(
        resolve_root(args.store),
        models=args.model,
        address=args.ray_address,
        resources=parse_resources(args.actor_resources),
        videos=args.videos,
        video_root=args.video_root,
        device=args.device,
        lease_s=args.lease,
        poll_s=args.poll,
        write_batch=args.write_batch,
    )
    # its progress is the trajaudit.dispatch logger's (timestamped lines on stderr; --verbose adds debug lines),
    # so stdout holds the JSON alone with --json
    LOG.info(f"dispatcher {dispatcher.id}: serving {', '.join(dispatcher.specs)} on {args.ray_address}")
    stats = dispatcher.run(once=args.once)
    if args.json:
        print_json(stats)
    else:
        rate = stats.answers_per_second
        shipped = stats.bytes_per_shipped_job
        print(
            f"dispatcher {dispatcher.id}: stopped: {stats.done} done, {stats.failed} failed, "
            f"{stats.requeued} given back; {stats.writes} store write(s)"
            + (f"; {rate:g} answers/s" if rate else "")
            + (f"; {shipped:,} bytes of frames shipped per job" if shipped else ""),
            flush=True,
        )
    return 0
