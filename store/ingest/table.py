"""The generic long table (CSV, Parquet, JSONL): one row per response (FORMATS.md).

Required: ``model, benchmark, item_id, config`` (each may instead come from the command line) and
either ``correct`` (0/1) or both ``prediction`` and ``target``. Optional: ``confidence``, ``score``,
``letter_mass`` (numbers in [0, 1]), ``option_probs`` (JSON {letter: probability}), ``task_type``, ``question``, ``options`` (JSON list), ``video``, ``duration``, ``domain``,
``sub_category``, ``split``, ``run``. Any other column is kept, per row, in ``provenance``.

Everything is column-wise (pyarrow parsing, pandas / DuckDB operations); the only per-value Python
is answer extraction on distinct non-trivial prediction texts (see ``common.extract_answers``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from store.ingest import gate
from store.ingest.common import Batch, IngestOptions, fail, json_rows, make_batch, read_text_bytes, require_columns

FORMAT = "table"
KEY_COLUMNS = ["model", "benchmark", "item_id", "config"]
STRING_COLUMNS = KEY_COLUMNS + [
    "split", "run", "prediction", "target", "task_type", "question", "options", "video", "duration",
    "domain", "sub_category", "source_tag", "protocol_note", "option_probs",
]  # fmt: skip
FLOAT_COLUMNS = ["confidence", "score", "letter_mass"]  # parsed and range-checked by the gate
KNOWN = set(STRING_COLUMNS) | set(FLOAT_COLUMNS) | {"correct"}


def read(path: Path, opts: IngestOptions) -> Batch:
    df = _load(path)
    given = {"model": opts.model, "benchmark": opts.benchmark, "config": opts.config}
    require_columns(path, df.columns, [c for c in KEY_COLUMNS if given.get(c) is None], "a long table")
    if "correct" not in df:
        require_columns(path, df.columns, ["prediction", "target"], "a long table without `correct`")
    for col in STRING_COLUMNS:
        if col in df and df[col].dtype != "str":
            df[col] = df[col].astype("str")
    rows = df[[c for c in df.columns if c in KNOWN]].rename(columns={"prediction": "raw_output"})
    rows["_line"] = np.arange(len(df)) + (1 if path.suffix.lower() in (".jsonl", ".parquet") else 2)
    if "correct" in rows:
        rows["correct"] = _zero_one(path, rows["correct"], rows["_line"])
    if "options" in rows:
        _check_options(path, rows)
    extra = [c for c in df.columns if c not in KNOWN]
    if extra:
        rows["provenance"] = json_rows(df[extra])
    word = "row" if path.suffix.lower() == ".parquet" else "line"
    return make_batch(path, FORMAT, rows, opts, {"extra_columns": extra}, line_word=word)


def _load(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise fail(path, f"not a readable Parquet file ({exc})") from None
        if table.num_rows == 0:
            raise fail(path, "empty file (no rows)")
        return _decode_dictionaries(table).to_pandas()
    data = read_text_bytes(path)
    if suffix == ".jsonl":
        return _load_jsonl(path, data)
    # Numbers are read as text so the gate can name the line of a bad one (Arrow's own parse cannot).
    table = gate.read_csv(path, data, strings=STRING_COLUMNS + FLOAT_COLUMNS)
    if table.num_rows == 0:
        raise fail(path, "empty table (a header and no rows)")
    return table.to_pandas()


def _decode_dictionaries(table: pa.Table) -> pa.Table:
    """Dictionary (categorical) columns as plain values: Arrow's cast is C++, pandas' is per element."""
    fields = [
        pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def _load_jsonl(path: Path, data: bytes) -> pd.DataFrame:
    text = data.decode("utf-8")
    try:
        df = pd.read_json(io.StringIO(text), lines=True, dtype=False, precise_float=True)
    except ValueError:
        # Only on failure: find the first bad line so the message can name it.
        for n, line in enumerate(text.split("\n"), 1):
            if line.strip():
                try:
                    json.loads(line)
                except json.JSONDecodeError as exc:
                    raise fail(path, f"not valid JSON ({exc.msg}, column {exc.colno})", n) from None
        raise fail(path, "not a JSON Lines table") from None
    if df.empty:
        raise fail(path, "empty file (no rows)")
    return df


def _zero_one(path: Path, values: pd.Series, lines: pd.Series) -> pd.Series:
    """0/1, true/false (any case) -> Int8; anything else is refused with its line.

    The spelling is checked once per distinct value (factorize), not once per row.
    """
    if values.dtype == bool:
        return values.astype("int8")
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    spelled = pd.Series(uniques, dtype="object").astype("str").str.strip().str.lower()
    mapped = spelled.map({"0": 0, "1": 1, "0.0": 0, "1.0": 1, "true": 1, "false": 0})
    bad = np.flatnonzero(mapped.isna().to_numpy())
    if bad.size:
        i = int(np.flatnonzero(np.isin(codes, bad))[0])
        raise fail(path, f"`correct` must be 0 or 1, got {str(values.iloc[i])!r}", lines.iloc[i])
    out = np.where(codes >= 0, mapped.to_numpy(dtype="float64")[np.maximum(codes, 0)], np.nan)
    return pd.Series(out, index=values.index).astype("Int8")


def _check_options(path: Path, rows: pd.DataFrame) -> None:
    for value in rows["options"].dropna().unique():
        try:
            ok = isinstance(json.loads(value), list)
        except json.JSONDecodeError:
            ok = False
        if not ok:
            line = rows.loc[rows["options"] == value, "_line"].iloc[0]
            raise fail(path, f"`options` must be a JSON list of option texts, got {value[:80]!r}", line)
