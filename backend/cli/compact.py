"""``trajaudit compact``: merge each table's small files into one (many small appends slow reads), and
rewrite a store written before today's row-group size (an item's lookup skips most of a small-grouped file)."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, command, print_json
from backend.contracts.base import validated
from backend.contracts.store import CompactReport
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "compact",
        "Merge each table's files into one, and rewrite a file written with larger row groups "
        "than today's (so the Inspector reads one item from a few row groups). Safe while the dashboard and "
        "workers run: readers keep their snapshot, retired files are deleted after a grace period.",
    )
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = Store(args.store)
    merged = store.compact()
    result = validated(CompactReport(merged=merged, store_version=store.version()))
    if args.json:
        print_json(result)
    elif merged:
        done = [f"{t}: {n} files -> 1" if n > 1 else f"{t}: rewritten in smaller row groups" for t, n in merged.items()]
        print(", ".join(done) + f" (store version {result.store_version})")
    else:
        print("nothing to compact")
    return 0
