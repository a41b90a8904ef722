"""What every ingester shares: the batch a reader returns, safe reading of input files, and the one
place that turns a reader's rows into store rows, so every format obeys the same rules.

A reader returns one long DataFrame, one row per response, holding the response columns and the
item columns it knows (``target``, ``question``, ``duration``...); :func:`make_batch` finalises it:

* configuration labels become canonical (``store.configs``), with frames / pixels / policy parsed;
* the answer is extracted from the raw text with the Video-MME rule (``store.answers``); no letter
  means no answer, which counts as wrong and is flagged ``no-answer``;
* correctness: where the format's data *is* a verdict (the generic table's ``correct``, the
  scale-grid ``per_item.csv``) that verdict is used, and where the row also has raw text and a
  letter target a disagreement with our extraction is flagged ``harness-mismatch``; otherwise
  ``correct = answer == target``. A verdict the harness wrote beside raw text (lmms-eval
  ``pred_answer`` / ``score``, VLMEvalKit ``score``) is kept in provenance and a disagreement with
  our rule is flagged ``harness-mismatch`` too, so one extraction rule holds across formats and
  every difference is visible;
* the video: where none is given, a Video-MME question id ``NNN-k`` names its video ``NNN``
  (``store.ingest.videos``), so folds and per-video views group its three questions;
* frames: logged indices, ``frames_source`` and ``sampler`` (``store.ingest.frames``); a logged set
  that is no uniform sampler's moves its configuration to ``<N>f/adaptive``, flagged ``adaptive-frames``;
* scores (``store.ingest.scores``): a score on a declared scale is mapped onto [0, 1], an open-ended
  response with a prediction and a reference but no score gets its Token-F1, and ``score_source``
  records which; an open-ended row that has a score and no verdict keeps ``correct`` empty;
* a yes/no question (a target that is the word ``yes`` or ``no``) is no free text: it is never Token-F1
  scored; without a verdict its answer is the output's first ``yes``/``no`` and ``correct`` compares it;
* ``protocol_note`` non-empty -> flag ``protocol-note``; VLMEvalKit score -1 -> flag ``unparseable``;
* every value passes the gate (``store.ingest.gate``): bad numbers, out-of-range counts and
  oversized text are refused with their line, never coerced.

Besides stored columns a reader may give ``n_options`` (letters the item allows),
``harness_answer`` / ``harness_correct`` (the harness's own verdict) and ``harness_unparseable``;
``_line`` (the row's line in the file, for error messages) is bookkeeping and never stored.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from store import configs
from store.answers import (
    LETTERS,
    beyond_letters,
    extract_letter,
    extract_yes_no,
    is_letter,
    letter_or_text,
    yes_no_target,
)
from store.errors import UserError
from store.ingest import frames, gate, jsontext, scores
from store.ingest.gate import fail
from store.ingest.records import RecordPath
from store.ingest.videos import implied_videos
from store.schema import ITEMS, RESPONSE_KEY, RESPONSES

# What an input file may fill: never ``seq``, which only the store's writer stamps (store.schema.SEQUENCED).
ITEM_COLUMNS = [f.name for f in ITEMS if f.name not in ("written_at", "seq")]
RESPONSE_COLUMNS = [f.name for f in RESPONSES if f.name != "seq"]
TEXT_COLUMNS = list(dict.fromkeys(f.name for f in (*RESPONSES, *ITEMS) if pa.types.is_string(f.type)))
DEFAULT_N_OPTIONS = 4
ANSWER_TYPES = ("mcqa", "open")  # a row's answer_type, when its file says it (else from its target)
NAME_COLUMNS = ["model", "benchmark", "config", "split", "run", "task_type", "domain", "sub_category"]
ID_COLUMNS = ["item_id", "video"]


@dataclass(frozen=True)
class IngestOptions:
    """What the user said on the command line; a reader uses what its format does not carry."""

    model: str | None = None
    benchmark: str | None = None
    split: str | None = None
    config: str | None = None
    answers: Path | None = None
    run: str = "main"
    progress: bool = False
    field_map: tuple[tuple[str, tuple[str, ...]], ...] = ()  # --map, parsed (store.ingest.mapping)
    sampler: str | None = None  # --sampler: the harness's frame sampler (store.samplers)
    score_scale: tuple[float, float] | None = None  # --score-scale MIN:MAX, parsed (store.ingest.scores)
    force_config: bool = False  # --force-config: --config may override the budget a file's harness logged
    records: RecordPath | None = None  # --records / --record-keys / --merge (store.ingest.records)


@dataclass
class Batch:
    """One input file, finalised: ``rows`` holds response and item columns plus ``_line``."""

    path: Path
    format: str
    rows: pd.DataFrame
    sha256: str
    run_id: str
    settings: dict = field(default_factory=dict)  # parsed harness settings, stored in runs.args
    line_word: str = "line"  # how an error names a position: "line" (text files) or "row" (sheets)

    def where(self, line: float | None) -> str:
        return f"{self.path} {self.line_word} {int(line)}" if line is not None and pd.notna(line) else str(self.path)


def read_text_bytes(path: Path) -> bytes:
    """The file's bytes, checked to be UTF-8 (a BOM is dropped); empty files are refused."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder; pass the result files inside it") from None
    return checked_utf8(path, data)


def checked_utf8(path: Path, data: bytes, *, peek: bool = False) -> bytes:
    """``data`` (the bytes of the file ``path``; with ``peek``, its first bytes) without a BOM, refused when
    empty or not UTF-8 (naming the line of the first bad byte). A peek may end inside a character: that
    character is dropped, not refused."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise fail(path, "empty file")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if peek and exc.start >= len(data) - 4:  # a character cut at the end of the peek
            return data[: exc.start]
        line = data[: exc.start].count(b"\n") + 1
        raise fail(path, f"not UTF-8 text (byte {data[exc.start]:#04x}); re-save the file as UTF-8", line) from None
    return data


def load_json(
    path: Path,
    text: str,
    line: int | None = None,
    on_extra: Callable[[], object] | None = None,
    *,
    constants: bool = False,
) -> object:
    """``text`` parsed as strict JSON (``store.ingest.jsontext``); a failure names ``path`` and the
    line (``line``: the file line ``text`` is, when it is one line). ``on_extra``: what to return
    instead when the text holds several values (JSON Lines in a ``.json`` file). ``constants``: NaN
    and Infinity read as floats (``jsontext.decode``)."""
    try:
        return jsontext.decode(text, constants=constants)
    except json.JSONDecodeError as exc:
        if on_extra is not None and exc.msg == "Extra data":
            return on_extra()
        raise fail(path, f"not valid JSON ({exc.msg}, column {exc.colno})", line or exc.lineno) from None
    except jsontext.Refused as exc:
        raise fail(path, exc.message, line or jsontext.locate(text, exc, constants=constants)) from None


_BUDGET_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?:(?P<frames>\d+)(?:f|frames?)(?:[_@](?P<pixels>\d+)k)?|(?:n?frames?_?|k)(?P<after>\d+))(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def given_config(path: Path, opts: IngestOptions, logged: str | None, source: str) -> tuple[str, str | None]:
    """(label, hint) for a file whose harness logged the budget ``logged`` (None: it logged none) when the user
    passed ``--config``: a different label would silently relabel the run (issue 35: ``--config 8f`` on a
    ``max_frames_num=16`` run), so it is refused unless ``--force-config``, and the summary then says so."""
    assert opts.config is not None
    if logged is None or logged == opts.config:
        return opts.config, None
    if not opts.force_config:
        raise fail(
            path,
            f"--config {opts.config} differs from the budget logged by {source}: {logged}; drop --config to use the logged "
            f"one, or pass --force-config to store these rows as {opts.config}",
        )
    return opts.config, f"config {opts.config} from --force-config, overriding the logged {logged}"


def budget_hint(path: Path) -> tuple[str, str] | None:
    """(label, where) when the file's name or its folder's name states one budget (``16f``,
    ``16frames``, ``_16frame``, ``nframes16``, a top-k selection's ``k16``; ``32f_151k`` keeps its pixels), or the folder above it does (lmms-eval's
    run folder); None when none does or they state different ones."""
    found = {
        where: {label for m in _BUDGET_WORD.finditer(name) if (label := _budget_label(m))}
        for where, name in (
            ("the file name", path.stem),
            ("the folder name", path.parent.name),
            ("the run folder name", path.parent.parent.name),  # lmms-eval: <run>/<model>/<stamp>_samples_*.jsonl
        )
    }
    labels = set().union(*found.values())
    if len(labels) != 1:
        return None
    return labels.pop(), " and ".join(w for w, f in found.items() if f)


def _budget_label(m: re.Match) -> str | None:
    frames = int(m["frames"] or m["after"])
    try:
        return configs.make_label(frames, float(m["pixels"]) if m["pixels"] else None) if frames else None
    except configs.ConfigLabelError:  # beyond the bounds: not a budget
        return None


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def require_columns(
    path: Path,
    columns: list[str] | pd.Index,
    needed: list[str],
    what: str,
    hint: str = "",
    shown: pd.Index | None = None,
) -> None:
    """Refuse a file lacking ``needed`` columns, listing what it has (``shown``: the file's own
    columns where ``columns`` are the fields read from them)."""
    missing = [c for c in needed if c not in columns]
    if missing:
        listed = columns if shown is None else shown
        has = ", ".join(map(str, listed[:30])) + (" ..." if len(listed) > 30 else "")
        raise fail(
            path,
            f"missing column(s) {', '.join(missing)} for {what}; the file has: {has}" + (f"; {hint}" if hint else ""),
        )


def json_rows(df: pd.DataFrame) -> pd.Series:
    """One JSON object per row (vectorised through pandas' JSON writer)."""
    if df.columns.empty or df.index.empty:
        return pd.Series(None, index=df.index, dtype="str")
    # Newlines inside values are escaped by the writer; split on "\n" only (splitlines would also
    # cut at U+2028 and friends, which JSON leaves unescaped).
    lines = df.to_json(orient="records", lines=True, force_ascii=False).rstrip("\n").split("\n")
    return pd.Series(lines, index=df.index, dtype="str")


def as_text(values: pd.Series) -> pd.Series:
    """Values as text, missing kept missing: lists and objects as JSON (a JSON file's options),
    integers without a decimal point (``4``, not the ``4.0`` pandas makes of an integer column with
    gaps), everything else as written."""
    if pd.api.types.is_float_dtype(values.dtype):
        present = values.dropna()
        if (present == present.round()).all() and present.abs().max() < 2**53:
            return values.astype("Int64").astype("str")
    out = values.astype("str")
    if values.dtype == object:
        nested = values.map(type).isin([list, dict]).to_numpy()
        if nested.any():  # one JSON writer call; `{"v":` and `}` cut off each line
            out[nested] = json_rows(pd.DataFrame({"v": values[nested]})).str.slice(5, -1)
    return out


# -- column-wise helpers -------------------------------------------------------------------------
# Work is done once per distinct value and mapped back through integer codes; string results come
# back as pandas Categoricals (cheap to build, stored as plain strings by ``schema.conform``).
def factorize(values: pd.Series | np.ndarray) -> tuple[np.ndarray, list]:
    """(codes, distinct values + [None]); code -1 (missing) indexes the trailing None slot."""
    codes, uniq = pd.factorize(values)
    return codes, [*uniq, None]


def categorical(codes: np.ndarray, results: list) -> pd.Categorical:
    """Rows' values from per-distinct ``results`` (as returned for ``factorize``'s list)."""
    rcodes, cats = pd.factorize(np.asarray(results, dtype=object))
    return pd.Categorical.from_codes(rcodes[codes], cats)


def constant(value: object, n: int) -> pd.Categorical:
    return categorical(np.zeros(n, dtype=np.int64), [value, None])


def _clean_text(v: object) -> str | None:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    return str(v).strip() or None


def normalise_letters(values: pd.Series) -> pd.Categorical:
    """'a', ' B ', '(C)', 'D.' -> the letter; other text unchanged (open-ended references); '' -> None."""
    codes, uniq = factorize(values)
    return categorical(codes, [letter_or_text(u) for u in uniq])


def options_count(options: pd.Series) -> np.ndarray:
    """Length of each JSON options list (NaN where absent), parsed once per distinct value."""
    codes, uniq = factorize(options)
    return np.asarray([np.nan if u is None else len(json.loads(u)) for u in uniq], dtype="float64")[codes]


def extract_answers(raw: pd.Series, n_options: np.ndarray) -> pd.Categorical:
    """``extract_letter`` per row, run once per distinct (text, number of options) pair; rows
    with ``n_options`` <= 0 get None (not multiple choice)."""
    codes, uniq = pd.factorize(raw)
    width = len(LETTERS) + 1
    pair = np.where((codes >= 0) & (n_options > 0), codes.astype(np.int64) * width + n_options, -1)
    pcodes, puniq = pd.factorize(pair)
    found = [None if p < 0 else extract_letter(uniq[p // width], int(p % width)) for p in puniq]
    return categorical(pcodes, [*found, None])


# -- finalising a reader's rows ------------------------------------------------------------------
def make_batch(
    path: Path,
    fmt: str,
    rows: pd.DataFrame,
    opts: IngestOptions,
    settings: dict | None = None,
    *,
    line_word: str = "line",
) -> Batch:
    """Apply the rules in the module docstring and return the batch ready for publishing."""
    if rows.empty:
        raise fail(path, "no rows to ingest")
    rows = rows.copy()
    n = len(rows)
    if "_line" not in rows:
        rows["_line"] = np.arange(n) + 1
    # The command line fills what the file leaves empty; a reader that lets the command line
    # override the file has already applied it.
    for col, value in (
        ("model", opts.model),
        ("benchmark", opts.benchmark),
        ("config", opts.config),
        ("split", opts.split),
        ("run", opts.run),
    ):
        if col not in rows:
            rows[col] = constant(value, n)
        elif value is not None:
            rows[col] = rows[col].fillna(value)
    notes = []
    for col in RESPONSE_KEY:
        codes, uniq = factorize(rows[col])
        cleaned = [_clean_text(u) for u in uniq]
        empty = [i for i, c in enumerate(cleaned[:-1]) if c is None]
        if empty or (codes < 0).any():
            bad = np.isin(codes, empty + [-1])
            hint = f" (pass --{col})" if col in ("model", "benchmark", "config") else ""
            raise fail(path, f"no {col}{hint}", rows["_line"].iloc[int(np.argmax(bad))], line_word)
        notes += _stripped(path, rows, col, codes, uniq[:-1], cleaned[:-1], line_word)
        rows[col] = categorical(codes, cleaned)
    implied = implied_videos(rows["benchmark"], rows["item_id"])
    if implied.notna().any():
        rows["video"] = implied if "video" not in rows else rows["video"].astype("str").fillna(implied)
    _names_and_ids(path, rows, line_word)
    scores.declared(path, rows, opts.score_scale, line_word)
    gate.fractions(path, rows, line_word)
    gate.counts(path, rows, line_word)
    gate.option_probs(path, rows, line_word)
    gate.text_sizes(path, rows, TEXT_COLUMNS, line_word)
    frames.prepare(path, rows, opts.sampler, line_word)
    _canonical_configs(path, rows, line_word)
    relabelled = frames.relabel(rows)
    unjudged = _answers_and_correctness(path, rows, line_word)
    if unjudged:
        notes.append(
            f"{unjudged} row(s) give an empty verdict (flagged no-verdict): `correct` left empty, so the stored "
            "score cut-off leaves their items out of accuracy, counted (docs/metrics.md, Empty verdicts)"
        )
    settings = dict(settings or {})
    if notes:
        settings["notes"] = notes
    if relabelled:
        settings["adaptive"] = relabelled
        settings["config_hint"] = "; ".join(filter(None, [settings.get("config_hint"), frames.describe(relabelled)]))
    if opts.sampler:
        settings["sampler"] = opts.sampler
    run_id = f"ingest-{pd.Timestamp.now(tz='UTC'):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    rows["run_id"] = constant(run_id, n)
    rows["origin"] = constant("ingest", n)
    keep = [c for c in dict.fromkeys(RESPONSE_COLUMNS + ITEM_COLUMNS + ["_line"]) if c in rows]
    return Batch(path, fmt, rows[keep].reset_index(drop=True), sha256(path), run_id, settings, line_word)


def _stripped(
    path: Path, rows: pd.DataFrame, col: str, codes: np.ndarray, raw: list, cleaned: list, word: str
) -> list[str]:
    """The note saying how many distinct ``col`` values lost surrounding spaces (none: no note); refused when
    stripping makes two distinct values one ('001-3 ' and '001-3' would be merged as duplicates, one lost)."""
    seen: dict[str, str] = {}
    changed = []
    for i, (value, clean) in enumerate(zip(raw, cleaned, strict=True)):
        text = str(value)
        first = seen.setdefault(clean, text)
        if first != text:
            raise fail(
                path,
                f"`{col}` {first!r} and {text!r} differ only in surrounding spaces: stripping them would merge two "
                f"{col} values; remove the spaces or rename one",
                rows["_line"].iloc[int(np.argmax(codes == i))],
                word,
            )
        if text != clean:
            changed.append(text)
    if not changed:
        return []
    return [f"{len(changed):,} {col} stripped of surrounding spaces (e.g. {changed[0]!r} -> {changed[0].strip()!r})"]


def _names_and_ids(path: Path, rows: pd.DataFrame, word: str) -> None:
    """Names NFKC-normalised (look-alike spellings become one name), then a name or id over
    ``gate.MAX_ID_CHARS`` characters (every cache holds each item's key) or holding a control or
    invisible character is refused (``gate.UNSHOWN``): three chips reading "synthetic-A-7B" that are
    three models, or an id with a NUL that no command line can name. Once per distinct value; ids
    are not normalised (they must match the harness's and the video files' names)."""
    for col in NAME_COLUMNS + ID_COLUMNS:
        if col not in rows:
            continue
        codes, uniq = factorize(rows[col])
        if col in NAME_COLUMNS:
            uniq = [unicodedata.normalize("NFKC", u) if isinstance(u, str) else u for u in uniq]
        text = pd.Series(uniq[:-1], dtype=object).astype("str")
        lengths = text.str.len().to_numpy()
        too_long = np.flatnonzero(lengths > gate.MAX_ID_CHARS)
        if too_long.size:
            line = rows["_line"].iloc[int(np.argmax(codes == too_long[0]))]
            raise fail(path, f"`{col}` {gate.id_length_problem(int(lengths[too_long[0]]))}", line, word)
        bad = np.flatnonzero(text.str.contains(gate.UNSHOWN).to_numpy(dtype=bool))
        if bad.size:
            line = rows["_line"].iloc[int(np.argmax(codes == bad[0]))]
            raise fail(path, f"`{col}` {gate.unshown_problem(text.iloc[bad[0]])}", line, word)
        if col in NAME_COLUMNS:
            rows[col] = categorical(codes, uniq)


def _canonical_configs(path: Path, rows: pd.DataFrame, word: str) -> None:
    """Canonical labels and their parsed parts, computed once per distinct label."""
    codes, uniq = factorize(rows["config"])
    parsed = []
    for i, label in enumerate(uniq[:-1]):
        try:
            parsed.append(configs.parse(configs.canonical(label)))
        except configs.ConfigLabelError as exc:
            raise fail(path, str(exc), rows["_line"].iloc[int(np.argmax(codes == i))], word) from None
    rows["config"] = categorical(codes, [c.label for c in parsed] + [None])
    counts = [np.nan if c.fps else c.frames for c in parsed]  # a frame rate fixes no count
    frames = np.asarray(counts + [np.nan], dtype="float64")[codes]
    pixels = np.asarray([np.nan if c.pixels is None else c.pixels for c in parsed] + [np.nan], dtype="float64")[codes]
    if "frames" in rows:  # the reader's count wins; the label fills the rest
        frames = np.where(
            rows["frames"].isna().to_numpy(), frames, rows["frames"].to_numpy(dtype="float64", na_value=np.nan)
        )
    if "pixels" in rows:  # the label wins; the reader's count fills labels without a spatial part
        pixels = np.where(np.isnan(pixels), rows["pixels"].to_numpy(dtype="float64", na_value=np.nan), pixels)
    rows["frames"], rows["pixels"] = frames, pixels
    rows["policy"] = categorical(codes, [c.policy for c in parsed] + [None])


def _answers_and_correctness(path: Path, rows: pd.DataFrame, word: str) -> int:
    """Answer, correctness and flags (module docstring); returns how many rows the file gave an empty verdict
    that no rule fills (left empty, flagged ``no-verdict``), which the summary counts: the stored cut-off leaves
    their items out of accuracy, and a user matching a source's denominator must know they are there."""
    n = len(rows)
    t_codes, t_uniq = factorize(rows["target"] if "target" in rows else np.full(n, None, dtype=object))
    targets = [letter_or_text(u) for u in t_uniq]
    rows["target"] = categorical(t_codes, targets)
    target = np.asarray(targets, dtype=object)[t_codes]
    has_target = np.asarray([t is not None for t in targets])[t_codes]
    letter_n = np.asarray([LETTERS.index(t) + 1 if is_letter(t) else np.nan for t in targets], dtype="float64")[t_codes]
    letter_target = ~np.isnan(letter_n)
    kind = np.where(letter_target, "mcqa", np.where(has_target, "open", None))  # type: ignore[call-overload]  # numpy's stubs take no None scalar (an object array)
    typed = rows["answer_type"].notna().to_numpy() if "answer_type" in rows else np.zeros(n, dtype=bool)
    if typed.any():
        unknown = typed & ~rows["answer_type"].isin(ANSWER_TYPES).to_numpy()
        if unknown.any():
            row = int(np.argmax(unknown))
            given = rows["answer_type"].iloc[row]
            raise fail(path, f"`answer_type` must be mcqa, open or empty, got {given!r}", rows["_line"].iloc[row], word)
    _refuse_letters_beyond(path, rows, np.asarray([beyond_letters(t) for t in targets])[t_codes] & ~typed, word)
    if "answer_type" in rows:
        kind = np.where(typed, rows["answer_type"].to_numpy(dtype=object), kind)
    mcqa = kind == "mcqa"
    rows["answer_type"] = categorical(*factorize(kind))
    has_raw = "raw_output" in rows
    if has_raw:
        n_opts = np.where(mcqa, _n_options(rows, letter_n), 0)
        rows["answer"] = extract_answers(rows["raw_output"], n_opts)
    else:
        rows["raw_output"] = None
        rows["answer"] = constant(None, n)
    binary = np.asarray([yes_no_target(t) for t in targets], dtype=object)[t_codes] if n else np.empty(0, object)
    yes_no = pd.notna(binary) & (kind == "open")  # a yes/no question: judged by the word, never Token-F1 scored
    if has_raw and yes_no.any():
        said = rows["raw_output"].where(yes_no).map(extract_yes_no, na_action="ignore")
        rows["answer"] = pd.Series(np.where(yes_no, said, rows["answer"]), index=rows.index, dtype=object)
    answer = np.asarray(rows["answer"], dtype=object)
    has_answer = pd.notna(answer)
    computed = has_answer & ((answer == target) | (yes_no & (answer == binary)))
    if has_raw:
        scores.fill_token_f1(rows, (kind == "open") & ~yes_no)
    scored = rows["score"].notna().to_numpy() if "score" in rows else np.zeros(n, dtype=bool)
    has_verdicts = "correct" in rows  # the file's own verdict column (filled below for every row)
    given = rows["correct"].to_numpy(dtype="float64", na_value=np.nan) if "correct" in rows else np.full(n, np.nan)
    by_rule = np.isnan(given) & has_raw & (letter_target | yes_no)
    missing = np.isnan(given) & ~by_rule & ~(scored & (kind == "open"))
    if missing.any():
        raise fail(
            path,
            "cannot tell whether this response is correct: give `correct`, a prediction and an option-letter "
            "target, or (open-ended) a score or a prediction to score against the reference",
            rows["_line"].iloc[int(np.argmax(missing))],
            word,
        )
    correct = np.where(by_rule, computed, given)  # NaN: an open-ended row judged by its score alone
    rows["correct"] = pd.arrays.IntegerArray(np.nan_to_num(correct).astype(np.int8), np.isnan(correct))
    mismatch = np.zeros(n, dtype=bool)
    if "harness_answer" in rows:
        said = np.asarray(normalise_letters(rows["harness_answer"]), dtype=object)
        mismatch |= letter_target & (said != answer) & ~(pd.isna(said) & ~has_answer)
    if "harness_correct" in rows:
        verdict = rows["harness_correct"].to_numpy(dtype="float64", na_value=np.nan)
        mismatch |= ~np.isnan(verdict) & ~np.isnan(correct) & (verdict != correct)
    if has_raw:  # a verdict the file gives beside a prediction and a letter target: is it ours?
        judged = ~np.isnan(given) & letter_target & rows["raw_output"].notna().to_numpy()
        mismatch |= judged & (given != computed)
    unparseable = (
        rows["harness_unparseable"].fillna(False).to_numpy(dtype=bool) if "harness_unparseable" in rows else False
    )
    note = False
    if "protocol_note" in rows:
        codes, uniq = factorize(rows["protocol_note"])
        note = np.asarray([_clean_text(u) is not None for u in uniq])[codes]
    no_answer = has_raw & mcqa & ~has_answer
    bits = np.zeros(n, dtype=np.int64)
    adaptive = rows["_adaptive"].to_numpy(dtype=bool) if "_adaptive" in rows else False
    no_verdict = np.isnan(given) & ~by_rule & has_verdicts  # the file has verdicts and left this one empty
    for i, mask in enumerate((no_answer, mismatch, unparseable, note, adaptive, no_verdict)):
        bits |= np.asarray(mask, dtype=np.int64) << i
    rows["flags"] = categorical(bits, _FLAG_TEXT)
    return int(no_verdict.sum())


def _refuse_letters_beyond(path: Path, rows: pd.DataFrame, beyond: np.ndarray, word: str) -> None:
    """Refuse a target of one letter past H ('I', 'J') in a row that lists no options and says no answer type:
    it was read as an open-ended reference and scored by Token-F1, where it is almost surely option 9 or 10
    of an item with more options than the store holds (docs/formats.md)."""
    if "options" in rows:
        beyond = beyond & rows["options"].isna().to_numpy()
    if beyond.any():
        row = int(np.argmax(beyond))
        raise fail(
            path,
            f"`target` {rows['target'].iloc[row]!r} is one letter beyond {LETTERS[-1]} and the row lists no "
            f"options: items have at most {len(LETTERS)} options ({LETTERS[0]}-{LETTERS[-1]}), so it is no option "
            "letter; if it is an open-ended answer, give the row `answer_type` open",
            rows["_line"].iloc[row],
            word,
        )


def _n_options(rows: pd.DataFrame, letter_n: np.ndarray) -> np.ndarray:
    """Options per row: the reader's count, else the options list, else enough letters for the
    benchmark's targets (at least A-D)."""
    n = (
        rows["n_options"].to_numpy(dtype="float64", na_value=np.nan)
        if "n_options" in rows
        else np.full(len(rows), np.nan)
    )
    if "options" in rows:
        listed = options_count(rows["options"])
        n = np.where(np.isnan(n) & (listed >= 2), listed, n)
    if np.isnan(n).any():
        per_bench = pd.Series(letter_n).groupby(pd.factorize(rows["benchmark"])[0]).transform("max").to_numpy()
        n = np.where(np.isnan(n), np.fmax(per_bench, DEFAULT_N_OPTIONS), n)
    return np.clip(n, 1, len(LETTERS)).astype(np.int64)


FLAG_NAMES = ("no-answer", "harness-mismatch", "unparseable", "protocol-note", "adaptive-frames", "no-verdict")
# Flag text for each bit pattern (bit i = FLAG_NAMES[i]); pattern 0 = no flag.
_FLAG_TEXT = [
    ",".join(f for i, f in enumerate(FLAG_NAMES) if code >> i & 1) or None for code in range(1 << len(FLAG_NAMES))
]


def count_flags(flags: pd.Series) -> dict[str, int]:
    """{flag: rows carrying it}, from the few distinct flag combinations."""
    out: dict[str, int] = {}
    for text, k in flags.dropna().value_counts().items():
        if not k:  # a Categorical lists combinations that did not occur
            continue
        for name in str(text).split(","):
            out[name] = out.get(name, 0) + int(k)
    return dict(sorted(out.items()))
