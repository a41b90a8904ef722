"""``trajaudit ingest PATH...``: read evaluation outputs into the store (store.ingest)."""

from __future__ import annotations

import argparse
import sys

from backend.cli.common import add_json, command, print_json
from store import samplers
from store.ingest import FORMATS, IngestSummary, ingest_paths


def register(subparsers: argparse._SubParsersAction) -> None:
    p = command(
        subparsers,
        "ingest",
        "Read per-item evaluation outputs into the store. Re-ingesting a file adds nothing; "
        "rows that contradict the store are refused unless --replace.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="result files, or folders: every result file under them is taken (dot folders such as lmms-eval's "
        "..__<model> included)",
    )
    p.add_argument("--format", default="auto", choices=("auto",) + FORMATS, help="input format (default: detect)")
    p.add_argument("--model", help="model name, where the file does not say it")
    p.add_argument("--benchmark", help="benchmark name, where the file does not say it")
    p.add_argument("--split", help="split name")
    p.add_argument(
        "--config", help="configuration label (text, 16f, 64f@151k, 32f/random-s1) where the file does not say it"
    )
    p.add_argument("--answers", help="answers file (question_id, answer, ...) for the scale-grid wide CSV")
    p.add_argument("--run", default="main", help="repeat id of these responses (default: main)")
    p.add_argument("--replace", action="store_true", help="overwrite stored rows this input contradicts")
    p.add_argument(
        "--map",
        action="append",
        metavar="FIELD=SOURCE[,FIELD=SOURCE...]",
        help="read a per-item file with its own key names as the generic table: FIELD (item_id, model, benchmark, "
        "config, correct (0/1 or a verdict: correct/incorrect, yes/no), score, prediction, target, options, confidence, task_type, question, video, duration, frames = the "
        "logged frame indices, ...) from a "
        "column or JSON key (dotted for nested keys); FIELD=A+B joins sources with '/'. Repeatable.",
    )
    p.add_argument(
        "--sampler",
        metavar="|".join(samplers.NAMES),
        help="the harness's frame sampler, for files that log no frame indices: the frames each response saw are then "
        "reconstructed from the linked video's frame count (notes/VIDEOS.md); without it they are unknown",
    )
    p.add_argument(
        "--score-scale",
        metavar="MIN:MAX",
        help="the scale of the files' `score` (a judge's 1:5): mapped linearly onto 0..1 and recorded as score_source "
        "judge; a score outside it is refused (default: scores are fractions in [0, 1])",
    )
    p.add_argument(
        "--records",
        metavar="PATH",
        help="a JSONPath matching every record of a nested JSON document, e.g. '$.*.*[*]' or '$[*][1]' "
        "(docs/formats.md, Record paths); implies --format table",
    )
    p.add_argument(
        "--record-keys",
        metavar="NAME[,NAME...]",
        help="the dictionary keys enclosing each --records match become these fields (innermost keys, outermost "
        "first): '$.*.*[*]' with video_id,dim",
    )
    p.add_argument(
        "--merge",
        action="append",
        metavar="NAME=PATH",
        help="put the object PATH matches beside each record under NAME, read by --map dotted "
        "(--merge 'judge=$[*][0]' --map correct=judge.verdict); repeatable",
    )
    p.add_argument(
        "--force-config",
        action="store_true",
        help="let --config override the budget a file's harness logged (max_frames_num, a dataset's _16frame); "
        "without it a different --config is refused",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="read and check everything as the ingest would (repeated keys across files, changed values against the "
        "store: refused in the same line), list each file's rows and configuration; write nothing",
    )
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    summary = ingest_paths(
        args.store,
        args.paths,
        format=args.format,
        model=args.model,
        benchmark=args.benchmark,
        split=args.split,
        config=args.config,
        answers=args.answers,
        run=args.run,
        replace=args.replace,
        progress=sys.stderr.isatty(),
        field_map=args.map,
        sampler=args.sampler,
        score_scale=args.score_scale,
        dry_run=args.dry_run,
        force_config=args.force_config,
        records=args.records,
        record_keys=args.record_keys,
        merge=args.merge,
    )
    if args.json:
        print_json(summary)
    else:
        print(format_summary(summary))
    return 0


def _flags_text(flagged: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in flagged.items()) or "none"


def _scores_text(scores: dict[str, int]) -> str:
    return "; scores: " + ", ".join(f"{k} {v}" for k, v in scores.items()) if scores else ""


def _frames_text(frames: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in frames.items()) or "none (text only)"


SHOWN_NAMES = 10  # names a summary line lists before "… and N more" (100k labels made a 1 MB line)


def _names(names: list[str]) -> str:
    """``names`` joined, the first ``SHOWN_NAMES`` of them and how many more (``--json`` lists them all)."""
    more = len(names) - SHOWN_NAMES
    return ", ".join(names[:SHOWN_NAMES]) + (f" … and {more:,} more" if more > 0 else "")


def format_summary(s: IngestSummary) -> str:
    """Human-readable summary: one line per file, then the totals, then the notes (what ingest changed)."""
    notes = [f"note: {n}" for n in s.notes]
    if s.dry_run:
        lines = [
            f"{f.path} ({f.format}{'; ' + f.config_hint if f.config_hint else ''}): {f.rows} rows as "
            f"{_names(f.configs)}; frames {_frames_text(f.frames)}; flagged: {_flags_text(f.flagged)}"
            for f in s.files
        ]
        lines.append(
            f"dry run: {len(s.files)} file(s), {s.rows} rows would be read: {s.new} new, {s.already_stored} already "
            f"stored, {s.replaced} replaced, {s.duplicates} duplicate; {len(s.skipped)} other file(s) "
            f"skipped{_scores_text(s.scores)}; checks passed, nothing written (store version {s.store_version})"
        )
        return "\n".join(lines + notes)
    lines = [
        f"{f.path} ({f.format}{'; ' + f.config_hint if f.config_hint else ''}): {f.rows} rows, {f.new} new, {f.already_stored} already stored, "
        f"{f.replaced} replaced, {f.duplicates} duplicate; frames {_frames_text(f.frames)}; flagged: {_flags_text(f.flagged)}"
        for f in s.files
    ]
    lines.append(
        f"total: {s.rows} rows, {s.new} new, {s.already_stored} already stored, {s.replaced} replaced, "
        f"{s.duplicates} duplicate; flagged: {_flags_text(s.flagged)}{_scores_text(s.scores)}; "
        f"{s.items_written} item rows written"
    )
    lines.append(f"models: {_names(s.models)}; benchmarks: {_names(s.benchmarks)}; configs: {_names(s.configs)}")
    lines.append(f"store version {s.store_version}")
    return "\n".join(lines + notes)
