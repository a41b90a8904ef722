"""Query rows as records: one dict per row (column -> value, None where missing).

A handful of rows (one item's responses, its catalog entry, a report's frame rows) is walked in Python: building
a DataFrame for them cost more than the work, and importing pandas alone costs a command 0.2-0.4 s.
"""

from __future__ import annotations

from typing import Any, Protocol

Record = dict[str, Any]


class _Rows(Protocol):
    """A DuckDB cursor after ``execute`` or a relation: both describe their columns and hand over tuples."""

    @property
    def description(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def records(rows: _Rows) -> list[Record]:
    """The rows as records (Python values: lists for lists, timezone-aware datetimes)."""
    names = [d[0] for d in rows.description or ()]
    return [dict(zip(names, row, strict=True)) for row in rows.fetchall()]
