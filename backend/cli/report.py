"""``trajaudit report``: a shareable audit report of a scope, as one self-contained HTML file or paper-ready tables."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from backend.cli.common import command, note_benchmark, note_models
from backend.report import FORMATS, build
from backend.scope.resolve import Scope, add_scope_args
from backend.scope.view import args_models
from store.errors import UserError
from store.paths import write_atomic
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "report")
    add_scope_args(p, noise=True)
    p.add_argument(
        "--gallery", type=int, default=24, help="items in the gallery of the most informative items (0 = none)"
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap intervals and of the gallery's tie-breaks"
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples for the 95%% intervals (0 = none)")
    p.add_argument(
        "--video-root",
        default=None,
        help="where the items' videos are (default: $TRAJAUDIT_VIDEO_ROOT or <store>/videos)",
    )
    p.add_argument(
        "--format",
        default="html",
        choices=FORMATS,
        help="html (default), json (the data the HTML draws), latex, markdown",
    )
    p.add_argument(
        "--out", required=True, help="file to write ('-' for standard output); an existing file needs --force"
    )
    p.add_argument("--force", action="store_true", help="overwrite --out when it exists")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.bootstrap < 0:
        raise UserError("--bootstrap must be >= 0")
    store = Store(args.store)
    models = args_models(args, store)
    if not args.models:
        note_models(models)
    resolved = note_benchmark(Scope.from_args(args, models=models).resolve(store))
    out = build(
        store,
        resolved,
        args.format,
        gallery_items=args.gallery,
        seed=args.seed,
        bootstrap=args.bootstrap,
        video_root=args.video_root,
    )
    if args.out == "-":
        os.write(1, out)
        return 0
    target = Path(args.out)
    if not target.parent.is_dir():
        raise UserError(f"--out: folder {target.parent} does not exist")
    if target.is_dir():
        raise UserError(f"--out: {target} is a folder; name a file to write")
    if target.exists() and not args.force:
        raise UserError(f"--out: {target} already exists; pass --force to overwrite it")
    write_atomic(target, out, overwrite=args.force)
    print(f"wrote {target} ({len(out) / 1e6:.2f} MB)")
    return 0
