"""Ingesters: turn other people's evaluation outputs into the store's long form (FORMATS.md).

One module per input format (``table``, ``lmms_eval``, ``vlmevalkit``, ``videomme``,
``scalegrid``), each with ``read(path, options) -> Batch``; ``common`` holds the rules every format
shares and ``publish`` the checked, atomic write. :func:`ingest_paths` reads every file first
(any bad input raises before the store is touched), then publishes them all in one write.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from msgspec import field
from tqdm import tqdm

from store import configs, samplers
from store.contract import Contract, doc
from store.errors import UserError
from store.ingest import frames, gate, lmms_eval, mapping, scalegrid, scores, table, videomme, vlmevalkit, walk
from store.ingest import records as record_paths
from store.ingest.common import Batch, IngestOptions, checked_utf8, load_json
from store.ingest.publish import FileResult, Published, check_batches, publish_batches
from store.store import Store

READERS: dict[str, Callable[[Path, IngestOptions], Batch]] = {
    "table": table.read,
    "lmms-eval": lmms_eval.read,
    "vlmevalkit": vlmevalkit.read,
    "videomme": videomme.read,
    "scalegrid": scalegrid.read,
}
FORMATS = tuple(READERS)
_HEAD_BYTES = 1 << 16


class IngestSummary(Contract, kw_only=True):
    """``trajaudit ingest --json``: what one ingest read and wrote."""

    files: Annotated[list[FileResult], doc("per input file, what it added")]
    rows: Annotated[int, doc("responses read")]
    new: Annotated[int, doc("responses written")]
    already_stored: Annotated[int, doc("responses the store held already")]
    replaced: Annotated[int, doc("stored responses replaced (--replace)")]
    duplicates: Annotated[int, doc("responses repeated within the input")]
    flagged: Annotated[dict[str, int], doc("per quality flag, its responses")]
    scores: Annotated[
        dict[str, int],
        doc("responses read per score source (file, judge, token_f1; store.ingest.scores); unscored ones uncounted"),
    ]
    models: Annotated[list[str], doc("the models read")]
    benchmarks: Annotated[list[str], doc("the benchmarks read")]
    configs: Annotated[list[str], doc("the configurations read")]
    items_written: Annotated[int, doc("item rows written or updated")]
    store_version: Annotated[int, doc("the store's version after the write")]
    dry_run: Annotated[bool, doc("true for --dry-run: read and checked, nothing written (new, items_written 0)")] = (
        False
    )
    skipped: Annotated[list[str], doc("files under a folder given that are no result file")] = field(
        default_factory=list
    )
    notes: Annotated[
        list[str],
        doc("what ingest changed that the counts do not show, each after its file (ids stripped of spaces)"),
    ] = field(default_factory=list)


def detect(path: Path) -> str:
    """The format of ``path`` from its extension and its first bytes (FORMATS.md)."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a folder; pass the result files inside it")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "table"
    if suffix == ".xlsx":
        return "vlmevalkit"
    head = _head(path)
    if suffix == ".tsv":
        return "table" if "item_id" in head.split("\n", 1)[0].split("\t") else "vlmevalkit"
    if suffix in (".jsonl", ".ndjson"):
        first = _first_json_line(path, head)
        if lmms_eval.looks_like(first):
            return "lmms-eval"
        if "item_id" in first:
            return "table"
    elif suffix == ".json":
        start = head.lstrip()[:1]
        if start == "{" and '"logs"' in head:
            return "lmms-eval"
        if videomme.looks_like(head):
            return "videomme"
        if '"item_id"' in head:  # the generic table as a JSON array (or an object holding one)
            return "table"
        if '"prediction"' in head:
            return "vlmevalkit"
        if '"accuracy_by_config"' in head:
            raise UserError(
                f"{path}: a scale-grid summary (per-cell numbers), not per-item data; ingest the *_predictions_wide.csv beside it"
            )
    elif suffix == ".csv":
        header = next(csv.reader([head.split("\n", 1)[0]]), [])
        if {"sample_id", "predicted_option"} <= set(header):
            return "scalegrid"
        if path.name.endswith("_predictions_wide.csv") or scalegrid.is_wide_header(header):
            return "scalegrid"
        if "item_id" in header:
            return "table"
    raise UserError(
        f"{path}: cannot tell the format from its name and first line; pass --format ({', '.join(FORMATS)}). "
        "A long table needs columns model, benchmark, item_id, config and correct (or prediction and target); "
        "a file with its own names can be read with --map FIELD=SOURCE."
    )


def _head(path: Path) -> str:
    with open(path, "rb") as f:
        return checked_utf8(path, f.read(_HEAD_BYTES), peek=True).decode("utf-8")


def _first_json_line(path: Path, head: str) -> dict:
    lines = head.split("\n")
    for n, line in enumerate(lines, 1):
        if line.strip():
            if n == len(lines) and path.stat().st_size > _HEAD_BYTES:
                line = _whole_line(path, n)  # longer than the peek: read it all, as the reader will
            obj = load_json(path, line, n, constants=True)  # the reader applies its own rules
            return obj if isinstance(obj, dict) else {}
    return {}


def _whole_line(path: Path, n: int) -> str:
    """Line ``n`` of the file, however long (within the ingest file-size limit)."""
    gate.check_file_size(path)
    with open(path, "rb") as f:
        for i, raw in enumerate(f, 1):
            if i == n:
                return (raw[3:] if i == 1 and raw.startswith(b"\xef\xbb\xbf") else raw).decode("utf-8", "replace")
    return ""


def ingest_paths(
    store: Store | str | os.PathLike,
    paths: list[str | os.PathLike],
    *,
    format: str = "auto",
    model: str | None = None,
    benchmark: str | None = None,
    split: str | None = None,
    config: str | None = None,
    answers: str | os.PathLike | None = None,
    run: str = "main",
    replace: bool = False,
    progress: bool = False,
    field_map: list[str] | str | None = None,
    sampler: str | None = None,
    score_scale: str | None = None,
    dry_run: bool = False,
    force_config: bool = False,
    records: str | None = None,
    record_keys: str | None = None,
    merge: list[str] | None = None,
) -> IngestSummary:
    """Read every file, then publish them in one checked write; raises UserError on bad input
    (the store is then untouched). A folder stands for the result files under it
    (``store.ingest.walk``). ``field_map``: ``--map`` specs for the generic table
    (``store.ingest.mapping``); with ``format="auto"`` they make every file a generic table.
    ``sampler``: the harness's frame sampler for files that log no frames (``store.samplers``).
    ``score_scale``: ``"MIN:MAX"``, the scale of the files' ``score`` (``store.ingest.scores``).
    ``dry_run``: read and check everything, write nothing (the summary says what would be written).
    ``force_config``: let ``config`` override a budget the harness logged (refused otherwise).
    ``records``, ``record_keys``, ``merge``: where the records sit in a nested JSON document and what
    encloses them (``store.ingest.records``); like ``field_map`` they make every file a generic table."""
    store = store if isinstance(store, Store) else Store(store)
    if not paths:
        raise UserError("no files to ingest")
    if sampler is not None:
        samplers.check(sampler)
    scale = scores.parse_scale(score_scale)
    files, skipped = walk.expand([Path(p) for p in paths], detect)
    if format != "auto" and format not in READERS:
        raise UserError(f"unknown format {format!r}; expected auto or one of {', '.join(FORMATS)}")
    if config is not None:
        try:
            config = configs.canonical(config)
        except configs.ConfigLabelError as exc:
            raise UserError(f"--config: {exc}") from None
    if answers is not None and not Path(answers).is_file():
        raise UserError(f"--answers {answers}: no such file")
    fields = mapping.parse(field_map, table.MAP_FIELDS)
    if fields and format not in ("auto", "table"):
        raise UserError(f"--map reads the generic table; it does not apply to --format {format}")
    spec = record_paths.parse(records, record_keys, merge)
    if spec and format not in ("auto", "table"):
        raise UserError(f"--records reads the generic table; it does not apply to --format {format}")
    opts = IngestOptions(
        model,
        benchmark,
        split,
        config,
        Path(answers) if answers else None,
        run or "main",
        progress,
        fields,
        sampler,
        scale,
        force_config,
        spec,
    )
    chosen = "table" if (fields or spec) and format == "auto" else format
    batches = []
    for path in tqdm(files, desc="reading", disable=not progress or len(files) < 2):
        fmt = detect(path) if chosen == "auto" else chosen
        if not path.is_file():
            raise UserError(f"{path}: no such file")
        gate.check_file_size(path)
        batch = READERS[fmt](path, opts)
        frames.check_catalog(store, path, batch.rows, batch.line_word)
        batches.append(batch)
    if dry_run:
        planned = check_batches(store, batches, replace=replace)
        return _summary(planned, batches, [str(p) for p in skipped], dry_run=True)
    options = {
        "format": format,
        "model": model,
        "benchmark": benchmark,
        "split": split,
        "config": config,
        "answers": str(answers) if answers else None,
        "run": run,
        "replace": replace,
        "map": {f: "+".join(src) for f, src in fields},
        "sampler": sampler,
        "score_scale": list(scale) if scale else None,
        "force_config": force_config,
        "records": records,
        "record_keys": record_keys,
        "merge": merge,
    }
    done = publish_batches(store, batches, replace=replace, options=options)
    return _summary(done, batches, [str(p) for p in skipped], dry_run=False)


def _summary(done: Published, batches: list, skipped: list[str], *, dry_run: bool) -> IngestSummary:
    """The summary of a write, or of a dry run's checks (the same counts, nothing written)."""
    flagged: Counter[str] = Counter()
    for f in done.files:
        flagged.update(f.flagged)
    return IngestSummary(
        files=done.files,
        rows=sum(f.rows for f in done.files),
        new=sum(f.new for f in done.files),
        already_stored=sum(f.already_stored for f in done.files),
        replaced=sum(f.replaced for f in done.files),
        duplicates=sum(f.duplicates for f in done.files),
        flagged=dict(sorted(flagged.items())),
        **_read_keys(batches),
        items_written=done.items_written,
        store_version=done.version,
        dry_run=dry_run,
        skipped=skipped,
    )


def _read_keys(batches: list) -> dict:
    """The models, benchmarks and configurations the batches hold, their scored rows per source, and the notes
    of what reading them changed (ids stripped of spaces: ``common.make_batch``), each after its file."""
    rows = [b.rows for b in batches]
    sources: Counter[str] = Counter()
    for r in rows:
        if "score_source" in r:
            sources.update(r["score_source"].dropna().value_counts().to_dict())
    return {
        "scores": {k: int(sources[k]) for k in scores.SOURCES if sources.get(k, 0)},
        "models": sorted({m for r in rows for m in r["model"].unique()}),
        "benchmarks": sorted({b for r in rows for b in r["benchmark"].unique()}),
        "configs": configs.order([c for r in rows for c in r["config"].unique()]),
        "notes": [f"{b.path}: {note}" for b in batches for note in b.settings.get("notes", [])],
    }


__all__ = ["FORMATS", "IngestOptions", "IngestSummary", "detect", "ingest_paths"]
