"""Item annotations: a controlled vocabulary of evidence pathways plus free notes, kept in the store.

Why append-only: the dashboard, the CLI and several users write at once, and the store publishes
whole batches through its manifest under the writers' lock, so an ``append`` can never lose a
concurrent one. Deleting therefore appends a *tombstone* (the same ``annotation_id`` with
``deleted=True`` and a later ``created_at``); the live state of an annotation is its latest row.
``backend.scope.filters`` applies the same rule when the item browser filters by tag.
"""

from __future__ import annotations

import getpass
import os
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa

from backend.contracts.base import built
from backend.contracts.store import Annotation
from backend.scope import arrow_numpy
from store.errors import UserError
from store.schema import order_key_sql
from store.store import Store

if TYPE_CHECKING:  # the writes and the pages' frames import it; ``trajaudit items --annotations`` needs none
    import pandas as pd

# Evidence pathways a researcher can attribute a behaviour to (the paper's and its readers' vocabulary).
VOCABULARY: dict[str, str] = {
    "evidence-missed-by-sampling": "the frames that answer the question were not sampled",
    "distractor-frames": "added frames carry misleading evidence that pulls the answer away",
    "counting": "the question counts objects or events",
    "text-prior-overridden": "the text-only answer was right and visual input overrode it",
    "letter-prior": "the answer follows a preference for an option letter, not the evidence",
    "temporal-order": "the question needs the order of events",
    "ocr": "the answer needs text read from the frames",
    "other": "none of the above; say what in the note",
}

COLUMNS = ["annotation_id", "benchmark", "item_id", "model", "tag", "note", "author", "created_at"]

# The live rows: the latest row of each annotation_id, unless that row is a tombstone.
_LIVE_SQL = f"""
    SELECT annotation_id, benchmark, item_id, model, tag, note, author, created_at
    FROM (SELECT * FROM annotations
          QUALIFY row_number() OVER (PARTITION BY annotation_id ORDER BY {order_key_sql(time="created_at")} DESC) = 1)
    WHERE NOT coalesce(deleted, false)
"""


def default_author() -> str:
    """``$TRAJAUDIT_AUTHOR``, else the login name (containers may have none: then "anonymous")."""
    try:
        return os.environ.get("TRAJAUDIT_AUTHOR") or getpass.getuser()
    except (KeyError, OSError):
        return "anonymous"


def check_tag(tag: str) -> str:
    """The tag if it is in the vocabulary, else a ``UserError`` listing the allowed ones."""
    if tag not in VOCABULARY:
        raise UserError(f"unknown annotation tag {tag!r}: use one of {', '.join(VOCABULARY)}")
    return tag


def _require(value: str | None, what: str) -> str:
    if value is None or not str(value).strip():
        raise UserError(f"annotation {what} is empty")
    return str(value).strip()


_Text = TypeVar("_Text", bound=str | None)  # _capped returns what it is given: a str stays a str


def _capped(value: _Text, what: str, *, name: bool = False) -> _Text:
    """``value`` if it fits the field limit ingest applies (``MAX_FIELD_CHARS``): a note is drawn in
    full on every item page, so a megabyte of text would be a megabyte on each of them. A ``name``
    (the author) must also be visible text, as ingested names must (``gate.unshown_problem``)."""
    from store.ingest.gate import MAX_FIELD_CHARS, unshown_problem  # the ingest package imports pandas: writes only

    if value is not None and len(value) > MAX_FIELD_CHARS:
        raise UserError(
            f"annotation {what} has {len(value):,} characters, above the {MAX_FIELD_CHARS:,}-character limit "
            "(the same as an ingested field); shorten it"
        )
    problem = unshown_problem(value) if name and value is not None else None
    if problem:
        raise UserError(f"annotation {what} {problem}")
    return value


def _item_known(store: Store, benchmark: str, item_id: str) -> bool:
    sql = (
        "SELECT EXISTS (SELECT 1 FROM items_all WHERE benchmark = $b AND item_id = $i) "
        "OR EXISTS (SELECT 1 FROM responses WHERE benchmark = $b AND item_id = $i)"
    )
    with store.connect() as con:
        row = con.execute(sql, {"b": benchmark, "i": item_id}).fetchone()  # one row: EXISTS OR EXISTS
    return row is not None and bool(row[0])


def add_annotation(
    store: Store,
    benchmark: str,
    item_id: str,
    tag: str,
    note: str | None,
    author: str,
    model: str | None = None,
) -> Annotation:
    """Record one annotation on an item (optionally about one model); returns the row written.

    The item must be known to the store (in ``items`` or ``responses``), so a typo in an id does not
    leave an annotation that no view will ever show.
    """
    import pandas as pd

    check_tag(tag)
    note, author = _capped(note, "note"), _capped(author, "author", name=True)
    benchmark, item_id, author = (
        _require(benchmark, "benchmark"),
        _require(item_id, "item id"),
        _require(author, "author"),
    )
    if not _item_known(store, benchmark, item_id):
        raise UserError(f"unknown item {item_id!r} in benchmark {benchmark!r}: nothing to annotate")
    row = {
        "annotation_id": uuid.uuid4().hex,
        "benchmark": benchmark,
        "item_id": item_id,
        "model": model or None,
        "tag": tag,
        "note": (note or "").strip() or None,
        "author": author,
        "deleted": False,
        "created_at": pd.Timestamp.now(tz="UTC"),
    }
    store.append({"annotations": pd.DataFrame([row])})
    return annotation(row)


def delete_annotation(store: Store, annotation_id: str, author: str | None = None) -> Annotation:
    """Retire one live annotation by appending its tombstone; returns the annotation deleted.

    Read and write happen under the writers' lock, so two deletes of the same id cannot both pass
    the "is it live" check. The tombstone's time is after the original's even on a skewed clock.
    """
    import pandas as pd

    with store.writer() as w:
        with w.connect() as con:
            live = con.execute(f"SELECT * FROM ({_LIVE_SQL}) WHERE annotation_id = ?", [annotation_id]).df()
        if live.empty:
            raise UserError(f"no live annotation with id {annotation_id!r} (unknown or already deleted)")
        original = live.iloc[0]
        now = pd.Timestamp.now(tz="UTC")
        tomb = live.assign(
            deleted=True,
            author=author or original["author"],
            created_at=now,  # display only: the store's write sequence makes the tombstone the latest row
        )
        w.add("annotations", tomb)
    return annotation(original)


def annotation(row: Mapping[str, object]) -> Annotation:
    """One stored row (its ``COLUMNS``) as the contract ``annotate add|delete|list --json`` print, checked once: a
    missing model or note is None, the time its ISO-8601 text."""
    import pandas as pd

    values = {k: None if row[k] is None or (isinstance(row[k], float) and pd.isna(row[k])) else row[k] for k in COLUMNS}
    values["created_at"] = pd.Timestamp(values["created_at"]).isoformat()
    return built(values, Annotation)


def records(frame: pd.DataFrame) -> list[Annotation]:
    """``annotations_for``'s rows as contracts, in its order (newest first)."""
    return [annotation(row) for row in frame.to_dict("records")]


def annotations_for(
    store: Store,
    benchmark: str | None = None,
    item_id: str | None = None,
    tag: str | None = None,
    model: str | None = None,
) -> pd.DataFrame:
    """Live annotations (tombstones applied), newest first, optionally narrowed; columns ``COLUMNS``.

    ``model`` keeps the annotations about that model and those about the item for every model.
    """
    if tag is not None:
        check_tag(tag)
    sql = (
        f"SELECT * FROM ({_LIVE_SQL}) WHERE ($b IS NULL OR benchmark = $b) AND ($i IS NULL OR item_id = $i) "
        "AND ($t IS NULL OR tag = $t) AND ($m IS NULL OR model IS NULL OR model = $m) "
        "ORDER BY created_at DESC, annotation_id"
    )
    with store.connect() as con:
        return con.execute(sql, {"b": benchmark, "i": item_id, "t": tag, "m": model}).df()


_SUMMARY_SQL = f"""
    SELECT benchmark, item_id,
           array_to_string(list_sort(list(DISTINCT tag)), ';') AS annotation_tags,
           array_to_string(list(author || ': ' || note ORDER BY created_at) FILTER (note IS NOT NULL), ' | ')
               AS annotation_notes,
           count(*) AS n_annotations
    FROM ({_LIVE_SQL}) WHERE ($b IS NULL OR benchmark = $b)
    GROUP BY benchmark, item_id
"""


def item_annotation_summary(store: Store, benchmark: str | None = None) -> pd.DataFrame:
    """One row per annotated item: its distinct tags and its notes joined, for item exports.

    Columns: ``benchmark, item_id, annotation_tags`` ("a;b", sorted), ``annotation_notes``
    ("author: note" joined by " | ", oldest first) and ``n_annotations``.
    """
    with store.connect() as con:
        return con.execute(f"{_SUMMARY_SQL} ORDER BY benchmark, item_id", {"b": benchmark}).df()


SUMMARY_COLUMNS = ["annotation_tags", "annotation_notes", "n_annotations"]


def annotation_columns(keys: pa.Table, store: Store, benchmark: str | None = None) -> pa.Table:
    """The ``item_annotation_summary`` columns of the items ``keys`` lists (``benchmark``, ``item_id``; one row
    per item, in its order), joined in DuckDB. Items without annotations get empty tags and notes and
    ``n_annotations = 0``, so an export has the same columns whatever was annotated."""
    positions = arrow_numpy.array(np.arange(keys.num_rows, dtype=np.int64))
    rows = keys.select(["benchmark", "item_id"]).append_column("_row", positions)
    sql = f"""
        SELECT coalesce(s.annotation_tags, '') AS annotation_tags, coalesce(s.annotation_notes, '') AS annotation_notes,
               coalesce(s.n_annotations, 0)::BIGINT AS n_annotations
        FROM keys_ k LEFT JOIN ({_SUMMARY_SQL}) s ON s.benchmark = k.benchmark AND s.item_id = k.item_id
        ORDER BY k._row
    """
    with store.connect() as con:
        con.register("keys_", rows)
        return con.sql(sql, params={"b": benchmark}).to_arrow_table()


def with_annotations(frame: pd.DataFrame, store: Store, benchmark: str | None = None) -> pd.DataFrame:
    """``frame`` (one row per item: benchmark, item_id, ...) with its :func:`annotation_columns`: the pages'
    and the CSV export's shape."""
    keys = pa.Table.from_pandas(frame[["benchmark", "item_id"]], preserve_index=False)
    return frame.assign(**annotation_columns(keys, store, benchmark).to_pandas().set_axis(frame.index))


def annotation_tags(store: Store, items: pd.DataFrame, benchmark: str | None = None) -> pd.Series | None:
    """Each item's annotation tags ("a;b", aligned with ``items``), or None when the store holds no annotation
    file (nothing to look up, and the merge is not free)."""
    if not store.manifest().files.get("annotations"):
        return None
    return with_annotations(items[["benchmark", "item_id"]], store, benchmark)["annotation_tags"]
