"""Repeats of each matrix cell: every stored response of the same model and item at the cell's budget.

A budget is (frames, pixels per frame), whatever the label's ``run`` id, seed, sampling policy or pipeline
tag, so ``64f``, ``64f/random-s1`` and a re-run of ``64f`` are three repeats of budget 64 frames. The
matrix keeps one row per cell, so the repeats are counted here from the ``responses`` view; what they say
about noise (flip rates, flips within or beyond it) is ``backend.analysis.noise``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from backend.scope import arrow_numpy
from backend.scope.matrix import Matrix, main_only
from store import configs
from store.store import Store


@dataclass(frozen=True)
class Repeats:
    """Per (model, item, config) cell of a matrix: responses at its budget and how many are right."""

    n_repeats: np.ndarray  # int32 [M, I, C]
    n_right: np.ndarray  # int32 [M, I, C]


def _budget_table(labels: list[str]) -> pa.Table:
    """config -> (frames, pixels) for the distinct labels, pixels -1 for the default resolution (Arrow: the
    Overview's beyond-noise bars read this, and a frame would import pandas there)."""
    parsed = [configs.parse(lab) for lab in labels]
    return arrow_numpy.table(
        {
            "config": arrow_numpy.strings(labels),
            "frames": arrow_numpy.array(np.array([c.frames for c in parsed], dtype=np.int64)),
            "pixels": arrow_numpy.array(
                np.array([-1 if c.pixels is None else c.pixels for c in parsed], dtype=np.int64)
            ),
        }
    )


def load_repeats(store: Store, matrix: Matrix) -> Repeats:
    """Count every response at each matrix cell's budget, and the right ones, in one DuckDB query."""
    shape = matrix.correct.shape
    n_rep = np.zeros(shape, dtype=np.int32)
    n_right = np.zeros(shape, dtype=np.int32)
    with store.connect() as con:
        labels = [
            r[0]
            for r in con.execute(
                f"SELECT DISTINCT config FROM responses WHERE list_contains($m, model) AND {main_only()}",
                {"m": matrix.models},
            ).fetchall()
        ]
        known = [lab for lab in labels if _parses(lab)]
        con.register("budgets", _budget_table(known))
        con.register(
            "grid_budgets",
            _budget_table(matrix.grid).append_column("c", arrow_numpy.array(np.arange(len(matrix.grid)))),
        )
        keys = matrix.item_table.select(["benchmark", "item_id"])
        con.register("scope_items", keys.append_column("i", arrow_numpy.array(np.arange(matrix.n_items))))
        models = {"model": arrow_numpy.strings(matrix.models), "m": arrow_numpy.array(np.arange(len(matrix.models)))}
        con.register("scope_models", arrow_numpy.table(models))
        cells = con.execute(
            f"""
            WITH reps AS (
                SELECT sm.m, si.i, b.frames, b.pixels, count(*)::INTEGER AS n, sum(coalesce(r.correct, 0))::INTEGER AS k
                FROM responses r
                JOIN scope_models sm ON sm.model = r.model
                JOIN scope_items si ON si.benchmark = r.benchmark AND si.item_id = r.item_id
                JOIN budgets b ON b.config = r.config
                WHERE {main_only("r.")}
                GROUP BY ALL
            )
            SELECT reps.m, reps.i, g.c, reps.n, reps.k
            FROM reps JOIN grid_budgets g ON g.frames = reps.frames AND g.pixels = reps.pixels
            """
        ).fetchnumpy()
    idx = (cells["m"].astype(np.int64), cells["i"].astype(np.int64), cells["c"].astype(np.int64))
    n_rep[idx] = cells["n"]
    n_right[idx] = cells["k"]
    return Repeats(n_rep, n_right)


def _parses(label: str) -> bool:
    try:
        configs.parse(label)
    except configs.ConfigLabelError:
        return False
    return True
