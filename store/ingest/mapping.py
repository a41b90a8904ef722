"""``--map FIELD=SOURCE[,FIELD=SOURCE...]``: read a per-item file that uses its own key names.

A per-item file from another project rarely says ``item_id`` / ``target``: it has ``qid`` and
``category``, or ``answer`` holding the option's text, or keys nested under ``meta``. A map names,
for each long-table field, where its value comes from:

* ``FIELD=SOURCE``: a column (CSV, TSV, Parquet) or key (JSON); a dotted source (``meta.qid``)
  walks into nested objects where no column has that exact name;
* ``FIELD=A+B``: several sources joined with ``/`` (``item_id=category+qid`` gives
  ``Action Sequence/0``); a row missing any part has no value.

Refused with one line before any file is read: a field that is not a long-table field, a field
mapped twice, an empty source. Refused per file: a source that is neither a column nor a key (nor a
key present in any row). Columns used as sources are consumed (objects a dotted key reads into
stay in provenance whole); a file column named like a mapped field is kept in provenance, never
read as that field.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from store.errors import UserError
from store.ingest.common import as_text
from store.ingest.gate import fail

FieldMap = tuple[tuple[str, tuple[str, ...]], ...]  # ((field, (source, ...)), ...), hashable


def parse(specs: list[str] | str | None, fields: set[str]) -> FieldMap:
    """``["item_id=category+qid,target=answer", "options=choices"]`` -> the map; one line on error."""
    if not specs:
        return ()
    parts = [p.strip() for spec in ([specs] if isinstance(specs, str) else specs) for p in spec.split(",")]
    out: dict[str, tuple[str, ...]] = {}
    for part in filter(None, parts):
        field, eq, source = (s.strip() for s in part.partition("="))
        sources = tuple(s.strip() for s in source.split("+"))
        if not eq or not field or not all(sources):
            raise UserError(f"--map {part!r}: expected FIELD=SOURCE or FIELD=A+B (e.g. item_id=category+qid)")
        if field not in fields:
            raise UserError(f"--map {part!r}: {field!r} is not a long-table field; one of {', '.join(sorted(fields))}")
        if field in out:
            raise UserError(f"--map: {field} is mapped twice ({field}={'+'.join(out[field])} and {part})")
        out[field] = sources
    return tuple(out.items())


def apply(path: Path, df: pd.DataFrame, field_map: FieldMap) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the mapped fields, the file's other columns) for ``df``; sources are consumed."""
    fields = pd.DataFrame(index=df.index)
    used: set[str] = set()
    for field, sources in field_map:
        resolved = [_resolve(path, df, source, f"{field}={'+'.join(sources)}") for source in sources]
        used.update(column for column, _ in resolved if column is not None)
        joined = resolved[0][1]
        if len(resolved) > 1:
            joined = as_text(joined)
            for _, part in resolved[1:]:
                joined = joined + "/" + as_text(part)  # missing in any part -> missing
        fields[field] = joined
    return fields, df.drop(columns=sorted(used))


def _resolve(path: Path, df: pd.DataFrame, source: str, spec: str) -> tuple[str | None, pd.Series]:
    """(the column consumed, its values) for a column name or a dotted key into nested objects; a
    nested key consumes nothing (its object, holding other keys too, stays in provenance)."""
    if source in df:
        return source, df[source]
    head, *keys = source.split(".")
    for n_inner in range(len(keys), 0, -1):  # the longest prefix that is a column, then walk into it
        column = ".".join([head, *keys[: len(keys) - n_inner]])
        if column in df:
            values = df[column]
            for key in keys[len(keys) - n_inner :]:
                values = _child(values, key)
            if values.notna().any():
                return None, values
            break
    shown = ", ".join(map(str, df.columns[:30])) + (" ..." if len(df.columns) > 30 else "")
    raise fail(path, f"--map {spec}: no column or key {source!r} in the file; it has: {shown}")


def _child(values: pd.Series, key: str) -> pd.Series:
    """``value[key]`` where a value is a JSON object; missing elsewhere."""
    is_object = values.map(type).eq(dict)
    return values.where(is_object).str.get(key).where(is_object)
