"""Publishing ingested batches: every check against the store and every write in one
``store.writer()``, so two concurrent ingests cannot both pass the conflict check and a reader sees
the store before or after the whole ingest, never between.

Rules:

* a response's values are ``VALUES`` (answer, correctness, confidence, score, the raw output and the
  option probabilities); every changed value is a decision, never a silent skip:
* duplicates among the rows being ingested (within a file or across the files of one call): the
  same response key with the same values is kept once and counted (``duplicates``); with any value
  different it is refused, naming the field and both places;
* against the store: a key already stored with the same values is skipped (``already_stored``); any
  different value is a conflict, refused in one line with the count of changed rows per field unless
  ``replace``, in which case the stored rows move to the ``history`` table (with the write that replaced
  them: ``trajaudit inspect --history``), their files are rewritten without them and retired, and the
  new rows written (``replaced``);
* items are upserted: a stored item's fields are kept where the new row has none, so a file that
  only knows the target does not erase the question another file gave. A different target for a
  stored item is a conflict like a different answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from typing import Annotated

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
from msgspec import field

from store import configs, samplers
from store.contract import Contract, doc
from store.errors import UserError
from store.ingest.common import ITEM_COLUMNS, RESPONSE_COLUMNS, Batch, count_flags
from store.schema import ITEM_KEY, ITEMS, RESPONSE_KEY, RESPONSES
from store.store import Store, Writer

NEW, STORED, CONFLICT = 0, 1, 2
# The values of a response: a row that differs from the stored one in any of them is a change to decide on.
VALUES = ["answer", "correct", "confidence", "score", "raw_output", "option_probs"]
SHOW = 5  # keys named in an error message
_KEY = ", ".join(RESPONSE_KEY)


def _on(alias: str) -> str:
    """Join condition between stored responses ``s`` and batch rows ``alias`` on the response key."""
    return " AND ".join(f"s.{k} = {alias}.{k}" for k in RESPONSE_KEY)


class FileResult(Contract):
    """What one input file added (an ingest's ``files``)."""

    path: Annotated[str, doc("the file")]
    format: Annotated[str, doc("the format it was read as")]
    rows: Annotated[int, doc("responses it holds")]
    new: Annotated[int, doc("responses written")] = 0
    already_stored: Annotated[int, doc("responses the store held already")] = 0
    replaced: Annotated[int, doc("stored responses it replaced (--replace)")] = 0
    duplicates: Annotated[int, doc("responses repeated within the input")] = 0
    flagged: Annotated[
        dict[str, int],
        doc(
            "per quality flag (no-answer, harness-mismatch, unparseable, protocol-note, adaptive-frames, "
            "no-verdict), its responses"
        ),
    ] = field(default_factory=dict)
    run_id: Annotated[str | None, doc("the ingest run that wrote its rows (null: it wrote nothing)")] = None
    config_hint: Annotated[
        str | None,
        doc("where its configuration was inferred from, and any relabel of non-uniform logged frames (null: neither)"),
    ] = None
    configs: Annotated[list[str], doc("the configurations its rows got")] = field(default_factory=list)
    frames: Annotated[
        dict[str, int], doc("its visual responses per frames source (logged, reconstructed, unknown)")
    ] = field(default_factory=dict)


@dataclass
class Published:
    files: list[FileResult]
    items_written: int
    version: int


def publish_batches(store: Store, batches: list[Batch], *, replace: bool, options: dict) -> Published:
    """Check and write ``batches`` atomically; see the module docstring."""
    now = pd.Timestamp.now(tz="UTC")
    with store.writer() as w, w.connect() as con:
        plan = _plan(con, batches, replace)
        conflicts = np.flatnonzero(plan.status == CONFLICT)
        if len(conflicts):
            _drop_stored(w, con, plan.rows.iloc[conflicts][RESPONSE_KEY + ["run_id"]])
        write = plan.keep & (plan.status != STORED)
        for i, res in enumerate(plan.results):
            if (write & (plan.src == i)).any():
                res.run_id = batches[i].run_id
        rows = plan.rows
        w.add("responses", rows.loc[write, [c for c in RESPONSE_COLUMNS if c in rows]].assign(written_at=now))
        w.add("items", plan.items.assign(written_at=now))
        w.add("runs", _runs(batches, plan.results, options, now))
    return Published(plan.results, len(plan.items), store.version())


def check_batches(store: Store, batches: list[Batch], *, replace: bool) -> Published:
    """``--dry-run``: every check :func:`publish_batches` makes (repeated keys across the files, changed
    values and targets against the store), raising the same error, with the counts a write would have;
    nothing is written. A dry run that passes means the ingest passes on the same store."""
    with store.connect() as con:
        plan = _plan(con, batches, replace)
    return Published(plan.results, len(plan.items), store.version())


@dataclass
class _Plan:
    """What one ingest would do: the rows, which are kept (not repeats), each row's status against the store,
    the item rows to write and the per-file counts."""

    rows: pd.DataFrame
    src: np.ndarray
    keep: np.ndarray
    status: np.ndarray
    items: pd.DataFrame
    results: list[FileResult]


def _plan(con: duckdb.DuckDBPyConnection, batches: list[Batch], replace: bool) -> _Plan:
    """Every check of an ingest, shared by the write and the dry run so both refuse the same input alike."""
    rows = pd.concat([b.rows.assign(_src=i) for i, b in enumerate(batches)], ignore_index=True)
    keys = key_codes(rows, RESPONSE_KEY)
    dropped = _duplicates(rows, keys, batches)
    keep = ~dropped
    results = [file_result(b) for b in batches]
    src = rows["_src"].to_numpy()
    for i, n in zip(*np.unique(src[dropped], return_counts=True)):
        results[i].duplicates = int(n)
    status, changed = _classify(con, rows, keep)
    conflicts = np.flatnonzero(status == CONFLICT)
    if len(conflicts) and not replace:
        raise UserError(_conflict_message(con, rows, batches, conflicts, changed))
    items = _merge_items(con, rows[keep], batches, replace)
    for i, res in enumerate(results):
        mine = src == i
        res.new = int((keep & mine & (status == NEW)).sum())
        res.already_stored = int((keep & mine & (status == STORED)).sum())
        res.replaced = int((keep & mine & (status == CONFLICT)).sum())
    return _Plan(rows, src, keep, status, items, results)


def file_result(b: Batch) -> FileResult:
    """What a batch holds before it meets the store (rows, flags, configurations, visual rows per frames
    source); publishing adds the counts against the store, ``--dry-run`` shows it as it is."""
    sources = b.rows["frames_source"].dropna().value_counts() if "frames_source" in b.rows else pd.Series(dtype=int)
    return FileResult(
        str(b.path),
        b.format,
        len(b.rows),
        flagged=count_flags(b.rows["flags"]),
        config_hint=b.settings.get("config_hint"),
        configs=configs.order(b.rows["config"].astype("str").unique().tolist()),
        frames={k: int(sources[k]) for k in samplers.SOURCES if sources.get(k, 0)},
    )


def key_codes(rows: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """One dense int64 per distinct combination of ``cols`` (factorised column by column, so
    duplicate detection is integer work rather than string hashing of five columns)."""
    code = np.zeros(len(rows), dtype=np.int64)
    for c in cols:
        codes, uniq = pd.factorize(rows[c])
        code = pd.factorize(code * (len(uniq) + 1) + (codes + 1))[0].astype(np.int64)
    return code


def _duplicates(rows: pd.DataFrame, keys: np.ndarray, batches: list[Batch]) -> np.ndarray:
    """Mask of rows repeating an earlier row's key with the same values (dropped and counted);
    repeats with any value different raise, naming the field and where both rows are."""
    repeated = pd.Series(keys).duplicated(keep=False).to_numpy()
    if not repeated.any():
        return np.zeros(len(rows), dtype=bool)
    values = [c for c in VALUES if c in rows]
    sub = rows.loc[repeated, RESPONSE_KEY + values + ["_src", "_line"]].assign(_k=keys[repeated])
    variants = sub.drop_duplicates(["_k", *values])
    bad_keys = variants["_k"][variants["_k"].duplicated()].unique()
    if len(bad_keys):
        shown = variants[variants["_k"].isin(bad_keys[:SHOW])]
        examples = "; ".join(_variant_text(g, values, batches) for _, g in shown.groupby("_k", sort=False))
        raise UserError(
            f"{len(bad_keys)} response key(s) appear more than once with different values: {examples}. Nothing was "
            "written; keep one row per key, or ingest each run apart under its own --run NAME (a repeat, another protocol)"
        )
    return pd.Series(keys).duplicated(keep="first").to_numpy()


def _variant_text(g: pd.DataFrame, values: list[str], batches: list[Batch]) -> str:
    """``key: confidence 0.9 at f.jsonl line 3 vs 0.1 at f.jsonl line 7`` for the first two variants of a key."""
    a, b = g.iloc[0], g.iloc[1]
    field = next(c for c in values if not _same(a[c], b[c]))
    return (
        f"{_key_text(a)}: {field} {_shown(a[field])} at {batches[int(a['_src'])].where(a['_line'])} vs "
        f"{_shown(b[field])} at {batches[int(b['_src'])].where(b['_line'])}"
    )


def _same(a: object, b: object) -> bool:
    """Equal, with two missing values equal (as ``IS NOT DISTINCT FROM``)."""
    missing_a, missing_b = bool(pd.isna(a)), bool(pd.isna(b))
    return missing_a and missing_b or (not missing_a and not missing_b and a == b)


def _shown(value: object, width: int = 40) -> str:
    """A value as an error message shows it: ``none`` when missing, long text cut."""
    if pd.isna(value):
        return "none"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _classify(
    con: duckdb.DuckDBPyConnection, rows: pd.DataFrame, keep: np.ndarray
) -> tuple[np.ndarray, dict[str, int]]:
    """(NEW / STORED / CONFLICT per row, how many rows change each field of ``VALUES``). Only (model,
    benchmark, config, run) groups the store already holds are joined, so adding a new model or config
    costs no join at all. A value the batch lacks is compared as missing: storing the row would erase it."""
    status = np.full(len(rows), NEW, dtype=np.int8)
    groups = ["model", "benchmark", "config", "run"]
    gcodes = key_codes(rows, groups)
    uniq, first = np.unique(gcodes, return_index=True)
    con.register("bg", pa.Table.from_pandas(rows.iloc[first][groups].assign(_g=uniq), preserve_index=False))
    held = con.sql(f"SELECT _g FROM bg SEMI JOIN responses USING ({', '.join(groups)})").df()["_g"].to_numpy()
    if not len(held):
        return status, {}
    overlap = keep & np.isin(gcodes, held)
    con.register(
        "b", _typed(rows.loc[overlap], RESPONSE_KEY + VALUES).append_column("_row", pa.array(np.flatnonzero(overlap)))
    )
    differs = ", ".join(f"bool_or(s.{c} IS DISTINCT FROM b.{c}) AS {c}" for c in VALUES)
    found = con.sql(f"SELECT b._row, {differs} FROM b JOIN responses s ON {_on('b')} GROUP BY b._row").df()
    changed = found[VALUES].to_numpy(dtype=bool)
    status[found["_row"].to_numpy()] = np.where(changed.any(axis=1), CONFLICT, STORED)
    return status, {c: int(n) for c, n in zip(VALUES, changed.sum(axis=0)) if n}


def _typed(rows: pd.DataFrame, cols: list[str]) -> pa.Table:
    """``cols`` of ``rows`` typed as the responses table stores them (absent ones as nulls), so a comparison
    with stored values compares what would be stored."""
    return pa.table(
        {
            c: pa.array(rows[c], from_pandas=True).cast(RESPONSES.field(c).type)
            if c in rows
            else pa.nulls(len(rows), RESPONSES.field(c).type)
            for c in cols
        }
    )


def _conflict_message(
    con: duckdb.DuckDBPyConnection,
    rows: pd.DataFrame,
    batches: list[Batch],
    conflicts: np.ndarray,
    changed: dict[str, int],
) -> str:
    sample = rows.iloc[conflicts[:SHOW]]
    c = _typed(sample, RESPONSE_KEY + VALUES)
    con.register(
        "c", c.append_column("_src", pa.array(sample["_src"])).append_column("_line", pa.array(sample["_line"]))
    )
    stored = ", ".join(f"s.{v} AS s_{v}" for v in VALUES)
    shown = con.sql(
        f"""SELECT c.*, {stored}
            FROM c JOIN responses s ON {_on("c")} QUALIFY row_number() OVER (PARTITION BY c._line, c._src) = 1
            ORDER BY c._src, c._line"""
    ).df()
    examples = "; ".join(
        f"{_key_text(r)}: {field} stored {_shown(r['s_' + field])}, new {_shown(r[field])} at "
        f"{batches[int(r['_src'])].where(r['_line'])}"
        for _, r in shown.iterrows()
        for field in [next(v for v in VALUES if not _same(r[v], r["s_" + v]))]
    )
    fields = ", ".join(f"{field} in {n}" for field, n in changed.items())
    return (
        f"{len(conflicts)} row(s) change values the store holds for the same model, benchmark, item, config and "
        f"run ({fields}), e.g. {examples}. Nothing was written; pass --replace to store the new values (the old "
        "ones stay in `trajaudit inspect --history`)."
    )


def _key_text(r: pd.Series) -> str:
    return " ".join(f"{k}={r[k]}" for k in RESPONSE_KEY)


def _drop_stored(w: Writer, con: duckdb.DuckDBPyConnection, keys: pd.DataFrame) -> None:
    """Move the stored rows of ``keys`` (with the ``run_id`` replacing each) to the history table, and
    rewrite every response file holding one of them without those rows, retiring the old file."""
    files = list(w.manifest.files["responses"])
    paths = {str(w.store.root / f): f for f in files}
    con.register("drop_keys", pa.Table.from_pandas(keys, preserve_index=False))
    old = con.sql(
        f"SELECT s.*, $seq::BIGINT AS replaced_seq, k.run_id AS replaced_by FROM responses s JOIN drop_keys k USING ({_KEY})",
        params={"seq": w.seq},
    ).to_arrow_table()
    w.add("history", old)
    hit = con.execute(
        f"SELECT DISTINCT filename FROM read_parquet($files, filename = true) SEMI JOIN drop_keys USING ({_KEY})",
        {"files": list(paths)},
    ).fetchall()
    for (path,) in hit:
        kept = con.sql(f"SELECT * FROM read_parquet($f) ANTI JOIN drop_keys USING ({_KEY})", params={"f": path})
        w.retire("responses", [paths[path]])
        w.add("responses", kept.to_arrow_table(), supersedes=[paths[path]])


def _merge_items(
    con: duckdb.DuckDBPyConnection, rows: pd.DataFrame, batches: list[Batch], replace: bool
) -> pd.DataFrame:
    """The item rows to write: new items, and stored items whose merged fields changed."""
    cols = [c for c in ITEM_COLUMNS if c not in ITEM_KEY]
    absent = {c: pa.nulls(len(rows), ITEMS.field(c).type) for c in cols if c not in rows}
    present = [c for c in ITEM_KEY + cols + ["_src", "_line"] if c in rows]
    bi = pa.Table.from_pandas(rows[present].assign(_row=np.arange(len(rows))), preserve_index=False)
    for c, nulls in absent.items():
        bi = bi.append_column(c, nulls)
    con.register("bi", bi)
    firsts = ", ".join(f'min_by("{c}", _row) FILTER (WHERE "{c}" IS NOT NULL) AS "{c}"' for c in cols)
    new = con.sql(
        f"""SELECT benchmark, item_id, {firsts}, min(target) <> max(target) AS split_target
            FROM bi GROUP BY benchmark, item_id"""
    )
    con.register("ni", new.to_arrow_table())
    split_targets = con.sql(
        f"""SELECT benchmark, item_id, target, arg_min(_src, _row) AS src, arg_min(_line, _row) AS line
            FROM bi SEMI JOIN (SELECT * FROM ni WHERE split_target LIMIT {SHOW}) USING (benchmark, item_id)
            WHERE target IS NOT NULL GROUP BY ALL ORDER BY min(_row)"""
    ).df()
    if len(split_targets):
        ex = "; ".join(
            f"{bench}/{item}: " + " vs ".join(f"{r.target} at {batches[r.src].where(r.line)}" for r in g.itertuples())
            for (bench, item), g in split_targets.groupby(["benchmark", "item_id"], sort=False)
        )
        raise UserError(f"the same item has different targets in the input: {ex}")
    merged = ", ".join(f'coalesce(n."{c}", o."{c}") AS "{c}"' for c in cols)
    changed = " OR ".join(f'coalesce(n."{c}", o."{c}") IS DISTINCT FROM o."{c}"' for c in cols)
    out = con.sql(
        f"""SELECT n.benchmark, n.item_id, {merged},
                   n.target IS NOT NULL AND o.target IS NOT NULL AND n.target <> o.target AS target_conflict,
                   o.target AS stored_target
            FROM ni n LEFT JOIN items o USING (benchmark, item_id)
            WHERE o.item_id IS NULL OR {changed}"""
    ).df()
    clash = out[out["target_conflict"]]
    if len(clash) and not replace:
        ex = ", ".join(
            f"{r.benchmark}/{r.item_id} (stored {r.stored_target}, new {r.target})"
            for r in clash.head(SHOW).itertuples()
        )
        raise UserError(
            f"{len(clash)} item(s) have a different target in the store: {ex}. Nothing was written; "
            "pass --replace to overwrite (responses already stored keep the correctness they were stored with)."
        )
    return out.drop(columns=["target_conflict", "stored_target"])


def _runs(batches: list[Batch], results: list[FileResult], options: dict, now: pd.Timestamp) -> pd.DataFrame:
    try:
        version = metadata.version("trajaudit")
    except metadata.PackageNotFoundError:
        version = None
    rows = [
        {
            "run_id": b.run_id,
            "origin": "ingest",
            "source": str(b.path.resolve()),
            "format": b.format,
            "sha256": b.sha256,
            "args": json.dumps(
                {
                    "options": options,
                    "settings": b.settings,
                    "counts": {
                        "new": r.new,
                        "already_stored": r.already_stored,
                        "replaced": r.replaced,
                        "duplicates": r.duplicates,
                    },
                },
                default=str,
            ),
            "n_rows": r.rows,
            "code_version": version,
            "created_at": now,
        }
        for b, r in zip(batches, results)
        if r.run_id
    ]
    return pd.DataFrame(rows)
