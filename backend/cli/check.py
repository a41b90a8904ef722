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
        "Drop manifest entries whose files are missing or unreadable (moved to damaged/), restore a lost or "
        "corrupt manifest from the write log (log/), publish a committed write the manifest missed, move files of "
        "writes that never committed to damaged/. Deletes only temporary files.",
    )
    p.add_argument(
        "--take-all",
        action="store_true",
        help="with no manifest and no write log (a store written before trajaudit kept one): take every intact "
        "file, a killed write's too",
    )
    add_json(p)
    p.set_defaults(func=run_repair)


def run_check(args: argparse.Namespace) -> int:
    report = check(Store(args.store), deep=args.deep)
    if args.json:
        print_json(report)
    else:
        state = "sound" if report.sound else f"NOT sound: {len(report.problems)} problem(s); run `trajaudit repair`"
        print(f"{report.store}: {state} (version {report.version}, {report.files} files, rows {report.rows})")
        for p in report.problems:
            print(f"  {p.file}: {p.problem}" + (f" ({p.rows} rows)" if p.rows is not None else ""))
        if report.orphans:
            print(
                f"  {len(report.orphans)} file(s) no manifest entry lists (harmless to readers; `trajaudit repair` "
                "deletes temporary files, records retired ones and moves a killed write's to damaged/)"
            )
    return 0 if report.sound else 1


def run_repair(args: argparse.Namespace) -> int:
    out = repair(Store(args.store), take_all=args.take_all)
    if args.json:
        print_json(out)
        return 0
    if not out.changed:
        print(f"{out.store}: nothing to repair")
        return 0
    if out.restored_from:
        print(f"manifest restored from the write log ({out.restored_from}; now version {out.version})")
    elif out.rebuilt_manifest:
        print(f"manifest rebuilt from {len(out.taken)} intact file(s) on disk (version {out.version})")
    if out.rolled_forward:
        print(f"published {out.rolled_forward} committed write(s) the manifest did not show yet")
    for p in out.dropped:
        print(f"dropped {p.file}: {p.problem}")
    if out.dropped:
        unknown = f" (+ {out.responses_lost_unknown} file(s) of unknown size)" if out.responses_lost_unknown else ""
        print(
            f"responses lost: {out.responses_lost}{unknown}; damaged files kept in {', '.join(out.moved_to_damaged) or '-'}"
        )
    for p in out.set_aside:
        print(f"set aside {p.file} ({_rows(p.rows)}): {p.problem}")
    if out.retired_recorded:
        print(f"recorded {len(out.retired_recorded)} retired file(s) for deletion after the grace period")
    if out.removed_orphans:
        print(f"removed {len(out.removed_orphans)} temporary file(s) or link(s) left by an interrupted write")
    kept = ", ".join(f"{t} {n:,}" for t, n in out.kept_rows.items() if n)
    print(f"rows kept: {kept or 'none'}; set aside in damaged/: {sum(p.rows or 0 for p in out.set_aside):,}")
    return 0


def _rows(n: int | None) -> str:
    return "rows unknown" if n is None else f"{n:,} row{'s' * (n != 1)}"
