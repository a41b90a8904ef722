"""Flow views of one model on a matched matrix: Sankey nodes and links, trajectory classes, heatmap order.

The flows page draws correct/wrong states per configuration and the items moving between them.
Links are aggregated per configuration pair (four kinds at most per pair, never one link per
item), so the Sankey stays readable at any number of items. The pair-level numbers (rescued,
harmed, net, churn, McNemar p) come from ``backend.analysis.metrics.transition`` so they are the same
numbers the metric engine reports; only the stable counts are added here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from backend.analysis.metrics import FLOW_KINDS, transition, transition_numbers
from backend.contracts.views import FlowKind, Sankey, SankeyLink, SankeyNode
from backend.scope.matrix import Matrix
from backend.scope.tags import changes, monotone_gain
from store.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

# (state at a, state at b) per flow kind; the code 2*y(a) + y(b) indexes this order.
_KIND_BY_CODE: tuple[FlowKind, ...] = ("stable-wrong", "rescued", "harmed", "stable-correct")
STATES: tuple[Literal["correct", "wrong"], ...] = ("correct", "wrong")

# Trajectory classes for ordering items (each item in exactly one, unlike the multi-label tags).
CLASSES = ("stable-correct", "monotone-gain", "regressing", "oscillating", "stable-wrong")
CLASS_HELP = {
    "stable-correct": "correct at every configuration",
    "monotone-gain": "wrong, then correct from one configuration on (one change, upward)",
    "regressing": "correct, then wrong from one configuration on (one change, downward)",
    "oscillating": "two or more changes of correctness along the grid",
    "stable-wrong": "wrong at every configuration",
}


def _config_positions(matrix: Matrix, labels: list[str] | None) -> list[int]:
    if labels is None:
        idx = list(range(len(matrix.grid)))
    else:
        idx = [matrix.config_index(label) for label in labels]
        if len(set(idx)) != len(idx):
            raise UserError(f"flows: a configuration is listed twice in {', '.join(labels)}")
    if len(idx) < 2:
        raise UserError(
            f"flows need at least two configurations (got {', '.join(matrix.grid[k] for k in idx) or 'none'})"
        )
    return idx


def _require_items(matrix: Matrix) -> None:
    if matrix.n_items == 0:
        raise UserError(f"no matched item to draw flows for ({matrix.n_excluded} excluded)")


def sankey(matrix: Matrix, model: str, configs: list[str] | None = None) -> Sankey:
    """The ``flows --json`` contract: state nodes per config and aggregated links per consecutive pair.

    ``configs`` (default: the whole grid) is the sequence drawn; two labels give the flows between
    two chosen configurations. Node ids are ``2k`` (correct at the k-th config) and ``2k + 1``
    (wrong); every pair has one link per kind of ``FLOW_KINDS`` (counts may be 0).
    """
    _require_items(matrix)
    m = matrix.model_index(model)
    idx = _config_positions(matrix, configs)
    labels = [matrix.grid[k] for k in idx]
    n = matrix.n_items
    y = matrix.correct[m][:, idx].astype(np.int8)  # [I, K]
    n_correct = y.sum(axis=0)
    nodes: list[SankeyNode] = [
        SankeyNode(id=2 * k + s, config=label, state=state, count=int(count), share=float(count / n))
        for k, label in enumerate(labels)
        for s, (state, count) in enumerate(zip(STATES, (n_correct[k], n - n_correct[k]), strict=True))
    ]
    code = 2 * y[:, :-1] + y[:, 1:]  # [I, P]
    counts = (code[..., None] == np.arange(4)).sum(axis=0)  # [P, 4] in _KIND_BY_CODE order
    links: list[SankeyLink] = []
    for p in range(len(labels) - 1):
        pair = transition(matrix, model, labels[p], labels[p + 1])
        for c, kind in enumerate(_KIND_BY_CODE):
            src_state, dst_state = c >> 1, c & 1  # 1 = correct
            links.append(
                SankeyLink(
                    source=2 * p + (1 - src_state),
                    target=2 * (p + 1) + (1 - dst_state),
                    kind=kind,
                    count=int(counts[p, c]),
                    share=float(counts[p, c] / n),
                    **transition_numbers(pair),
                )
            )
    return Sankey(
        model=model,
        configs=labels,
        n_items=n,
        n_excluded=matrix.n_excluded,
        nodes=nodes,
        links=sorted(links, key=lambda r: (r.source // 2, FLOW_KINDS.index(r.kind))),
    )


def trajectory_classes(y: np.ndarray) -> np.ndarray:
    """Index into ``CLASSES`` per item of a boolean ``y[I, C]`` (one class per item).

    ``monotone-gain`` is the tag's own rule (``backend.scope.tags.monotone_gain``), so the heatmap's
    class counts and the tag filter agree; what has one change and is not a gain is regressing.
    """
    y = y.astype(bool)
    return np.select(
        [y.all(axis=-1), ~y.any(axis=-1), changes(y) >= 2, monotone_gain(y)],
        [0, 4, 3, 1],
        default=2,
    ).astype(np.int8)


@dataclass(frozen=True)
class Heatmap:
    """The Items page's trajectory heatmap of one model (drawn by ``backend.present.charts_items.heatmap``; no
    command prints it, so it is not a JSON contract: it holds the items' frame and the cells as an array)."""

    model: str
    grid: list[str]
    n_items: int  # every item of the scope (``rows`` may be a downsample of them)
    stride: int  # every ``stride``-th item of the order is a row
    rows: pd.DataFrame  # benchmark, item_id, task_type, trajectory_class of each row, in the order drawn
    z: np.ndarray  # [rows, configurations] int8: 1 correct, 0 wrong
    class_counts: dict[str, int]  # items per trajectory class, counting every item


def heatmap(matrix: Matrix, model: str, max_rows: int = 2000) -> Heatmap:
    """Items x configs correctness of ``model``, rows ordered by trajectory class.

    Within a class, items with more correct cells come first, then by pattern (earlier correct
    first), then in matrix order. Above ``max_rows`` items every ``stride``-th row of that order
    is kept, a faithful downsample of the image (class shares are preserved); ``class_counts``
    always counts every item.
    """
    _require_items(matrix)
    if max_rows < 1:
        raise UserError("heatmap: max_rows must be at least 1")
    m = matrix.model_index(model)
    y = matrix.correct[m].astype(bool)
    n_items, n_cfg = y.shape
    cls = trajectory_classes(y)
    pattern = y.astype(np.int64) @ (1 << np.arange(n_cfg - 1, -1, -1, dtype=np.int64))
    order = np.lexsort((np.arange(n_items), -pattern, -y.sum(axis=1), cls))
    stride = max(1, math.ceil(n_items / max_rows))
    rows = order[::stride]
    return Heatmap(
        model=model,
        grid=list(matrix.grid),
        n_items=n_items,
        stride=stride,
        rows=matrix.items.loc[rows, ["benchmark", "item_id", "task_type"]]
        .assign(trajectory_class=np.array(CLASSES, dtype=object)[cls[rows]])
        .reset_index(drop=True),
        z=y[rows].astype(np.int8),
        class_counts=_counts(cls),
    )


def class_counts(matrix: Matrix, model: str) -> dict[str, int]:
    """Items of ``model`` per trajectory class: ``heatmap``'s ``class_counts`` without its rows (which read the
    items as a frame: ``flows --json`` imports no pandas)."""
    _require_items(matrix)
    return _counts(trajectory_classes(matrix.correct[matrix.model_index(model)]))


def _counts(cls: np.ndarray) -> dict[str, int]:
    return {name: int(k) for name, k in zip(CLASSES, np.bincount(cls, minlength=len(CLASSES)), strict=True)}
