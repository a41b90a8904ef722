"""Tiny hand-written stores for the policy and audit tests: dense arrays in, long store rows out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from store.store import Store


def responses(
    model: str,
    grid: list[str],
    correct,
    confidence=None,
    item_ids: list[str] | None = None,
    benchmark: str = "bench",
    run: str = "main",
) -> pd.DataFrame:
    """Long response rows from ``correct[I, C]`` (and ``confidence[I, C]``, NaN = none) over ``grid``."""
    y = np.asarray(correct, dtype=np.int8)
    n_items, n_cfg = y.shape
    ids = item_ids or [f"q{i}" for i in range(n_items)]
    conf = np.full(y.shape, np.nan) if confidence is None else np.asarray(confidence, dtype=float)
    return pd.DataFrame(
        {
            "model": model,
            "benchmark": benchmark,
            "item_id": np.repeat(ids, n_cfg),
            "config": np.tile(grid, n_items),
            "run": run,
            "correct": y.ravel(),
            "confidence": conf.ravel(),
        }
    )


def items(n_items: int, benchmark: str = "bench", **columns) -> pd.DataFrame:
    """Item rows ``q0..q{n-1}`` with optional metadata columns (lists of length n)."""
    return pd.DataFrame({"benchmark": benchmark, "item_id": [f"q{i}" for i in range(n_items)], **columns})


def build(store: Store, *frames: pd.DataFrame, item_rows: pd.DataFrame | None = None) -> Store:
    """Publish response frames (and items) in one batch."""
    batch = {"responses": pd.concat(frames, ignore_index=True)}
    if item_rows is not None:
        batch["items"] = item_rows
    store.append(batch)
    return store
