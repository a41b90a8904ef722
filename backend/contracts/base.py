"""The base of every report: a ``msgspec.Struct`` that is at once the runtime object, its validator and its schema.

``Contract`` and ``doc`` are ``store.contract``'s (the store's own records are contracts too, and the store
cannot import ``backend/``). Why msgspec and not pydantic v2 (``benchmarks/contracts.py``): importing the library and defining 150
report classes took 31 ms with msgspec against 195 ms with pydantic (``defer_build``), and every command
that computes pays that import; validation, conversion and the JSON Schema come with both.

Conventions:

- A field's description is its ``Annotated[..., doc("...")]``; the class docstring says what the object is.
  Both go into the JSON Schema (``msgspec.json.schema_components``), ``tests/snapshots/contracts.schema.json``.
- ``X | UnsetType = UNSET`` is a key present only in some modes (the flag that adds it is in its description):
  an unset field is left out of the JSON. ``X | None`` is JSON ``null`` where the number is not available.
- ``from`` is a Python keyword: the field is ``from_``, named ``"from"`` in JSON (``field(name="from")``).
- Rates are fractions in ``[0, 1]``; an interval is ``[lo, hi]`` (``common.Interval``).
- Every class passes ``kw_only=True`` (msgspec does not inherit it), so the JSON keys keep the order the
  classes declare them in, base class first.
"""

from __future__ import annotations

import math
from types import GenericAlias
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType, field
from msgspec.structs import asdict, replace

from store.contract import Contract, doc

__all__ = [
    "UNSET",
    "Contract",
    "UnsetType",
    "asdict",
    "built",
    "doc",
    "field",
    "from_rows",
    "replace",
    "to_json",
    "unset",
    "validated",
]

T = TypeVar("T", bound="Contract")
V = TypeVar("V")


def unset(value: V | UnsetType) -> V | None:
    """An optional field's value, None where it is unset (what a reader that treats both alike wants)."""
    return None if isinstance(value, UnsetType) else value


def _builtin(value: Any) -> Any:
    """NumPy scalars (a subclass of float or not) and arrays as the Python numbers and lists they hold."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def to_json(value: Any) -> Any:
    """``value`` (a report, or data holding reports) as plain JSON values: dicts, lists, str, numbers, None."""
    return msgspec.to_builtins(value, enc_hook=_builtin)


def from_rows(records: list[dict[str, Any]], cls: type[T]) -> list[T]:
    """A table's rows (``DataFrame.to_dict("records")``) as ``cls`` objects, each checked field by field; a
    missing cell (NaN, which pandas puts in text columns too) is None, as the JSON prints it, and a NumPy value
    (an array of frame indices, a scalar) the Python value it holds."""
    clean = [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in records]
    rows: list[T] = msgspec.convert(to_json(clean), GenericAlias(list, (cls,)))  # list[cls]: cls is a variable
    return rows


def built(value: Any, cls: type[T]) -> T:
    """``value`` (a report assembled as plain data, its keys following a table's columns or a list of states)
    as ``cls``, checked field by field once: ``msgspec.ValidationError`` names the path of a field that breaks it."""
    return msgspec.convert(to_json(value), cls)


def validated(report: T) -> T:
    """``report`` checked against its type, field by field, once, where a view hands it out: a value of
    the wrong type (a NumPy integer, a missing field) raises ``msgspec.ValidationError`` naming its path."""
    return msgspec.convert(to_json(report), type(report))
