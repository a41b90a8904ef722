"""One model's chosen letters and raw-output kinds over a matrix's items and grid, read in one query.

``explain`` asks what a flip was made of: which letter the model chose (the letter prior, where a flow
went) and whether the raw output was something a parser could read at all. The matrix does not carry
``raw_output``, so this reads it, classified in DuckDB (the strings never reach Python), for the cell the
matrix uses (``backend.scope.matrix``'s preference: not a re-run first, then run ``main``, then the
earliest written).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from backend.scope.matrix import Matrix, main_only
from store.store import Store


@dataclass(frozen=True)
class AnswerCells:
    """``answer[I, C]``: the parsed letter (None: no answer); ``kind[I, C]``: the raw output's kind, a code
    into ``backend.analysis.explain.RAW_KINDS`` (0 parsed, 1 empty, 2 degenerate, 3 unparsed)."""

    answer: np.ndarray
    kind: np.ndarray


# Raw-output kinds in SQL: empty (null or whitespace), degenerate (two or more characters, every one the
# first: "AAAA", "...."), unparsed (text but no letter extracted), else parsed.
_KIND_SQL = """CASE WHEN t IS NULL OR length(t) = 0 THEN 1
                    WHEN length(t) >= 2 AND length(replace(t, left(t, 1), '')) = 0 THEN 2
                    WHEN answer IS NULL THEN 3 ELSE 0 END"""


def load_answer_cells(store: Store, matrix: Matrix, model: str, include_reruns: bool = False) -> AnswerCells:
    """The answers and raw-output kinds of ``model`` on every (item, configuration) of ``matrix``."""
    keys = pd.DataFrame({"benchmark": matrix.items["benchmark"].astype(str),
                         "item_id": matrix.items["item_id"].astype(str), "i": np.arange(matrix.n_items)})  # fmt: skip
    sql = f"""
        SELECT k.i, (list_position($grid, r.config) - 1)::INTEGER AS c, r.answer, {_KIND_SQL}::TINYINT AS kind
        FROM (SELECT benchmark, item_id, config, answer,
                     regexp_replace(raw_output, '^\\s+|\\s+$', '', 'g') AS t,
                     2 * (coalesce(origin, '') = 'rerun')::INTEGER + (coalesce(run, 'main') <> 'main')::INTEGER AS tier,
                     coalesce(epoch_us(written_at), 9223372036854775807) AS written
              FROM responses
              WHERE model = $model AND list_contains($grid, config) {"" if include_reruns else "AND " + main_only()}) r
        JOIN explain_keys k ON k.benchmark = r.benchmark AND k.item_id = r.item_id
        QUALIFY row_number() OVER (PARTITION BY k.i, r.config ORDER BY tier, written) = 1
    """
    with store.connect() as con:
        con.register("explain_keys", keys)
        try:
            rows = con.execute(sql, {"grid": list(matrix.grid), "model": model}).fetchnumpy()
        finally:
            con.unregister("explain_keys")
    shape = (matrix.n_items, len(matrix.grid))
    answer = np.full(shape, None, dtype=object)
    kind = np.ones(shape, dtype=np.int8)  # a cell without a row (none in a matched matrix) reads as empty
    idx = (np.asarray(rows["i"]), np.asarray(rows["c"]))
    a = rows["answer"]
    answer[idx] = np.where(np.ma.getmaskarray(a), None, np.ma.getdata(a))
    kind[idx] = np.asarray(rows["kind"])
    return AnswerCells(answer, kind)
