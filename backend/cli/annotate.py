"""``trajaudit annotate add|list|delete|tags``: tag items with evidence pathways and free notes."""

import argparse  # no `from __future__ import annotations`: this module's `annotations` is backend.scope's

from backend.cli.common import add_json, add_store, command_group, print_json
from backend.contracts.store import Annotation
from backend.scope import annotations
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    actions = command_group(
        sub,
        "annotate",
        "action",
        "Annotations are stored in the store's annotations table (append-only; delete writes a tombstone).",
    )

    a = actions.add_parser("add", help="annotate one item")
    add_store(a)
    a.add_argument("--benchmark", required=True)
    a.add_argument("--item", required=True, dest="item_id", help="item id")
    a.add_argument("--tag", required=True, help=f"one of: {', '.join(annotations.VOCABULARY)}")
    a.add_argument("--note", default=None, help="free text")
    a.add_argument("--author", default=None, help="default: $TRAJAUDIT_AUTHOR or the login name")
    a.add_argument("--model", default=None, help="the model the annotation is about (default: every model)")
    add_json(a)
    a.set_defaults(func=run_add)

    ls = actions.add_parser("list", help="list live annotations")
    add_store(ls)
    ls.add_argument("--benchmark", default=None)
    ls.add_argument("--item", default=None, dest="item_id")
    ls.add_argument("--tag", default=None)
    ls.add_argument("--model", default=None)
    add_json(ls)
    ls.set_defaults(func=run_list)

    d = actions.add_parser("delete", help="delete an annotation (appends a tombstone)")
    add_store(d)
    d.add_argument("annotation_id")
    d.add_argument("--author", default=None, help="who deletes (default: the annotation's author)")
    add_json(d)
    d.set_defaults(func=run_delete)

    t = actions.add_parser("tags", help="the controlled vocabulary")
    add_json(t)
    t.set_defaults(func=run_tags)


def _show(row: Annotation, verb: str, as_json: bool) -> None:
    if as_json:
        print_json(row)
    else:
        print(f"{verb} {row.annotation_id}: {row.benchmark}/{row.item_id} [{row.tag}] {row.note or ''}".rstrip())


def run_add(args: argparse.Namespace) -> int:
    row = annotations.add_annotation(
        Store(args.store),
        args.benchmark,
        args.item_id,
        args.tag,
        args.note,
        args.author or annotations.default_author(),
        args.model,
    )
    _show(row, "added", args.json)
    return 0


def run_list(args: argparse.Namespace) -> int:
    df = annotations.annotations_for(Store(args.store), args.benchmark, args.item_id, args.tag, args.model)
    if args.json:
        print_json(annotations.records(df))
    elif df.empty:
        print("no annotations")
    else:
        print(df.to_string(index=False))
    return 0


def run_delete(args: argparse.Namespace) -> int:
    _show(annotations.delete_annotation(Store(args.store), args.annotation_id, args.author), "deleted", args.json)
    return 0


def run_tags(args: argparse.Namespace) -> int:
    if args.json:
        print_json(annotations.VOCABULARY)
    else:
        for tag, meaning in annotations.VOCABULARY.items():
            print(f"{tag:30s} {meaning}")
    return 0
