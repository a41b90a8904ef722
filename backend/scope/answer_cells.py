"""One model's chosen letters and raw-output kinds over a matrix's items and grid, read in one query.

``explain`` asks what a flip was made of: which letter the model chose (the letter prior, where a flow
went) and whether the raw output was something a parser could read at all. The matrix does not carry
``raw_output``, so this reads it, classified in DuckDB (the strings never reach Python), one row per cell
chosen as the matrix chooses (``backend.scope.matrix._winners``: not a re-run first, then run ``main``,
then the earliest written). Large results are kept in the store's cache folder (``backend.scope.diskcache``),
keyed on the response files, the model, the grid and the items: a scan of one model's 2.5M responses costs
about a second, a cached read milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from backend.scope import diskcache
from backend.scope.matrix import CACHE_MIN_CELLS, Matrix, _winners, main_only
from store.store import Store

ENTRY_FORMAT = "v1"


@dataclass(frozen=True)
class AnswerCells:
    """``letter[I, C]``: the parsed answer as a capital-letter code (0 "A" .. 25 "Z"; -1 no letter); ``kind[I, C]``:
    the raw output's kind, a code into ``backend.analysis.explain.RAW_KINDS`` (0 parsed, 1 empty, 2 degenerate,
    3 unparsed)."""

    letter: np.ndarray
    kind: np.ndarray


# Raw-output kinds in SQL: empty (null or whitespace), degenerate (two or more characters, every one the
# first: "AAAA", "...."), unparsed (text but no letter extracted), else parsed.
_KIND_SQL = """CASE WHEN t IS NULL OR length(t) = 0 THEN 1
                    WHEN length(t) >= 2 AND length(replace(t, left(t, 1), '')) = 0 THEN 2
                    WHEN answer IS NULL THEN 3 ELSE 0 END"""
_LETTER_SQL = "CASE WHEN length(answer) = 1 AND answer BETWEEN 'A' AND 'Z' THEN ascii(answer) - 65 ELSE -1 END"


def _query(store: Store, matrix: Matrix, model: str, include_reruns: bool) -> AnswerCells:
    keys = pd.DataFrame(
        {
            "benchmark": matrix.items["benchmark"].astype(str),
            "item_id": matrix.items["item_id"].astype(str),
            "i": np.arange(matrix.n_items),
        }
    )
    sql = f"""
        SELECT k.i, (list_position($grid, r.config) - 1)::INTEGER AS c, ({_LETTER_SQL})::TINYINT AS letter,
               ({_KIND_SQL})::TINYINT AS kind,
               (2 * (coalesce(r.origin, '') = 'rerun')::TINYINT + (coalesce(r.run, 'main') <> 'main')::TINYINT)::TINYINT
                   AS tier,
               coalesce(epoch_us(r.written_at), 9223372036854775807) AS written
        FROM (SELECT benchmark, item_id, config, answer, origin, run, written_at,
                     regexp_replace(raw_output, '^\\s+|\\s+$', '', 'g') AS t
              FROM responses
              WHERE model = $model AND list_contains($grid, config) {"" if include_reruns else "AND " + main_only()}) r
        JOIN explain_keys k ON k.benchmark = r.benchmark AND k.item_id = r.item_id
    """
    with store.connect() as con:
        con.register("explain_keys", keys)
        try:
            rows = con.execute(sql, {"grid": list(matrix.grid), "model": model}).fetchnumpy()
        finally:
            con.unregister("explain_keys")
    shape = (matrix.n_items, len(matrix.grid))
    cells = {
        "m": np.zeros(len(rows["i"]), dtype=np.int64),
        "i": np.asarray(rows["i"]),
        "c": np.asarray(rows["c"]),
        "tier": rows["tier"],
        "written": rows["written"],
    }
    win = _winners(cells, (1, *shape))
    letter = np.full(shape, -1, dtype=np.int8)
    kind = np.ones(shape, dtype=np.int8)  # a cell without a row (none in a matched matrix) reads as empty
    idx = (cells["i"][win], cells["c"][win])
    letter[idx], kind[idx] = np.asarray(rows["letter"])[win], np.asarray(rows["kind"])[win]
    return AnswerCells(letter, kind)


def load_answer_cells(
    store: Store, matrix: Matrix, model: str, include_reruns: bool = False, scope: object | None = None
) -> AnswerCells:
    """The answers and raw-output kinds of ``model`` on every (item, configuration) of ``matrix``.

    ``scope`` (the resolved ``Scope`` the matrix was loaded for) keys the cache entry with the store's files:
    it fixes the matrix's items. Without it the items themselves are hashed, a cost that grows with the items.
    """
    cells = matrix.n_items * len(matrix.grid)
    if cells < CACHE_MIN_CELLS:
        return _query(store, matrix, model, include_reruns)
    manifest = store.manifest()
    if scope is None:
        scope = int(pd.util.hash_pandas_object(matrix.items[["benchmark", "item_id"]], index=False).sum())
    key = diskcache.file_set_key(manifest, ("responses", "items"), model, list(matrix.grid), include_reruns, scope)
    entry = diskcache.folder(store) / f"answers-{ENTRY_FORMAT}-{key}"
    try:
        return AnswerCells(np.load(entry / "letter.npy"), np.load(entry / "kind.npy"))
    except (OSError, ValueError):
        pass
    out = _query(store, matrix, model, include_reruns)
    if store.manifest().version == manifest.version:

        def write(folder: Path) -> None:
            folder.mkdir()
            np.save(folder / "letter.npy", out.letter, allow_pickle=False)
            np.save(folder / "kind.npy", out.kind, allow_pickle=False)

        if diskcache.write_atomic(entry, write):
            diskcache.prune(entry.parent, "answers-*")
    return out
