"""``trajaudit inspect``: one item in full (the inspector page as JSON): responses, provenance, frame plan and,
for an open-ended item, the texts side by side with their word-level diff against the reference."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, command, print_json, split_list
from backend.contracts.base import unset
from backend.contracts.inspector import HistoryReport
from backend.scope.inspector import inspect_record, item_benchmark, item_history
from backend.videos.decode import default_video_root
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "inspect")
    p.add_argument("--benchmark", default=None, help="default: the one benchmark holding --item")
    p.add_argument("--item", required=True, help="the item id")
    p.add_argument("--models", default=None, help="only these models' responses (comma-separated)")
    p.add_argument("--video-root", default=None, help="default: $TRAJAUDIT_VIDEO_ROOT or <store>/videos")
    p.add_argument(
        "--history",
        action="store_true",
        help="the values an ingest with --replace took out of the item's responses (old value, and which write "
        "replaced it), instead of the item",
    )
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = Store(args.store)
    if args.benchmark is None:
        args.benchmark = item_benchmark(store, args.item)
    if args.history:
        return _print_history(item_history(store, args.benchmark, args.item, split_list(args.models)), args.json)
    root = args.video_root or default_video_root(store.root)
    out = inspect_record(store, args.benchmark, args.item, root, split_list(args.models))
    if args.json:
        print_json(out)
        return 0
    item = out.item
    print(f"{item.benchmark}/{item.item_id}  target {unset(item.target)}  {unset(item.task_type) or ''}")
    print(unset(item.question) or "")
    for option in item.options:
        print(f"  {option}")
    for r in out.responses:
        print(f"  {r.model:<24} {r.config:<16} {r.run or '-':<8} {r.answer or '-':<3} correct={r.correct}")
    print(f"video: {out.video.path or out.video.problem}")
    for f in out.frames:
        shown = "?" if f.indices is None else len(f.indices)
        how = f"{f.source} ({f.sampler})" if f.sampler else f.source
        print(f"  {f.config:<16} {how:<28} {shown} frames  {f.note}")
    texts = out.texts
    if texts is not None:
        print("reference: " + " | ".join(texts.references))
        for t in texts.rows:
            score = "-" if t.score is None else f"{t.score:.2f}"
            matched = f"{t.diff.matched}/{t.diff.reference_tokens}"
            print(
                f"  {t.model:<24} {t.config:<16} {score:>5} {matched:>6} {t.rank or '':<5} {' '.join((t.text or '').split())}"
            )
    return 0


def _print_history(report: HistoryReport, as_json: bool) -> int:
    if as_json:
        print_json(report)
        return 0
    rows = report.history
    print(f"{report.benchmark}/{report.item_id}: {len(rows)} replaced value set(s)")
    for r in rows:
        print(
            f"  {r.model:<24} {r.config:<16} {r.run:<8} answer {r.answer or '-':<3} correct={r.correct} "
            f"confidence={r.confidence} score={r.score}  replaced at write {r.replaced_seq} by {r.replaced_by}"
        )
    return 0
