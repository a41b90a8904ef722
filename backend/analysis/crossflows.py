"""Cross-model and cross-checkpoint flows: which items one model (or a fine-tune) gains or loses over another.

The flow machinery is ``backend.analysis.metrics.transition_between`` on a matched matrix of the two models,
so the numbers mean exactly what the within-model flows mean. Matching follows docs/metrics.md: both
models need every configuration asked for (``config`` and ``config_b``) and only the items with all
of those responses count. The record is broken down by benchmark and by task type (e.g. a base
model vs its video fine-tune on image and video benchmarks), and lists the items behind each flow.
"""

from __future__ import annotations

from typing import Literal, overload

import numpy as np
import pandas as pd

from backend.analysis.mcnemar import mcnemar_exact
from backend.analysis.metrics import transition_between, transition_numbers
from backend.contracts.audits import BenchmarkFlows, CrossmodelAudit, ItemRef, TaskTypeFlows
from backend.contracts.base import from_rows
from backend.scope.matrix import Matrix
from store import configs
from store.errors import UserError


@overload
def _breakdown(flows: pd.DataFrame, by: Literal["benchmark"]) -> list[BenchmarkFlows]: ...
@overload
def _breakdown(flows: pd.DataFrame, by: Literal["task_type"]) -> list[TaskTypeFlows]: ...
def _breakdown(flows: pd.DataFrame, by: str) -> list[BenchmarkFlows] | list[TaskTypeFlows]:
    """Rescued/harmed/net/churn per value of ``by`` (vectorised groupby over per-item flags)."""
    g = flows.groupby(flows[by].fillna("(none)"), sort=True)
    table = pd.DataFrame({"n": g.size(), "rescued": g["rescued"].sum(), "harmed": g["harmed"].sum()})
    table["net"] = (table["rescued"] - table["harmed"]) / table["n"]
    table["churn"] = (table["rescued"] + table["harmed"]) / table["n"]
    table["mcnemar_p"] = np.atleast_1d(mcnemar_exact(table["rescued"].to_numpy(), table["harmed"].to_numpy()))
    rows = table.reset_index(names=by).to_dict(orient="records")
    return from_rows(rows, BenchmarkFlows) if by == "benchmark" else from_rows(rows, TaskTypeFlows)


def flow_flags(matrix: Matrix, source: tuple[str, str], target: tuple[str, str]) -> pd.DataFrame:
    """Per item of the matrix: benchmark, item_id, task_type and whether it is rescued or harmed."""
    ya = matrix.correct[matrix.model_index(source[0]), :, matrix.config_index(source[1])].astype(bool)
    yb = matrix.correct[matrix.model_index(target[0]), :, matrix.config_index(target[1])].astype(bool)
    return matrix.items[["benchmark", "item_id", "task_type"]].assign(rescued=~ya & yb, harmed=ya & ~yb)


def pair_grid(model_a: str, model_b: str, config: str, config_b: str | None = None) -> list[str]:
    """The configs a cross-model audit reads (one, or A's and B's); ``UserError`` when both sides are the same."""
    if model_a == model_b and (config_b is None or configs.canonical(config_b) == configs.canonical(config)):
        raise UserError("crossmodel needs two different models, or two configs of one model")
    cb = config if config_b is None else config_b
    return list(dict.fromkeys([configs.canonical(config), configs.canonical(cb)]))


def cross_flows(
    matrix: Matrix,
    model_a: str,
    model_b: str,
    grid: list[str],
    limit: int = 50,
    item_columns: tuple[str, ...] = ("benchmark", "item_id"),
) -> CrossmodelAudit:
    """The ``audit crossmodel --json`` contract: flows from (model_a, grid[0]) to (model_b, grid[-1]).

    ``matrix`` holds both models over ``grid`` (``pair_grid``); ``item_columns`` (columns of ``Matrix.items``)
    are what the harmed and rescued item lists carry.
    """
    source, target = (model_a, grid[0]), (model_b, grid[-1])
    record = transition_between(matrix, source, target)
    flags = flow_flags(matrix, source, target)
    ids = {
        kind: matrix.items.loc[flags[kind].to_numpy(), list(item_columns)].head(limit) for kind in ("rescued", "harmed")
    }
    return CrossmodelAudit(
        **transition_numbers(record),
        from_model=record.from_model,
        to_model=record.to_model,
        n_items=matrix.n_items,
        n_excluded=matrix.n_excluded,
        accuracy_from=float(matrix.correct[matrix.model_index(model_a), :, matrix.config_index(grid[0])].mean()),
        accuracy_to=float(matrix.correct[matrix.model_index(model_b), :, matrix.config_index(grid[-1])].mean()),
        by_benchmark=_breakdown(flags, "benchmark"),
        by_task_type=_breakdown(flags, "task_type"),
        harmed_items=from_rows(ids["harmed"].to_dict(orient="records"), ItemRef),
        rescued_items=from_rows(ids["rescued"].to_dict(orient="records"), ItemRef),
    )
