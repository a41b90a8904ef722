"""The generic long table: one row per response (FORMATS.md), in CSV, TSV, Parquet, JSON Lines, a
JSON array of objects, or a JSON object holding one such array.

Required: ``model, benchmark, item_id, config`` (each may instead come from the command line) and
either ``correct`` (bool, 0/1, true/false, or a judge's verdict word: ``store.ingest.scores``) or
both ``prediction`` and ``target``. Optional: ``confidence``, ``letter_mass`` (numbers in [0, 1]),
``score`` (in [0, 1], or on the scale ``--score-scale`` declares), ``option_probs`` (JSON {letter:
probability}), ``task_type``, ``question``, ``options``, ``video``, ``duration``, ``domain``,
``sub_category``, ``split``, ``run``. Any other column is kept, per row, in ``provenance``. A file
with its own key names is read through ``--map`` (``store.ingest.mapping``), a nested JSON document through
``--records`` (``store.ingest.records``).

``options`` is a list of option texts (letters A, B, C... assigned in order) or of lettered strings
(``"A. Apples"``), stored as lettered strings. A ``target`` that is not a letter is matched to the
option whose text equals it after trimming (numbers compared as text); a target matching no option
of its row is refused. A given ``correct`` is used as is; where a prediction and a letter target
also exist, a disagreement with the extracted answer is flagged ``harness-mismatch``.

Everything is column-wise (pyarrow parsing, pandas / DuckDB operations); the only per-value Python
is on distinct values: answer extraction, option lists, (options, target) pairs.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from store.answers import LETTERS, is_letter, letter_or_text, split_lettered, with_letters
from store.ingest import gate, jsontext, mapping, records, scores
from store.ingest.common import (
    Batch,
    IngestOptions,
    as_text,
    fail,
    json_rows,
    load_json,
    make_batch,
    read_text_bytes,
    require_columns,
)

FORMAT = "table"
KEY_COLUMNS = ["model", "benchmark", "item_id", "config"]
STRING_COLUMNS = KEY_COLUMNS + [
    "split", "run", "prediction", "target", "task_type", "question", "options", "video", "duration",
    "domain", "sub_category", "source_tag", "protocol_note", "option_probs", "answer_type",
]  # fmt: skip
FLOAT_COLUMNS = ["confidence", "score", "letter_mass"]  # parsed and range-checked by the gate
KNOWN = set(STRING_COLUMNS) | set(FLOAT_COLUMNS) | {"correct", "frame_indices"}
# --map fields: the columns above, and ``frames``: the logged frame indices (a list, or JSON list text),
# ``--map frames=KEY`` (store.ingest.frames); a native ``frames`` column stays provenance (often a count).
MAP_FIELDS = KNOWN | {"frames"}


def read(path: Path, opts: IngestOptions) -> Batch:
    df, lines, word = _load(path, opts.records)
    fields, rest = mapping.apply(path, df, opts.field_map) if opts.field_map else (df.iloc[:, :0], df)
    mapped = set(fields) | ({"frame_indices"} if "frames" in fields else set())  # --map frames=KEY names them
    native = [c for c in rest.columns if c in KNOWN and c not in mapped]
    extra = [c for c in rest.columns if c not in native]  # a column named like a mapped field lands here
    known = pd.concat([fields, rest[native]], axis=1)
    given = {"model": opts.model, "benchmark": opts.benchmark, "config": opts.config}
    hint = (
        "map them with --map FIELD=SOURCE"
        if not opts.field_map
        else "map them too, or pass --model/--benchmark/--config"
    )
    require_columns(
        path, known.columns, [c for c in KEY_COLUMNS if given.get(c) is None], "a long table", hint, df.columns
    )
    if "correct" not in known:
        require_columns(
            path, known.columns, ["prediction", "target"], "a long table without `correct`", hint, df.columns
        )
    lists = ("options", "option_probs", "frames")  # fields that hold a list by design (frames: logged indices)
    gate.scalars(path, known, [c for c in known.columns if c not in lists], lines, word)
    for col in STRING_COLUMNS:
        if col in known:
            known[col] = as_text(known[col])
    rows = known.rename(columns={"prediction": "raw_output", "frames": "frame_indices"})
    rows["_line"] = lines
    if "correct" in rows:
        rows["correct"] = scores.verdicts(path, rows["correct"], rows["_line"], word)
    if "options" in rows:
        o_codes, texts = _options(path, rows, word)
        if "target" in rows:
            rows["target"] = _targets(path, rows, o_codes, texts, word)
    if extra:
        rows["provenance"] = json_rows(rest[extra])
    settings = {"extra_columns": extra, "map": dict(opts.field_map)}
    if opts.records:
        settings["records"] = dataclasses.asdict(opts.records)
    return make_batch(path, FORMAT, rows, opts, settings, line_word=word)


def _load(path: Path, spec: records.RecordPath | None = None) -> tuple[pd.DataFrame, np.ndarray, str]:
    """(the file's columns, each row's line / record / row number, the word for it); ``spec``: the records of a
    nested JSON document (``store.ingest.records``)."""
    suffix = path.suffix.lower()
    if spec is not None:
        if suffix not in (".json", ".jsonl", ".ndjson") and read_text_bytes(path).lstrip()[:1] not in (b"[", b"{"):
            raise fail(path, "--records reads a JSON document; this file is not one")
        found = records.select(path, load_json(path, read_text_bytes(path).decode("utf-8")), spec)
        return _records(path, found, np.arange(len(found)) + 1, "record", "expected a JSON object")
    if suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise fail(path, f"not a readable Parquet file ({exc})") from None
        if table.num_rows == 0:
            raise fail(path, "empty file (no rows)")
        _refuse_nan(path, table)
        return _decode_dictionaries(table).to_pandas(), np.arange(table.num_rows) + 1, "row"
    data = read_text_bytes(path)
    text = data.decode("utf-8")
    start = text.lstrip()[:1]
    if suffix in (".jsonl", ".ndjson") or (start == "{" and suffix != ".json"):
        return _json_lines(path, text)
    if start in ("[", "{"):
        return _json_document(path, text)
    # Numbers are read as text so the gate can name the line of a bad one (Arrow's own parse cannot);
    # only an empty cell is missing (Arrow would also read NaN, NA, null... as missing).
    table = gate.read_csv(
        path,
        data,
        delimiter="\t" if suffix == ".tsv" else ",",
        strings=STRING_COLUMNS + FLOAT_COLUMNS,
        null_values=[""],
    )
    if table.num_rows == 0:
        raise fail(path, "empty table (a header and no rows)")
    return table.to_pandas(), np.arange(table.num_rows) + 2, "line"


def _refuse_nan(path: Path, table: pa.Table) -> None:
    """A NaN in a Parquet number column is refused (pandas would read it as missing, like a null)."""
    for name in FLOAT_COLUMNS:
        if name in table.column_names and pa.types.is_floating(table.schema.field(name).type):
            nan = pc.fill_null(pc.is_nan(table[name]), False)
            if pc.any(nan).as_py():
                row = pc.index(nan, True).as_py() + 1
                raise fail(path, f"`{name}` is NaN; leave it empty (null) for none", row, "row")


def _decode_dictionaries(table: pa.Table) -> pa.Table:
    """Dictionary (categorical) columns as plain values: Arrow's cast is C++, pandas' is per element."""
    fields = [pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in table.schema]
    return table.cast(pa.schema(fields))


def _json_lines(path: Path, text: str) -> tuple[pd.DataFrame, np.ndarray, str]:
    """One JSON object per line, parsed in one call; the line of a bad one is found only on failure."""
    lines = np.asarray(text.split("\n"), dtype=object)
    keep = np.flatnonzero(pd.Series(lines, dtype="str").str.strip().str.len().to_numpy() > 0)
    try:
        records = jsontext.decode("[" + ",".join(lines[keep]) + "]", jsontext.MAX_JSON_DEPTH + 1)
    except (json.JSONDecodeError, jsontext.Refused):
        records = None
    if not isinstance(records, list) or len(records) != len(keep):  # a bad line, or one line holding two values
        for n in keep:
            load_json(path, lines[n], int(n) + 1)
        raise fail(path, "expected one JSON object per line")
    return _records(path, records, keep + 1, "line", "expected one JSON object per line")


def _json_document(path: Path, text: str) -> tuple[pd.DataFrame, np.ndarray, str]:
    """A JSON array of objects, or an object holding exactly one such array."""
    as_lines = (lambda: _json_lines(path, text)) if text.lstrip()[:1] == "{" else None  # JSON Lines in .json
    doc = load_json(path, text, on_extra=as_lines)
    if isinstance(doc, tuple):  # it was JSON Lines, read by _json_lines
        return doc
    if isinstance(doc, dict):
        arrays = [k for k, v in doc.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
        if len(arrays) != 1:
            found = (
                f"arrays of objects under {', '.join(map(repr, arrays))}"
                if arrays
                else f"keys {', '.join(map(repr, list(doc)[:12]))}"
            )
            raise fail(
                path, f"expected a JSON array of objects, or an object holding exactly one such array; found {found}"
            )
        doc = doc[arrays[0]]
    if not isinstance(doc, list) or not doc:
        raise fail(path, "expected a non-empty JSON array of objects (one per response)")
    return _records(path, doc, np.arange(len(doc)) + 1, "record", "expected a JSON object (one per response)")


def _records(
    path: Path, records: list, numbers: np.ndarray, word: str, message: str
) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Objects as columns; values kept as the JSON gave them (an integer stays an integer)."""
    if not records:
        raise fail(path, "empty file (no rows)")
    kinds = pd.Series(records, dtype=object).map(type)
    bad = np.flatnonzero(kinds.ne(dict).to_numpy())
    if bad.size:
        raise fail(path, message, numbers[bad[0]], word)
    return pd.DataFrame(records, dtype=object), numbers, word


def _options(path: Path, rows: pd.DataFrame, word: str) -> tuple[np.ndarray, list[list[str] | None]]:
    """Store ``options`` as lettered JSON lists and their count (in place). Returns each row's code
    into the distinct lists and each distinct list's option texts (code -1, no options: None)."""
    codes, uniq = pd.factorize(rows["options"])
    texts: list[list[str] | None] = []
    for i, value in enumerate(uniq):
        entries = _option_list(value)
        if entries is None:
            problem = 'must be a JSON list of option texts or of lettered options ("A. ...")'
        elif len(entries) > len(LETTERS):
            problem = f"has {len(entries)} entries; at most {len(LETTERS)} (A-{LETTERS[-1]})"
        else:
            texts.append(_option_texts(entries) or None)
            continue
        raise fail(
            path, f"`options` {problem}, got {value[:80]!r}", rows["_line"].iloc[int(np.argmax(codes == i))], word
        )
    stored = [None if t is None else json.dumps(with_letters(t), ensure_ascii=False) for t in texts]
    rows["options"] = pd.Series(np.asarray([*stored, None], dtype=object)[codes], index=rows.index, dtype="str")
    rows["n_options"] = np.asarray([np.nan if t is None else len(t) for t in texts] + [np.nan])[codes]
    return codes, [*texts, None]


def _option_list(value: str) -> list[str] | None:
    """The entries of a JSON list as text (numbers as written), else None."""
    try:
        parsed = jsontext.decode(value)
    except ValueError:  # not JSON, or JSON refused (NaN, a repeated key, deep nesting)
        return None
    if not isinstance(parsed, list) or any(isinstance(e, (list, dict)) for e in parsed):
        return None
    return ["" if e is None else json.dumps(e) if isinstance(e, bool) else str(e) for e in parsed]


def _option_texts(entries: list[str]) -> list[str]:
    """Each option's own text: lettered entries (A, B, C... in order) lose their letter."""
    found = [f for f in map(split_lettered, entries) if f is not None]
    if len(found) == len(entries) and all(f[0] == LETTERS[k] for k, f in enumerate(found)):
        return [f[1] for f in found]
    return [e.strip() for e in entries]


def _targets(
    path: Path, rows: pd.DataFrame, o_codes: np.ndarray, texts: list[list[str] | None], word: str
) -> pd.Series:
    """Letter targets stay; a target naming an option's text becomes that option's letter; on a row
    with options, a target matching none is refused. Once per distinct (options, target) pair."""
    t_codes, t_uniq = pd.factorize(rows["target"])
    width = len(t_uniq) + 1  # codes shifted by one so that -1 (missing) is a value too
    p_codes, p_uniq = pd.factorize((o_codes.astype(np.int64) + 1) * width + t_codes + 1)
    out: list[str | None] = []
    for k, p in enumerate(p_uniq):
        options, t = texts[p // width - 1], p % width - 1
        if t < 0:
            out.append(None)
            continue
        target = t_uniq[t]
        letter = _match(options, target)
        if letter is None:
            listed = "; ".join(with_letters(options or []))[:200]
            line = rows["_line"].iloc[int(np.argmax(p_codes == k))]
            raise fail(
                path, f"`target` {target[:80]!r} is neither a letter nor the text of an option ({listed})", line, word
            )
        out.append(letter)
    return pd.Series(np.asarray(out, dtype=object)[p_codes], index=rows.index, dtype="str")


def _match(options: list[str] | None, target: str) -> str | None:
    """The target's letter; the target itself without options (an open-ended reference); None when
    options exist and none matches."""
    as_letter = letter_or_text(target)
    if options is None or as_letter is None or is_letter(as_letter):
        return as_letter
    wanted = target.strip()
    for letter, text, shown in zip(LETTERS, options, with_letters(options)):
        if wanted in (text, shown):
            return letter
    return None
