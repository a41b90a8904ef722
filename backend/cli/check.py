"""``trajaudit check`` and ``trajaudit repair``: verify a store, and make a damaged one readable (store.health).

Exit codes: ``check`` 0 when the store is sound (orphaned temporary files are listed but harmless),
1 when something is wrong (the report says what), 2 when there is no store to look at; ``repair``
0 when the store is readable afterwards, 2 when it cannot be repaired safely (the message says why
and what to do; nothing was changed).
"""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, command, print_json
from store.health import check, repair
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "check",
        "Verify manifest.json and every listed Parquet file (exists, readable, table schema, "
        "recorded row count). Exit 0 when sound, 1 when not (run `trajaudit repair`).",
    )
    p.add_argument("--deep", action="store_true", help="decode every file completely, not just its footer")
    add_json(p)
    p.set_defaults(func=run_check)
    p = command(
        sub,
        "repair",
        "Drop manifest entries whose files are missing or unreadable (moved to damaged/), "
        "rebuild a corrupt manifest from the Parquet files on disk, remove files a killed writer left.",
    )
    add_json(p)
    p.set_defaults(func=run_repair)


def run_check(args: argparse.Namespace) -> int:
    report = check(Store(args.store), deep=args.deep)
    if args.json:
        print_json(report.to_dict())
    else:
        state = "sound" if report.sound else f"NOT sound: {len(report.problems)} problem(s); run `trajaudit repair`"
        print(f"{report.store}: {state} (version {report.version}, {report.files} files, rows {report.rows})")
        for p in report.problems:
            print(f"  {p.file}: {p.problem}" + (f" ({p.rows} rows)" if p.rows is not None else ""))
        if report.orphans:
            print(
                f"  {len(report.orphans)} file(s) left by an interrupted write (harmless; `trajaudit repair` removes them)"
            )
    return 0 if report.sound else 1


def run_repair(args: argparse.Namespace) -> int:
    out = repair(Store(args.store))
    if args.json:
        print_json(out.to_dict())
        return 0
    if not out.changed:
        print(f"{out.store}: nothing to repair")
        return 0
    if out.rebuilt_manifest:
        print(f"manifest rebuilt from {len(out.taken)} intact file(s) on disk (version {out.version})")
    for p in out.dropped:
        print(f"dropped {p.file}: {p.problem}")
    if out.dropped:
        unknown = f" (+ {out.responses_lost_unknown} file(s) of unknown size)" if out.responses_lost_unknown else ""
        print(
            f"responses lost: {out.responses_lost}{unknown}; damaged files kept in {', '.join(out.moved_to_damaged) or '-'}"
        )
    if out.removed_orphans:
        print(f"removed {len(out.removed_orphans)} file(s) left by an interrupted write")
    return 0
