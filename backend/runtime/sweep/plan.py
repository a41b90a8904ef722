"""What a sweep must run: the grid's labels, the items, the cells already stored, grouped by video.

A cell is (model, benchmark, item, configuration) at ``run = "main"``; it is *stored* when the
``responses`` table holds a ``main`` row for it (a re-run's ``rerun-<job>`` row does not fill it).
Cells are grouped by video so that one group is everything a sweep does with one clip: one decode,
one prompt prefix per configuration shared by the clip's questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from backend.runtime.sampling import label_policy
from backend.videos import catalog
from store.configs import DEFAULT_POLICY, ConfigLabelError, order, parse
from store.errors import UserError
from store.store import Store

RUN = "main"
DEFAULT_BATCH = 64  # cells per store write: what a crash can lose


def expand_grid(grid: Sequence[str], policies: Sequence[str] | None = None) -> list[str]:
    """Canonical labels of ``grid`` crossed with ``policies`` (labels that name a policy keep theirs).

    ``text`` appears once whatever the policies; the result is in the default grid order.
    """
    if not grid:
        raise UserError("--grid is empty: give labels such as text,8f,16f,32f,64f")
    wanted = [label_policy(p) for p in (policies or [DEFAULT_POLICY])]  # random:1 -> random-s1
    labels = []
    for raw in grid:
        try:
            cfg = parse(raw)
        except ConfigLabelError as exc:
            raise UserError(f"--grid: {exc}") from None
        if cfg.tag is not None:
            raise UserError(f"--grid: {raw!r} is a scale-grid tag, not a configuration a sweep can run")
        if cfg.is_text or "/" in cfg.label:
            labels.append(cfg.label)
            continue
        base, approx = cfg.exact_label, cfg.label[len(cfg.exact_label) :]  # a ~prune suffix stays last
        labels += [(base if p == DEFAULT_POLICY else f"{base}/{p}") + approx for p in wanted]
    return order([parse(label).label for label in labels])


def approximate(labels: Sequence[str], suffix: str) -> list[str]:
    """The approximate twins ``<label><suffix>`` (``~prune85``, ``~prune85t8``: :attr:`PruneSpec.suffix`)
    of the visual labels (text-only has nothing to prune)."""
    visual = [parse(label) for label in labels if not parse(label).is_text]
    return order([parse(f"{cfg.exact_label}{suffix}").label for cfg in visual])


@dataclass
class VideoGroup:
    """The pending cells of one video (``video`` None: items without a video)."""

    video: str | None
    items: pd.DataFrame  # the items rows of this video that have a pending cell
    cells: pd.DataFrame  # item_id, config: pending cells, ordered by configuration then item

    @property
    def n_cells(self) -> int:
        return len(self.cells)


@dataclass
class Plan:
    model: str
    benchmark: str
    configs: list[str]
    n_items: int
    stored: int  # cells of the grid already stored (skipped)
    groups: list[VideoGroup] = field(default_factory=list)

    @property
    def pending(self) -> int:
        return sum(g.n_cells for g in self.groups)


def read_item_ids(path: str | Path) -> list[str]:
    """Item ids from a file: one per line; blank lines and ``#`` comments ignored."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"--items {path}: no such file")
    ids = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    ids = [i for i in ids if i]
    if not ids:
        raise UserError(f"--items {path}: no item ids in the file (one id per line)")
    return list(dict.fromkeys(ids))


def select_items(store: Store, benchmark: str, item_ids: list[str] | None, limit: int | None) -> pd.DataFrame:
    """The benchmark's items to sweep, ordered by video then item id (so ``limit`` keeps whole videos first)."""
    items = catalog.with_videos(store, benchmark, store.query("SELECT * FROM items WHERE benchmark = ?", [benchmark]))
    items = items.sort_values(["video", "item_id"], na_position="last", kind="stable").reset_index(drop=True)
    if items.empty:
        raise UserError(f"benchmark {benchmark!r} has no items in the store {store.root}")
    if item_ids is not None:
        unknown = sorted(set(item_ids) - set(items["item_id"]))
        if unknown:
            shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
            raise UserError(f"--items: {len(unknown)} id(s) not in benchmark {benchmark!r}: {shown}")
        items = items[items["item_id"].isin(item_ids)]
    if limit is not None:
        if limit < 1:
            raise UserError(f"--limit must be at least 1, got {limit}")
        items = items.head(limit)
    return items.reset_index(drop=True)


def stored_cells(store: Store, model: str, benchmark: str, configs: list[str]) -> pd.DataFrame:
    """(item_id, config) of the grid's cells that already have a ``main`` row for ``model``."""
    return store.query(
        "SELECT DISTINCT item_id, config FROM responses "
        "WHERE model = ? AND benchmark = ? AND run = ? AND list_contains(?, config)",
        [model, benchmark, RUN, configs],
    )


def build_plan(
    store: Store,
    model: str,
    benchmark: str,
    configs: list[str],
    *,
    item_ids: list[str] | None = None,
    limit: int | None = None,
    resume: bool = False,
) -> Plan:
    """The pending cells, grouped by video; refuses to start over stored cells unless ``resume``."""
    items = select_items(store, benchmark, item_ids, limit)
    cells = items[["item_id"]].merge(pd.DataFrame({"config": configs}), how="cross")
    done = stored_cells(store, model, benchmark, configs).merge(items[["item_id"]])
    if len(done) and not resume:
        raise UserError(
            f"{len(done)} of the {len(cells)} cells of this sweep are already stored for model {model!r} "
            f"(benchmark {benchmark!r}); pass --resume to run only the missing ones"
        )
    marked = cells.merge(done.assign(_done=True), how="left", on=["item_id", "config"])
    pending = marked[marked["_done"].isna()].drop(columns="_done")
    rank = {label: k for k, label in enumerate(configs)}
    pending = pending.assign(_rank=pending["config"].map(rank)).merge(items[["item_id", "video"]], on="item_id")
    plan = Plan(model, benchmark, configs, len(items), len(done))
    key = pending["video"].fillna("\0")  # items without a video form one group
    for _, cell_rows in pending.groupby(key, sort=True):
        cell_rows = cell_rows.sort_values(["_rank", "item_id"])
        video = cell_rows["video"].iloc[0]
        group_items = items[items["item_id"].isin(cell_rows["item_id"])].reset_index(drop=True)
        plan.groups.append(
            VideoGroup(
                None if pd.isna(video) else str(video),
                group_items,
                cell_rows[["item_id", "config"]].reset_index(drop=True),
            )
        )
    return plan
