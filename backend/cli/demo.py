"""``trajaudit demo``: build the synthetic demo store (labelled synthetic everywhere, see backend/demo/synthetic.py)
and register its random-weights demo model (backend/demo/model.py), so re-runs work without a checkpoint."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from backend.cli.common import add_json, command, print_json
from backend.demo.model import DEMO_MODEL, build_demo_store
from backend.demo.synthetic import DEFAULT_ITEMS
from backend.extras import WORKER_INSTALL
from backend.present.text import count
from store.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "demo",
        "Write a deterministic synthetic store (models synthetic-*, benchmarks synthetic-videomme "
        "and synthetic-mlvu, short procedurally drawn videos) so the dashboard has something to show. "
        f"It also builds a tiny random-weights model registered as {DEMO_MODEL} (a pipeline demo for re-runs). "
        "Refuses a store that already holds data unless --force.",
    )
    p.add_argument("folder", nargs="?", default=None, help="the store folder to write (the same as --store)")
    p.add_argument("--items", type=int, default=DEFAULT_ITEMS, help=f"number of items (default {DEFAULT_ITEMS})")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same store (default 0)")
    p.add_argument("--no-videos", action="store_true", help="skip writing the demo videos (faster; no frame strips)")
    p.add_argument("--force", action="store_true", help="replace whatever the store holds")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.folder is not None:  # ``trajaudit demo ./demo``, as a newcomer types it
        if args.store is not None and Path(args.store).resolve() != Path(args.folder).resolve():
            raise UserError(f"two store folders: {args.folder} and --store {args.store}; give one")
        args.store = args.folder
    with tqdm(total=100, unit="%", desc="demo store", file=sys.stderr, disable=args.json or None) as bar:

        def progress(fraction: float, message: str) -> None:
            bar.set_postfix_str(message, refresh=False)
            bar.update(round(fraction * 100) - bar.n)

        summary = build_demo_store(
            args.store,
            n_items=args.items,
            seed=args.seed,
            videos=not args.no_videos,
            force=args.force,
            progress=progress,
        )
    if args.json:
        print_json(summary)
    else:
        model = summary.demo_model
        rerun = f"re-run model {model.name} ({model.note})" if model else f"re-runs need {WORKER_INSTALL}"
        print(
            f"demo store at {summary.store}: {count(summary.items, 'item')}, {summary.responses} responses, "
            f"{len(summary.models)} synthetic models, {summary.videos} videos ({summary.seconds} s); {rerun}"
        )
    return 0
