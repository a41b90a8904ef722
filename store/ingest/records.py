"""``--records PATH``: where the per-item records sit in a nested JSON document, and what encloses them.

Result files are not always a list of records. A benchmark's release may key them by video and by
dimension (``{"1034419625": {"temporal": [{...}, ...]}}``), or pair each record with its judge's verdict
(``[[{"verdict": ...}, {"question": ...}], ...]``). Three options describe such a document, so no script
is needed (docs/formats.md, "Record paths"):

* ``--records PATH``: a JSONPath (``jsonpath-ng``) matching every record, each a JSON object:
  ``$.*.*[*]``, ``$[*][1]``, ``$.results[*]``;
* ``--record-keys NAME[,NAME...]``: the dictionary keys enclosing each record become fields: the N
  innermost keys on its path, outermost first (``$.*.*[*]`` with ``video_id,dim`` gives each record
  ``video_id`` = its top-level key and ``dim`` = the key under it). List positions never become fields:
  a row's position is no item id (a mis-paired file would pass silently);
* ``--merge NAME=PATH``: the object PATH matches beside each record (in the same enclosing list or
  object: ``$[*][0]`` beside ``$[*][1]``) is put under ``NAME`` in the record, so ``--map`` reads its keys
  dotted (``correct=judge.verdict``). A record with no such object, or with two, is refused.

Each record keeps its place in the document (``record 3``) for error messages. A field the record already
has with the name of a record key or a merge is refused, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonpath_ng import parse as jsonpath

from store.errors import UserError
from store.ingest.gate import fail


@dataclass(frozen=True)
class RecordPath:
    """The parsed ``--records`` / ``--record-keys`` / ``--merge`` options (hashable: part of IngestOptions)."""

    records: str
    keys: tuple[str, ...] = ()
    merges: tuple[tuple[str, str], ...] = ()  # (name, path)


def parse(records: str | None, keys: str | None, merges: list[str] | None) -> RecordPath | None:
    """The options as given on the command line, checked before any file is read (one line on error)."""
    if records is None:
        if keys or merges:
            raise UserError("--record-keys and --merge describe --records PATH; pass --records too")
        return None
    _compile("--records", records)
    names = tuple(k.strip() for k in (keys or "").split(",") if k.strip())
    pairs = []
    for spec in merges or []:
        name, eq, where = (s.strip() for s in spec.partition("="))
        if not eq or not name or not where:
            raise UserError(f"--merge {spec!r}: expected NAME=PATH, e.g. --merge 'judge=$[*][0]'")
        _compile(f"--merge {name}", where)
        pairs.append((name, where))
    taken = [*names, *(n for n, _ in pairs)]
    twice = sorted({n for n in taken if taken.count(n) > 1})
    if twice:
        raise UserError(f"--record-keys / --merge name {', '.join(twice)} twice")
    return RecordPath(records, names, tuple(pairs))


def _compile(flag: str, text: str) -> Any:
    try:
        return jsonpath(text)
    except Exception as exc:  # JsonPathParserError, and a plain Exception jsonpath-ng's lexer raises for some syntax
        raise UserError(f"{flag} {text!r}: not a JSONPath ({str(exc).splitlines()[0]})") from None


def select(path: Path, doc: object, spec: RecordPath) -> list[dict]:
    """The records ``spec`` names in ``doc``, each with its enclosing keys and merged objects as fields."""
    found = _compile("--records", spec.records).find(doc)
    if not found:
        raise fail(path, f"--records {spec.records!r} matches nothing in the document")
    beside = {name: _by_parent(path, name, where, doc) for name, where in spec.merges}
    _unpaired(path, spec, found, beside)
    out = []
    for n, match in enumerate(found, 1):
        if not isinstance(match.value, dict):
            kind = type(match.value).__name__
            raise fail(
                path, f"--records {spec.records!r} matches a {kind}, not an object, at {match.full_path}", n, "record"
            )
        record = dict(match.value)
        for name, value in [*_enclosing(path, match, spec, n), *_merged(path, match, beside, n)]:
            if name in record:
                raise fail(path, f"the record already has a key {name!r}; name the field otherwise", n, "record")
            record[name] = value
        out.append(record)
    return out


def _enclosing(path: Path, match: Any, spec: RecordPath, n: int) -> list[tuple[str, str]]:
    """(name, key) for the ``--record-keys``: the innermost dictionary keys on the record's path (the record's
    own key included: ``{"q1": {...}}`` read with ``$.*``), outermost first."""
    if not spec.keys:
        return []
    keys = []
    ctx = match
    while ctx is not None:
        fields = getattr(ctx.path, "fields", None)  # a step into an object (jsonpath-ng's Fields); an Index has none
        if fields:
            keys.append(str(fields[0]))
        ctx = ctx.context
    keys.reverse()
    if len(keys) < len(spec.keys):
        raise fail(
            path,
            f"--record-keys names {len(spec.keys)} keys but the record sits under {len(keys)} "
            f"({match.full_path}); list positions are no keys",
            n,
            "record",
        )
    return list(zip(spec.keys, keys[len(keys) - len(spec.keys) :], strict=True))


def _by_parent(path: Path, name: str, where: str, doc: object) -> dict[int, list]:
    """The matches of ``where`` (jsonpath-ng's, with their place), by the identity of the list or object
    holding each."""
    out: dict[int, list] = {}
    for match in _compile(f"--merge {name}", where).find(doc):
        parent = match.context.value if match.context is not None else None
        out.setdefault(id(parent), []).append(match)
    if not out:
        raise fail(path, f"--merge {name}={where!r} matches nothing in the document")
    return out


def _merged(path: Path, match: Any, beside: dict[str, dict[int, list]], n: int) -> list[tuple[str, object]]:
    """(name, object) for each ``--merge``: the one object its path matches in the record's enclosing container,
    never the record itself (``$[*][-1]`` beside ``$[*][0]`` on a pair missing its judge)."""
    out = []
    parent = id(match.context.value) if match.context is not None else None
    for name, by_parent in beside.items():
        found = [m for m in by_parent.get(parent, []) if m.value is not match.value] if parent is not None else []
        if len(found) != 1:
            what = "no object" if not found else f"{len(found)} objects"
            raise fail(path, f"--merge {name}: {what} beside the record at {match.full_path}", n, "record")
        out.append((name, found[0].value))
    return out


def _unpaired(path: Path, spec: RecordPath, found: list, beside: dict[str, dict[int, list]]) -> None:
    """Refuse a merged object with no record beside it: its record is missing (a pair cut short), and the
    records would otherwise be read without a word about it."""
    parents = {id(m.context.value) for m in found if m.context is not None}
    for name, by_parent in beside.items():
        alone = [m for key, ms in by_parent.items() if key not in parents for m in ms]
        if alone:
            raise fail(
                path,
                f"--merge {name}: the object at {alone[0].full_path} has no record beside it (--records "
                f"{spec.records!r} matches none there); {len(alone)} such object(s)",
            )
