"""The current selection (a flow, a state, picked items, or the filtered list), and its items' answers.

A researcher walks from a surprising flow to its items and re-runs them together. The Inspector's
walk, the Flows page, the re-run panel and ``trajaudit rerun --flow/--items`` all name the items
through one ``Selection``, so "the 14 harmed items of text -> 8f" is the same 14 items everywhere
(the Flows page's list, the Inspector's "item 3 of 14", the batch re-run and its ``--json``).
A selection is part of what is in view, so it lives with the scope; which items a flow holds is
``backend.analysis.selection``'s, and the batch re-run of them ``backend.runtime.selection``'s.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backend.export import from_cell
from backend.scope.matrix import Matrix
from store import configs
from store.errors import UserError
from store.schema import order_key_sql
from store.store import Store

if TYPE_CHECKING:
    import pandas as pd

FLOW_KINDS = ("rescued", "harmed", "stable-correct", "stable-wrong")  # the links of each config pair (analysis.flows)
KINDS = ("flow", "state", "items", "filtered")
STATES = ("correct", "wrong")
ARROW = "→"


@dataclass(frozen=True)
class Selection:
    """Which items: ``flow`` (from, to, kind), ``state`` (config, correct|wrong), ``items`` (ids) or ``filtered`` ()."""

    kind: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"unknown selection {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.kind == "flow" and (len(self.args) != 3 or self.args[2] not in FLOW_KINDS):
            raise UserError(
                f"a flow is FROM:TO:KIND with KIND in {', '.join(FLOW_KINDS)} (got {':'.join(self.args)!r})"
            )
        if self.kind == "state" and (len(self.args) != 2 or self.args[1] not in STATES):
            raise UserError(f"a state is CONFIG:STATE with STATE in {', '.join(STATES)} (got {':'.join(self.args)!r})")
        if self.kind == "items" and not self.args:
            raise UserError("an item selection needs at least one item id")

    @classmethod
    def flow(cls, spec: str) -> Selection:
        """``FROM:TO:KIND`` (the ``--flow`` flag)."""
        parts = spec.split(":")
        if len(parts) != 3 or not all(parts):
            raise UserError(f"--flow takes FROM:TO:KIND, e.g. text:8f:harmed (got {spec!r})")
        return cls("flow", tuple(parts))

    @classmethod
    def from_url(cls, values: list[str] | None) -> Selection | None:
        """The URL form (``[kind, *args]``); None for no or a malformed selection (a stale link)."""
        if not values:
            return None
        try:
            return cls(values[0], tuple(values[1:]))
        except UserError:
            return None

    def to_url(self) -> list[str]:
        return [self.kind, *self.args]

    def describe(self) -> str:
        """How the walk and the re-run name it: "text → 8f harmed", "8f wrong", "5 picked items"."""
        if self.kind == "flow":
            a, b, kind = self.args
            return f"{a} {ARROW} {b} {kind}"
        if self.kind == "state":
            return f"{self.args[1]} at {self.args[0]}"
        if self.kind == "items":
            return f"{len(self.args)} picked item" + ("s" if len(self.args) != 1 else "")
        return "the filtered items"

    def baseline(self, grid: list[str]) -> str:
        """The configuration a re-run is compared against: where the flow ends, the state's config, else the grid's last."""
        if self.kind == "flow":
            return self.args[1]
        if self.kind == "state":
            return self.args[0]
        return grid[-1]


def state_items(matrix: Matrix, model: str, config: str, state: str) -> pd.DataFrame:
    """The items of one Sankey node (correct or wrong at ``config``), with the confidence there."""
    if state not in STATES:
        raise UserError(f"unknown state {state!r}: expected one of {', '.join(STATES)}")
    m, c = matrix.model_index(model), matrix.config_index(config)
    y = matrix.correct[m, :, c].astype(bool)
    mask = y if state == "correct" else ~y
    out = matrix.items.loc[mask].copy()
    out["confidence"] = matrix.confidence[m, mask, c]
    return out.reset_index(drop=True)


def read_ids(path: str) -> list[str]:
    """Item ids from a file (``--items FILE``): one per line, or a CSV/TSV with an ``item_id`` column
    (the Items page's export: quoted, its spreadsheet-safe prefix undone by ``export.from_cell``)."""
    try:
        with open(path, newline="") as fh:
            text = fh.read()
    except OSError as exc:
        raise UserError(f"cannot read --items {path}: {exc.strerror}") from exc
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    sep = "\t" if lines and "\t" in lines[0] else ","
    header = next(csv.reader(lines[:1], delimiter=sep), [])
    if "item_id" in header:
        col = header.index("item_id")
        rows = list(csv.reader(io.StringIO(text.lstrip()), delimiter=sep))[1:]
        lines = [from_cell(row[col].strip()) for row in rows if len(row) > col]
    ids = list(dict.fromkeys(line for line in lines if line))
    if not ids:
        raise UserError(f"--items {path} lists no item id (one per line, or a CSV with an item_id column)")
    return ids


def selection_answers(
    store: Store, model: str, benchmark: str, ids: list[str], config: str, seed: int | None, reruns: bool
) -> pd.DataFrame:
    """One answer per item at ``config`` (the logged main run first, else the newest re-run; like ``rerun.stored_result``)."""
    random_seed = seed if configs.takes_seed(configs.parse(config).policy) else None
    origin = "" if reruns else "AND run = 'main'"
    return store.query(
        f"SELECT item_id, answer, correct, confidence, run FROM responses WHERE model = ? AND benchmark = ? AND config = ? "
        f"AND item_id IN (SELECT unnest(?::VARCHAR[])) AND (?::BIGINT IS NULL OR seed = ?::BIGINT) {origin} "
        f"QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY run = 'main' DESC, {order_key_sql()} DESC) = 1",
        [model, benchmark, config, ids, random_seed, random_seed],
    ).set_index("item_id")
