"""The configurations a model has in the store, in grid order: what protocol and iso-compute audits choose from.

The matrix is built over a grid already chosen; the audits first ask which labels exist at all (other
protocols at the same budget, other allocations of the same pixels), so they read them here.
"""

from __future__ import annotations

from backend.scope.matrix import main_only
from store import configs
from store.store import Store


def store_labels(store: Store, model: str, benchmark: str | None = None, reruns: bool = True) -> list[str]:
    """The configs ``model`` has in the store (on ``benchmark``), in grid order.

    Other protocols include live re-runs: re-running terminal regressions under another policy is
    how the intervention is measured, an explicit comparison. Base grids use main runs only.
    """
    df = store.query(
        "SELECT DISTINCT config FROM responses WHERE model = $m AND ($b IS NULL OR benchmark = $b)"
        + ("" if reruns else f" AND {main_only()}"),
        {"m": model, "b": benchmark},
    )
    return configs.order(df["config"].tolist())
