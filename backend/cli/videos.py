"""``trajaudit videos link|check``: the video catalog (``backend.videos``): which file each item's video is."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, add_store, command_group, print_json
from backend.contracts.base import to_json
from backend.present.text import count
from backend.videos import layouts
from backend.videos.check import STATES, check
from backend.videos.link import link
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    actions = command_group(
        sub,
        "videos",
        "action",
        "The video catalog: paths relative to the video root ($TRAJAUDIT_VIDEO_ROOT, else "
        "<store>/videos), probed once (frames, fps, duration, size). The Inspector and re-runs look videos up here "
        "first, then fall back to items.video.",
    )

    a = actions.add_parser(
        "link",
        help="map a benchmark's items to its video files (a published layout, a template or a two-column file)",
        description="Read the benchmark's own annotation files in their published layout (or --template / --paths), "
        "probe every video once in parallel and replace the benchmark's catalog in one write.",
    )
    add_store(a)
    a.add_argument("--benchmark", required=True, help="the benchmark as the store names it (e.g. videomme)")
    a.add_argument("--dataset", required=True, help="the downloaded benchmark folder, under the video root")
    a.add_argument(
        "--layout", choices=list(layouts.LAYOUTS), default=None, help="published layout (default: the benchmark's own)"
    )
    source = a.add_mutually_exclusive_group()
    source.add_argument("--template", default=None, help="a path under --dataset from item fields, e.g. '{video}.mp4'")
    source.add_argument("--paths", default=None, help="a two-column file (item id, path under --dataset)")
    a.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_json(a)
    a.set_defaults(func=run_link)

    c = actions.add_parser("check", help="per benchmark: items linked, missing, unreadable, unlinked, with examples")
    add_store(c)
    c.add_argument("--benchmark", default=None, help="only this benchmark")
    add_json(c)
    c.set_defaults(func=run_check)


def run_link(args: argparse.Namespace) -> int:
    out = link(
        Store(args.store),
        args.benchmark,
        args.dataset,
        layout=args.layout,
        template=args.template,
        paths=args.paths,
        progress=not (args.no_progress or args.json),
    )
    if args.json:
        print_json(out)
        return 0
    print(
        f"{out.benchmark} ({out.layout}): {count(out.items, 'item')} -> {out.files} files under {out.video_root}: "
        f"{out.linked} linked, {out.missing} missing, {out.unreadable} unreadable; "
        f"{out.matched_items} of the {out.stored_items} stored items covered"
        + (
            f"; {out.skipped_links} links skipped (a symlink loop or a link that cannot be resolved)"
            if out.skipped_links
            else ""
        )
    )
    examples = out.examples
    for state, rows in (
        ("missing", examples.missing),
        ("unreadable", examples.unreadable),
        ("skipped", out.skipped_examples),
    ):
        for r in rows:
            print(f"  {state}: {r.item_id} -> {r.path}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    out = check(Store(args.store), args.benchmark)
    if args.json:
        print_json(out)
        return 0
    if not out.benchmarks:
        print("no items and no linked videos in the store")
    for b in to_json(out.benchmarks):  # its counts and examples keyed by state (catalog.STATES)
        print(f"{b['benchmark']}: {count(b['items'], 'item')}: " + ", ".join(f"{b[s]} {s}" for s in STATES))
        for state, rows in b["examples"].items():
            for r in rows:
                print(f"  {state}: {r['item_id']}" + (f" -> {r['path']}" if r["path"] else ""))
    print(f"video root: {out.video_root}")
    return 0
