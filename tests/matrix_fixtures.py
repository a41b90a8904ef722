"""Hand-checkable stores for the metric tests: ``{model: {config: [y per item]}}`` in, a Store out.

Item ``k`` of every list is item ``i{k}``; ``None`` in a list means "no response" (for matched-grid
tests). Optional dicts of the same shape give confidences and continuous scores.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from backend.contracts.store import StoreContents
from store.store import Store

Trajectories = dict[str, dict[str, list]]


def store_contents(**fields: Any) -> StoreContents:
    """What ``available()`` says of a store, from the fields a test names (the rest empty)."""
    empty: dict[str, Any] = dict.fromkeys(("models", "benchmarks", "task_types", "durations", "domains"), [])
    empty |= dict.fromkeys(("configs", "coverage", "model_items", "reruns"), {})
    empty |= dict.fromkeys(("n_responses", "n_rerun_responses", "n_items"), 0)
    return StoreContents(**(empty | fields))


# The basic hand-checked store, model m: five items on text < 8f < 16f < 32f (one resolution, so cost follows
# frames):
#        text 8f 16f 32f
#   i0    1   1   1   1    stable-correct
#   i1    0   1   0   1    confused (8f=1, 16f=0), oscillating
#   i2    1   0   0   0    text overwrite, confused, terminal regression (32f wrong, text right)
#   i3    0   0   1   1    monotone gain
#   i4    0   0   0   0    stable-wrong
# The headline rates that carry a bootstrap interval (``ci``), written out by hand rather than read from the
# code, so a renamed or dropped key fails the tests that compare against it (docs/metrics.md).
HEADLINES_WITH_CI = {
    "best_fixed",
    "oracle_accuracy",
    "oracle_headroom",
    "visual_confusion_rate",
    "text_overwrite_rate",
    "text_overwrite_of_text_correct",
    "mean_churn",
}

BASIC = {
    "m": {
        "text": [1, 0, 1, 0, 0],
        "8f": [1, 1, 0, 0, 0],
        "16f": [1, 0, 0, 1, 0],
        "32f": [1, 1, 0, 1, 0],
    }
}


def response_rows(
    data: Trajectories,
    benchmark: str = "bench",
    confidence: Trajectories | None = None,
    score: Trajectories | None = None,
    **constant,
) -> pd.DataFrame:
    """Long response rows for every non-None cell; ``constant`` columns (run, origin, ...) on all rows."""
    frames = []
    for model, per_config in data.items():
        for config, ys in per_config.items():
            frame = pd.DataFrame({"item_id": [f"i{k}" for k in range(len(ys))], "correct": ys})
            if confidence is not None:
                frame["confidence"] = confidence[model][config]
            if score is not None:
                frame["score"] = score[model][config]
            frame = frame[frame["correct"].notna()].assign(model=model, config=config, benchmark=benchmark)
            frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["correct"] = out["correct"].astype("int8")
    return out.assign(**constant)


def item_rows(n_items: int, benchmark: str = "bench", **columns) -> pd.DataFrame:
    """Items ``i0..`` with metadata columns given as lists (task_type=[...], question=[...])."""
    return pd.DataFrame({"benchmark": benchmark, "item_id": [f"i{k}" for k in range(n_items)], **columns})


def build_store(root, data: Trajectories, items: pd.DataFrame | None = None, **kwargs) -> Store:
    """A store at ``root`` holding ``data`` (and item rows: default bare items ``i0..``) in one batch."""
    store = Store(root)
    n_items = max(len(ys) for per in data.values() for ys in per.values())
    store.append(
        {
            "responses": response_rows(data, **kwargs),
            "items": items if items is not None else item_rows(n_items, kwargs.get("benchmark", "bench")),
        }
    )
    return store


def store_from_rows(root, frames: list[pd.DataFrame], n_items: int) -> Store:
    """A store holding the given response frames (e.g. repeats with their own run/origin/dates)."""
    store = Store(root)
    store.append({"responses": pd.concat(frames, ignore_index=True), "items": item_rows(n_items)})
    return store


def store_from_writes(root, frames: list[pd.DataFrame], n_items: int) -> Store:
    """A store holding the given response frames, each its own write in list order (the store's order of
    writes is what "written earlier" means, never the frames' ``written_at``)."""
    store = Store(root)
    store.append({"items": item_rows(n_items)})
    for frame in frames:
        store.append({"responses": frame})
    return store


def basic_store(root) -> Store:
    """BASIC with the item metadata the metric and read-side CLI tests look at: task types A A B B B,
    videos ``v0..v4``, and one question ("Count the cats") for the search filter."""
    items = item_rows(
        5,
        task_type=["A", "A", "B", "B", "B"],
        question=["q0", "q1", "Count the cats", "q3", "q4"],
        video=[f"v{k}" for k in range(5)],
    )
    return build_store(root, BASIC, items=items)
