"""The store's tables, as Arrow schemas: the contract between writers (ingest, worker, sweep) and readers.

The response matrix is long: one row per (model, benchmark, item, configuration, run). Items, runs
(provenance of each write) and annotations are their own tables. Rates and scores are fractions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:  # a writer's DataFrame is converted by Arrow, which imports pandas itself
    import pandas as pd

TABLES = ("items", "runs", "responses", "annotations", "videos", "history")

ITEMS = pa.schema(
    [
        ("benchmark", pa.string()),
        ("split", pa.string()),
        ("item_id", pa.string()),
        ("question", pa.string()),
        ("options", pa.string()),  # JSON list of option texts, "A. ..." order
        ("target", pa.string()),  # option letter for MCQA; reference text for open-ended
        ("references", pa.string()),  # JSON list of references (open-ended)
        ("answer_type", pa.string()),  # "mcqa" | "open"
        ("task_type", pa.string()),
        ("video", pa.string()),  # video id or path relative to the video root
        ("duration", pa.string()),  # category as the benchmark spells it (short/medium/long)
        ("duration_s", pa.float64()),
        ("domain", pa.string()),
        ("sub_category", pa.string()),
        ("written_at", pa.timestamp("us", tz="UTC")),
        ("seq", pa.int64()),  # the store's write sequence of the write that stored the row (SEQ)
    ]
)

RUNS = pa.schema(
    [
        ("run_id", pa.string()),
        ("origin", pa.string()),  # "ingest" | "demo" | "rerun" | "sweep"
        ("source", pa.string()),  # file path, job id or sweep id
        ("format", pa.string()),
        ("sha256", pa.string()),
        ("args", pa.string()),  # JSON: the command's arguments and parsed harness settings
        ("n_rows", pa.int64()),
        ("code_version", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
    ]
)

RESPONSES = pa.schema(
    [
        ("model", pa.string()),
        ("benchmark", pa.string()),
        ("split", pa.string()),
        ("item_id", pa.string()),
        ("config", pa.string()),  # canonical label (store.configs)
        ("run", pa.string()),  # repeat id within (model, item, config); "main" by default
        ("run_id", pa.string()),  # -> runs.run_id
        ("origin", pa.string()),
        ("raw_output", pa.string()),
        ("answer", pa.string()),  # parsed option letter; null = no answer extracted
        ("correct", pa.int8()),
        ("confidence", pa.float64()),  # probability of the chosen option
        ("score", pa.float64()),  # continuous score in [0, 1] (open-ended)
        ("score_source", pa.string()),  # "file" | "judge" | "token_f1" (store.ingest.scores); null = not recorded
        ("option_probs", pa.string()),  # JSON {letter: prob}, renormalised over the options
        ("letter_mass", pa.float64()),  # total probability on option letters before renormalising
        ("frames", pa.int32()),
        ("pixels", pa.int64()),  # pixels per frame; null = the model's default
        ("policy", pa.string()),
        ("seed", pa.int64()),
        ("frame_indices", pa.list_(pa.int32())),  # logged: what the model saw; null otherwise
        ("frames_source", pa.string()),  # "logged" | "reconstructed" | "unknown" (docs/metrics.md "Frames seen")
        ("sampler", pa.string()),  # the harness sampler named at ingest (store.samplers); reconstructs indices
        ("flags", pa.string()),  # comma-joined: "no-answer", "protocol-note", ...
        ("source_tag", pa.string()),
        ("protocol_note", pa.string()),
        ("provenance", pa.string()),  # JSON: versions, device, dtype, timings, token counts
        ("written_at", pa.timestamp("us", tz="UTC")),  # the writer's clock: for display only (SEQ orders)
        ("seq", pa.int64()),  # the store's write sequence of the write that stored the row (SEQ)
    ]
)

# Responses a ``--replace`` took out of ``responses``: the row as it was stored, and the write that replaced it
# (``trajaudit inspect --history``). Nothing is ever deleted from here.
HISTORY = pa.schema(
    list(RESPONSES)
    + [
        ("replaced_seq", pa.int64()),  # the write sequence of the write that replaced the row
        ("replaced_by", pa.string()),  # the run_id of the rows that replaced it
    ]
)

ANNOTATIONS = pa.schema(
    [
        ("annotation_id", pa.string()),
        ("benchmark", pa.string()),
        ("item_id", pa.string()),
        ("model", pa.string()),  # null = about the item for every model
        ("tag", pa.string()),  # controlled vocabulary (backend.scope.annotations)
        ("note", pa.string()),
        ("author", pa.string()),
        ("deleted", pa.bool_()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("seq", pa.int64()),  # the store's write sequence (SEQ): the latest row of an annotation is the live one
    ]
)

VIDEOS = pa.schema(  # the video catalog (backend.videos): one row per linked item, replaced per benchmark
    [
        ("benchmark", pa.string()),
        ("item_id", pa.string()),
        ("path", pa.string()),  # relative to the video root
        ("status", pa.string()),  # "linked" | "missing" | "unreadable"
        ("n_frames", pa.int64()),
        ("fps", pa.float64()),
        ("duration_s", pa.float64()),
        ("size_bytes", pa.int64()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("layout", pa.string()),  # videomme | mlvu | mvbench | longvideobench | template | paths
        ("linked_at", pa.timestamp("us", tz="UTC")),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "items": ITEMS,
    "runs": RUNS,
    "responses": RESPONSES,
    "annotations": ANNOTATIONS,
    "videos": VIDEOS,
    "history": HISTORY,
}

# Tables whose rows carry ``seq``: the store's own order of writes (``Writer`` stamps it; a compaction or a
# rewrite keeps each row's). "The latest row" anywhere in the store means the highest ``seq``, never the latest
# ``written_at``: wall clocks of two writers disagree, the manifest's version does not.
SEQUENCED = ("items", "responses", "annotations")


def order_key_sql(alias: str = "", time: str = "written_at") -> str:
    """One BIGINT that orders rows as the store wrote them, later is larger: ``seq`` where the row has one,
    else (a row written before ``seq`` was recorded, so before every row that has one) its ``written_at`` in
    microseconds (``time``: ``created_at`` for annotations), else (no time either) last of all. Offsetting ``seq`` by 2**53 puts every sequenced row
    after every timestamp (epoch microseconds stay below 2**53 until the year 2255)."""
    return f"coalesce({alias}seq + 9007199254740992, epoch_us({alias}{time}), 9223372036854775807)"


def order_key(seq: int | None, time_us: int | None) -> int:
    """``order_key_sql`` of one row's values (``time_us``: its time in microseconds since the epoch)."""
    if seq is not None:
        return seq + 9007199254740992
    return time_us if time_us is not None else 9223372036854775807


# The folder under the store root holding a table's files: the table's name, except the catalog's,
# since ``<store>/videos`` is the default video root (the demo's clips live there).
FOLDERS = {"videos": "catalog"}


def folder(table: str) -> str:
    """The store-relative folder of ``table``'s Parquet files."""
    return FOLDERS.get(table, table)


# Nullable columns added after stores were first written: an older file lacks them, and reads as null
# there (the store's views union files by name over the full schema), so it is still a sound file.
ADDED_LATER: dict[str, tuple[str, ...]] = {
    "responses": ("frames_source", "sampler", "score_source", "seq"),
    "items": ("seq",),
    "annotations": ("seq",),
}


def fits(table: str, file_schema: pa.Schema) -> bool:
    """Whether a Parquet file's schema is ``table``'s, or an older one lacking only ``ADDED_LATER`` columns."""
    full = SCHEMAS[table].remove_metadata()
    got = file_schema.remove_metadata()
    if got.equals(full):
        return True
    later = ADDED_LATER.get(table, ())
    older = pa.schema([f for f in full if f.name not in later or f.name in got.names])
    return got.equals(older)


RESPONSE_KEY = ["model", "benchmark", "item_id", "config", "run"]
ITEM_KEY = ["benchmark", "item_id"]


def newer_columns(table: str, found: pa.Schema) -> list[str]:
    """The columns a file adds to its table's schema when it otherwise fits: a newer trajaudit's file (which
    no repair may move aside), not a damaged one. Empty when there are none or the file does not fit anyway."""
    extra = [n for n in found.names if n not in SCHEMAS[table].names]
    rest = pa.schema([f for f in found.remove_metadata() if f.name not in extra])
    return extra if extra and fits(table, rest) else []


def schema_problem(table: str, found: pa.Schema) -> str | None:
    """How a file's schema differs from its table's (missing, extra or retyped columns), or None.

    ``check`` and the reader share it, so a Parquet file that does not fit is named the same way
    whether it is found by ``trajaudit check`` or by the next ``metrics``.
    """
    want = SCHEMAS[table]
    if fits(table, found):
        return None
    names = set(found.names)
    missing = [f.name for f in want if f.name not in names and f.name not in ADDED_LATER.get(table, ())]
    extra = [n for n in found.names if n not in set(want.names)]
    retyped = [
        f"{f.name} is {found.field(f.name).type}, not {f.type}"
        for f in want
        if f.name in names and found.field(f.name).type != f.type
    ]
    parts = ([f"missing columns {missing}"] if missing else []) + ([f"unknown columns {extra}"] if extra else [])
    return f"schema differs from the {table} table's: " + "; ".join(parts + retyped or ["columns out of order"])


class SchemaError(ValueError):
    """A batch that does not fit its table."""


def conform(table: str, data: pd.DataFrame | pa.Table) -> pa.Table:
    """Cast a batch to the table's schema, adding absent optional columns as nulls.

    Writers build DataFrames with only the columns they know; this is the one place that makes
    them fit, so a reader never meets a file with a different schema.
    """
    schema = SCHEMAS[table]
    if not isinstance(data, pa.Table):  # a DataFrame
        data = pa.Table.from_pandas(data, preserve_index=False)
    unknown = set(data.column_names) - set(schema.names)
    if unknown:
        raise SchemaError(f"{table}: unknown columns {sorted(unknown)}")
    cols = []
    for field in schema:
        if field.name in data.column_names:
            col = data.column(field.name)
            try:
                col = col.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f"{table}.{field.name}: cannot store as {field.type}: {exc}") from exc
        else:
            col = pa.nulls(data.num_rows, type=field.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)
