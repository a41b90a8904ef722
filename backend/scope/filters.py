"""Which items a view is about: the sidebar's filters as one frozen value compiled to SQL.

The value is frozen and hashable so Streamlit can cache on it, and it compiles to a parameterised
WHERE fragment over the ``items`` view, so filtering happens in DuckDB before any item reaches NumPy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from backend.contracts.base import built
from backend.contracts.common import ItemFilterSpec
from backend.scope import arrow_numpy
from store.schema import order_key_sql

if TYPE_CHECKING:
    import pandas as pd


def split_list(value: str | None) -> list[str] | None:
    """'a,b, c' -> ['a', 'b', 'c']; None stays None (the filter flags, and every list flag, are comma lists)."""
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


@dataclass(frozen=True)
class ItemFilter:
    """Item selection; every empty field means "no constraint".

    ``tags`` are user annotation tags (the ``annotations`` table): an item passes when it carries at
    least one of them, for any model, in an annotation whose latest row is not deleted. Trajectory
    tags (stable-correct, confused, ...) depend on model and grid and are applied after the metrics
    (``backend.scope.items.items_table(tag=...)``).
    """

    task_types: tuple[str, ...] = ()
    durations: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    search: str | None = None
    item_ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Lists would make the value unhashable (and so uncacheable); accept them, store tuples.
        for name in ("task_types", "durations", "domains", "item_ids", "tags"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if self.search is not None and not self.search.strip():
            object.__setattr__(self, "search", None)

    def spec(self) -> ItemFilterSpec:
        """The filters as the reports' JSON states them (``scope.item_filter``)."""
        return built(dataclasses.asdict(self), ItemFilterSpec)  # a field the two lack in common fails here

    def to_argv(self) -> list[str]:
        """The command-line flags that select these items (the CLI twins pages print)."""
        flags = [
            ("--task-type", self.task_types),
            ("--duration", self.durations),
            ("--domain", self.domains),
            ("--annotation-tag", self.tags),
            ("--item-ids", self.item_ids),
        ]
        argv = [arg for flag, values in flags if values for arg in (flag, ",".join(values))]
        return argv + (["--search", self.search] if self.search else [])

    def is_empty(self) -> bool:
        """True when the filter selects every item (pages say "all items" instead of listing filters)."""
        return self == ItemFilter()


IN_LISTS = ("task_types", "durations", "domains", "item_ids")  # ItemFilter fields that are ``column IN (...)``
COLUMNS = {"task_types": "task_type", "durations": "duration", "domains": "domain", "item_ids": "item_id"}


def offered(items: pa.Table) -> tuple[list[str], list[str]]:
    """The task types the items name (sorted), and their durations ordered by the median length of their items
    (a duration whose items have no length last; ties by name): the values the sidebar's filters offer.

    Arrow and NumPy, not a pandas group-by: computed again after every write, it took 50 ms of the first page
    after a one-row ingest at 250k items (``benchmarks/dashboard_browser.py``)."""
    task_types = sorted(pc.unique(items.column("task_type")).drop_null().to_pylist())
    coded = pc.dictionary_encode(items.column("duration")).combine_chunks()
    codes = arrow_numpy.numbers(pc.fill_null(coded.indices, -1))
    seconds = arrow_numpy.numbers(pc.fill_null(items.column("duration_s").cast(pa.float64()), np.nan))
    names = coded.dictionary.to_pylist()
    medians = {}
    for code, name in enumerate(names):
        known = seconds[(codes == code) & ~np.isnan(seconds)]
        medians[name] = float(np.median(known)) if len(known) else np.inf
    durations = sorted(sorted(names), key=lambda name: medians[name])  # stable: ties stay by name
    return task_types, durations


def in_memory_mask(items: pd.DataFrame, item_filter: ItemFilter) -> np.ndarray | None:
    """:func:`filter_sql`'s selection of ``items`` rows computed in pandas, or None where it needs SQL.

    Only for filters made of ``IN`` lists (task type, duration, domain, ids): a missing value is in no
    list, as in SQL. A dashboard filter change cuts the cached matrix with this instead of handing the
    items to DuckDB (which copies every item row there and back)."""
    if item_filter.search is not None or item_filter.tags:
        return None
    keep = np.ones(len(items), dtype=bool)
    for field in IN_LISTS:
        values = getattr(item_filter, field)
        if values:
            keep &= items[COLUMNS[field]].isin(values).to_numpy(dtype=bool, na_value=False)
    return keep


def _in(column: str, values: tuple[str, ...]) -> tuple[str, list]:
    return f"{column} IN ({', '.join('?' for _ in values)})", list(values)


def filter_sql(item_filter: ItemFilter | None, alias: str = "items") -> tuple[str, list]:
    """A WHERE fragment (``TRUE`` when unconstrained) and its parameters, over ``items`` as ``alias``.

    Free-text search is a case-insensitive substring match on question, options and item id.
    """
    f = item_filter or ItemFilter()
    clauses: list[str] = []
    params: list = []
    for column, values in ((COLUMNS[field], getattr(f, field)) for field in IN_LISTS):
        if values:
            sql, p = _in(f"{alias}.{column}", values)
            clauses.append(sql)
            params += p
    if f.search is not None:
        term = f.search.strip().lower()
        columns = ("question", "options", "item_id")
        clauses.append("(" + " OR ".join(f"contains(lower(coalesce({alias}.{c}, '')), ?)" for c in columns) + ")")
        params += [term] * 3
    if f.tags:
        tag_in, p = _in("a.tag", f.tags)
        clauses.append(
            "EXISTS (SELECT 1 FROM (SELECT * FROM annotations QUALIFY row_number() OVER "
            f"(PARTITION BY annotation_id ORDER BY {order_key_sql(time='created_at')} DESC) = 1) a "
            f"WHERE a.benchmark = {alias}.benchmark AND a.item_id = {alias}.item_id "
            f"AND NOT coalesce(a.deleted, false) AND {tag_in})"
        )
        params += p
    return (" AND ".join(clauses) if clauses else "TRUE"), params
