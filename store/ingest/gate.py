"""The value gate: what a row must satisfy before any ingester may hand it to the store.

An auditing store is only as good as its worst cell: one ``1e308`` confidence breaks every DuckDB
aggregate over that model, one ``inf`` makes JSON output invalid, a CSV cut mid-row turns missing
cells into wrong answers. So every input is checked here, column-wise, and the first bad value is
refused with its file and line (the store is then untouched: ingest reads every file before it
takes the writer lock). Nothing is ever coerced to NaN; empty means absent, anything else must
parse.

Limits (stated in docs/formats.md):

* confidence, score, letter_mass: a finite number in [0, 1], or empty;
* option_probs: a JSON object {letter: probability}, every probability finite in [0, 1] and the sum
  within ``PROB_TOLERANCE`` (0.01) of 1;
* frames: an integer in 1..``configs.MAX_FRAMES`` (0 only for ``text``); pixels: an integer in
  1..``configs.MAX_PIXELS``;
* a text field at most ``MAX_FIELD_CHARS`` characters; an input file at most ``MAX_FILE_BYTES``;
* a name or id (model, benchmark, item_id, video...) at most ``MAX_ID_CHARS`` characters: the caches hold
  every item's key, so one id a megabyte long multiplies into gigabytes there;
* a CSV/TSV row has exactly as many fields as the header;
* a number spelled ``NaN`` is refused like any other non-number (only an empty cell is missing);
* one value per scalar field (no list or object: ``scalars``);
* names and ids free of control and invisible formatting characters (``UNSHOWN``, after NFKC for
  names: ``common.make_batch``). JSON itself is parsed strictly by ``store.ingest.jsontext``, an
  ``.xlsx`` bounded by ``store.ingest.workbook``.

Only the error path does per-value Python work (locating the first bad value); the checks
themselves are Arrow / NumPy operations over whole columns.
"""

from __future__ import annotations

import csv
import io
import math
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from store import configs
from store.errors import UserError
from store.ingest import jsontext
from store.unshown import UNSHOWN

MAX_FILE_BYTES = 2 * 1024**3  # read whole into memory: larger inputs should be split (ingest takes many files)
MAX_FIELD_CHARS = 1_000_000  # a raw output or question longer than this is a broken export, not an answer
MAX_ID_CHARS = 1_024  # a name or id keys every cache and every matrix row: longer is an export that put text there
PROB_TOLERANCE = 0.01  # |sum(option_probs) - 1| allowed: rounding in exported probabilities
FRACTION_COLUMNS = ("confidence", "score", "letter_mass")
_CSV_BLOCK = 4 * MAX_FIELD_CHARS  # pyarrow parses a row within one block: longer rows are refused by the locator


def fail(path: Path | str, message: str, line: float | None = None, word: str = "line") -> UserError:
    """A UserError that names the file (and the line) first, as every ingest error does."""
    where = f"{path} {word} {int(line)}" if line is not None and pd.notna(line) else f"{path}"
    return UserError(f"{where}: {message}")


def check_file_size(path: Path) -> None:
    """Refuse a file too large to read into memory at once, before reading it."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise fail(
            path,
            f"{size / 1024**3:.1f} GiB is above the {MAX_FILE_BYTES / 1024**3:.0f} GiB ingest limit; "
            "split it into smaller files (one ingest call takes many files) or convert it to Parquet parts",
        )


# -- CSV / TSV -----------------------------------------------------------------------------------
def read_csv(
    path: Path,
    data: bytes,
    *,
    delimiter: str = ",",
    strings: list[str] | None = None,
    null_values: list[str] | None = None,
) -> pa.Table:
    """Parse CSV bytes with Arrow; a row with too few or too many fields (a file cut mid-row) or an
    oversized field is refused with its line. ``strings``: columns kept as text (None = all)."""
    text = data.decode("utf-8")
    header = next(csv.reader([text.split("\n", 1)[0]], delimiter=delimiter), [])
    names = header if strings is None else [c for c in strings if c in header]
    convert = pacsv.ConvertOptions(column_types={c: pa.string() for c in names}, strings_can_be_null=True)
    if null_values is not None:
        convert.null_values = null_values
    try:
        return pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(block_size=_CSV_BLOCK),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=convert,
        )
    except pa.ArrowInvalid as exc:
        _locate_bad_row(path, text, delimiter, len(header))
        raise fail(path, f"not a readable table ({str(exc).splitlines()[0]})") from None


def _locate_bad_row(path: Path, text: str, delimiter: str, width: int) -> None:
    """Raise for the first row whose field count differs from the header's or whose field is too
    long (error path only: a Python scan of the file)."""
    csv.field_size_limit(max(csv.field_size_limit(), 64 * MAX_FIELD_CHARS))
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    for row in reader:
        if not row:
            continue
        if len(row) != width:
            raise fail(
                path,
                f"{len(row)} field(s) where the header has {width}: the row is cut or has stray "
                f"{'tabs' if delimiter == chr(9) else 'commas'}; fix or remove it (is the file complete?)",
                reader.line_num,
            )
        longest = max(len(v) for v in row)
        if longest > MAX_FIELD_CHARS:
            raise fail(path, _too_long(longest), reader.line_num)


def _too_long(n: int) -> str:
    return f"a field of {n:,} characters is above the {MAX_FIELD_CHARS:,}-character limit; truncate it or keep it out of the file"


# -- numbers -------------------------------------------------------------------------------------
def numbers(path: Path, values: pd.Series, lines: pd.Series, name: str, word: str = "line") -> np.ndarray:
    """float64 of a numeric column; empty -> NaN; any other non-number is refused with its line,
    text spelling NaN included (docs/formats.md: non-numbers are refused, never read as missing)."""
    if pd.api.types.is_bool_dtype(values.dtype):
        raise fail(path, f"`{name}` must be a number, got {values.iloc[0]!r}", lines.iloc[0], word)
    if pd.api.types.is_numeric_dtype(values.dtype):
        return values.to_numpy(dtype="float64", na_value=np.nan)
    text = values.astype("str").str.strip()
    arr = pa.array(text.where(values.notna() & (text != ""), None), type=pa.string(), from_pandas=True)
    try:
        parsed = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        codes, uniq = pd.factorize(text)
        bad = [i for i, u in enumerate(uniq) if u and not _parses(u)]
        row = int(np.flatnonzero(np.isin(codes, bad))[0])
        raise fail(path, f"`{name}` must be a number, got {values.iloc[row]!r}", lines.iloc[row], word) from None
    spelled_nan = np.isnan(parsed) & arr.is_valid().to_numpy(zero_copy_only=False)
    if spelled_nan.any():
        row = int(np.argmax(spelled_nan))
        raise fail(
            path,
            f"`{name}` must be a number, got {values.iloc[row]!r} (leave it empty for none)",
            lines.iloc[row],
            word,
        )
    return parsed


def _parses(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _refuse_first(path: Path, bad: np.ndarray, raw: pd.Series, lines: pd.Series, word: str, message: str) -> None:
    if bad.any():
        row = int(np.argmax(bad))
        raise fail(path, f"{message}, got {raw.iloc[row]!r}", lines.iloc[row], word)


def fractions(path: Path, rows: pd.DataFrame, word: str) -> None:
    """confidence / score / letter_mass: finite numbers in [0, 1] or empty (in place, as float64)."""
    for col in FRACTION_COLUMNS:
        if col in rows:
            v = numbers(path, rows[col], rows["_line"], col, word)
            bad = ~np.isnan(v) & ~((v >= 0) & (v <= 1))  # inf and 1e308 fail the range
            _refuse_first(path, bad, rows[col], rows["_line"], word, f"`{col}` must be a number in [0, 1] or empty")
            rows[col] = v


def counts(path: Path, rows: pd.DataFrame, word: str) -> None:
    """A reader's ``frames`` / ``pixels``: integers within the configs bounds, or empty (in place)."""
    for col, low, high in (("frames", 1, configs.MAX_FRAMES), ("pixels", 1, configs.MAX_PIXELS)):
        if col not in rows:
            continue
        v = numbers(path, rows[col], rows["_line"], col, word)
        ok = np.isnan(v) | ((v >= low) & (v <= high) & (v == np.floor(v)))
        if col == "frames":
            ok |= (v == 0) & (rows["config"].astype("str") == "text").to_numpy()
        _refuse_first(
            path, ~ok, rows[col], rows["_line"], word, f"`{col}` must be an integer in {low}..{high:,} or empty"
        )
        rows[col] = v


def option_probs(path: Path, rows: pd.DataFrame, word: str) -> None:
    """JSON {letter: p}: every p finite in [0, 1], summing to 1 within PROB_TOLERANCE; checked once
    per distinct value."""
    if "option_probs" not in rows:
        return
    codes, uniq = pd.factorize(rows["option_probs"])
    for i, text in enumerate(uniq):
        problem = _probs_problem(text)
        if problem:
            row = int(np.argmax(codes == i))
            raise fail(path, f"`option_probs` {problem}, got {text[:80]!r}", rows["_line"].iloc[row], word)


def _probs_problem(text: str) -> str | None:
    try:
        probs = jsontext.decode(text)
    except (ValueError, TypeError):  # not JSON, or JSON refused (NaN, a repeated key, deep nesting)
        return "must be a JSON object {letter: probability}"
    if not isinstance(probs, dict) or not probs:
        return "must be a JSON object {letter: probability}"
    values = list(probs.values())
    if not all(
        isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) and 0 <= p <= 1 for p in values
    ):
        return "must hold numbers in [0, 1]"
    if abs(sum(values) - 1) > PROB_TOLERANCE:
        return f"must sum to 1 (within {PROB_TOLERANCE}); the sum is {sum(values):.4g}"
    return None


# -- one value per field -------------------------------------------------------------------------
def scalars(path: Path, frame: pd.DataFrame, columns: list[str], lines: np.ndarray, word: str) -> None:
    """Refuse a list or object where one value belongs (JSON readers: a verdict, an id, a name, a
    question), naming its line; found column-wise (one type lookup per cell, no Python loop)."""
    for col in columns:
        if col not in frame or frame[col].dtype != object:
            continue
        nested = frame[col].map(type).isin([list, dict]).to_numpy()
        if nested.any():
            row = int(np.argmax(nested))
            shown = repr(frame[col].iloc[row])
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise fail(path, f"`{col}` must be one value (a number, text or true/false), got {shown}", lines[row], word)


# -- names and ids ------------------------------------------------------------------------------
def unshown_problem(text: str) -> str | None:
    """What makes ``text`` unfit as a name or id (a control or invisible character), else None."""
    found = UNSHOWN.search(text)
    if found is None:
        return None
    ch = found.group()
    kind = "a control character" if unicodedata.category(ch) == "Cc" else "an invisible formatting character"
    label = unicodedata.name(ch, "") or repr(ch)
    return f"holds {kind} (U+{ord(ch):04X} {label}) at position {found.start() + 1}; names and ids must be visible text"


def id_length_problem(length: int) -> str | None:
    """Why a name or id of ``length`` characters is refused (over ``MAX_ID_CHARS``), else None."""
    if length <= MAX_ID_CHARS:
        return None
    return f"has {length:,} characters, above the {MAX_ID_CHARS:,}-character limit for names and ids"


# -- text ----------------------------------------------------------------------------------------
def text_sizes(path: Path, rows: pd.DataFrame, columns: list[str], word: str) -> None:
    """Refuse the first text field longer than MAX_FIELD_CHARS (lengths computed per column)."""
    for col in columns:
        if col not in rows or pd.api.types.is_numeric_dtype(rows[col].dtype):
            continue
        values = rows[col]
        if isinstance(values.dtype, pd.CategoricalDtype):
            per_category = np.append(values.cat.categories.astype("str").str.len().to_numpy(dtype="float64"), 0)
            lengths = per_category[values.cat.codes.to_numpy()]  # code -1 (missing) -> the trailing 0
        else:
            lengths = values.astype("str").str.len().to_numpy(dtype="float64", na_value=0)
        if len(lengths) and lengths.max() > MAX_FIELD_CHARS:
            row = int(np.argmax(lengths))
            raise fail(path, f"`{col}`: {_too_long(int(lengths[row]))}", rows["_line"].iloc[row], word)
