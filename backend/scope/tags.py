"""Per-item trajectory conditions and the item tags built from them (docs/metrics.md, "Item tags").

A trajectory is one item's correctness along the grid. The conditions here work on boolean arrays
``y[..., I, C]`` (any leading axes, e.g. models), so ``backend.analysis.metrics`` aggregates exactly the
same per-item indicators that the tags show, and nothing loops over items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from backend.scope import arrow_numpy
from backend.scope.matrix import Matrix
from store import configs

if TYPE_CHECKING:
    import pandas as pd

TAGS = (
    "stable-correct",
    "stable-wrong",
    "monotone-gain",
    "confused",
    "text-overwrite",
    "terminal-regression",
    "oscillating",
)


def top_index(grid: list[str], lower: np.ndarray) -> int:
    """The costliest config: the unique maximal one under ``lower``, else the last in grid order."""
    maximal = np.flatnonzero(~lower.any(axis=1))  # nothing is costlier than these
    return int(maximal[0]) if len(maximal) == 1 else len(grid) - 1


def text_index(grid: list[str]) -> int | None:
    """Position of ``text`` in the grid; None when absent (text overwrite is then not available)."""
    return grid.index("text") if "text" in grid else None


def confused(y: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Some a, b with cost(a) < cost(b), y(a) = 1 and y(b) = 0 (the visual-confusion condition)."""
    flat = y.reshape(-1, y.shape[-1]).astype(np.float32)  # one 2-D product, not a stack of tiny ones
    cheaper_correct = (flat @ lower.astype(np.float32) > 0).reshape(y.shape)  # [..., b]: some a < b is correct
    return (cheaper_correct & ~y).any(axis=-1)


def text_overwrite(y: np.ndarray, grid: list[str]) -> np.ndarray | None:
    """y(text) = 1 and y(c) = 0 for some visual c; None when ``text`` is not in the grid."""
    t = text_index(grid)
    if t is None:
        return None
    visual = np.array([not configs.parse(label).is_text for label in grid])
    return y[..., t] & (~y[..., visual]).any(axis=-1)


def terminal_regression(y: np.ndarray, lower: np.ndarray, top: int) -> np.ndarray:
    """y(top) = 0 and y(c) = 1 for some c cheaper than ``top``."""
    return ~y[..., top] & (y & lower[:, top]).any(axis=-1)


def changes(y: np.ndarray) -> np.ndarray:
    """Number of correctness changes between consecutive configs along the grid."""
    return (y[..., 1:] != y[..., :-1]).sum(axis=-1)


def monotone_gain(y: np.ndarray) -> np.ndarray:
    """Wrong at some config and correct at a later one, never correct-then-wrong along the grid.

    A gain is required (docs/metrics.md), so stable-wrong items never carry it: along ``G`` this is
    exactly one change of correctness, upward. The Items heatmap's trajectory class uses this
    same function, so the tag and the class always count the same items.
    """
    gains = (~y[..., :-1] & y[..., 1:]).any(axis=-1)  # a 0 -> 1 step somewhere along G
    drops = (y[..., :-1] & ~y[..., 1:]).any(axis=-1)  # a 1 -> 0 step somewhere along G
    return gains & ~drops


def tag_masks(y: np.ndarray, grid: list[str], lower: np.ndarray) -> dict[str, np.ndarray]:
    """Each tag of ``TAGS`` as a boolean array over ``y``'s leading axes.

    ``text-overwrite`` is False everywhere without ``text``.
    """
    overwrite = text_overwrite(y, grid)
    return {  # asarray: the stubs type ``all``/``any`` as possibly a scalar
        "stable-correct": np.asarray(y.all(axis=-1)),
        "stable-wrong": ~np.asarray(y.any(axis=-1)),
        "monotone-gain": monotone_gain(y),
        "confused": confused(y, lower),
        "text-overwrite": np.zeros(y.shape[:-1], dtype=bool) if overwrite is None else overwrite,
        "terminal-regression": terminal_regression(y, lower, top_index(grid, lower)),
        "oscillating": changes(y) >= 2,
    }


def tag_lists(masks: dict[str, np.ndarray]) -> np.ndarray:
    """An object array of tag-name lists, built once per distinct combination (at most 2^7).

    Rows with the same combination share one list object: read them, do not mutate them.
    """
    stacked = np.stack([masks[t] for t in TAGS], axis=-1)
    codes = stacked.astype(np.int64) @ (1 << np.arange(len(TAGS), dtype=np.int64))
    uniq, inverse = np.unique(codes, return_inverse=True)
    names = np.empty(len(uniq), dtype=object)
    names[:] = [[t for k, t in enumerate(TAGS) if code >> k & 1] for code in uniq]
    return names[inverse.reshape(codes.shape)]


def tag_arrow(masks: dict[str, np.ndarray], rows: np.ndarray | None = None) -> pa.ListArray:
    """``tag_lists`` as an Arrow list array (of the ``rows`` picked, all by default), built from the masks'
    positions: no Python list per item, and no pandas (``pa.array`` of Python lists would import it)."""
    stacked = np.stack([masks[t] for t in TAGS], axis=-1)
    if rows is not None:
        stacked = stacked[rows]
    names = arrow_numpy.strings(TAGS).take(arrow_numpy.array(np.nonzero(stacked)[1]))
    return arrow_numpy.lists(names, stacked.sum(axis=1))


def item_tags(matrix: Matrix) -> pd.DataFrame:
    """One row per (model, item), model-major: model, benchmark, item_id, a column per tag, ``tags``."""
    import pandas as pd  # the table is the product; the tag conditions above, which the metrics read, need none

    y = matrix.correct.astype(bool)
    masks = tag_masks(y, matrix.grid, matrix.lower)
    n_models, n_items = y.shape[:2]
    out = pd.DataFrame(
        {
            "model": np.repeat(np.array(matrix.models, dtype=object), n_items),
            "benchmark": np.tile(matrix.items["benchmark"].to_numpy(dtype=object), n_models),
            "item_id": np.tile(matrix.items["item_id"].to_numpy(dtype=object), n_models),
        }
    )
    for tag in TAGS:
        out[tag] = masks[tag].reshape(-1)
    out["tags"] = tag_lists(masks).reshape(-1)
    return out
