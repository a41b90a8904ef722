"""Strict JSON for ingest: every reader parses input JSON here, so no file can crash a reader or slip
a value past the gate.

Python's ``json`` module accepts three things an audit store must not: nesting deep enough to end in a
RecursionError (a 100k-deep file), the non-JSON constants ``NaN`` / ``Infinity`` (read as floats a
verdict or confidence would silently carry), and an object naming the same key twice (the last one
silently wins: ``"correct": 1, "correct": 0`` is stored as 0). Here each is refused with the file and
line: nesting beyond ``MAX_JSON_DEPTH`` before anything is parsed (a column-wise NumPy scan of the
brackets outside strings), constants and repeated keys while parsing (hooks of the C parser). The
line of a refused value is found on the error path only (``locate``).
"""

from __future__ import annotations

import json
import re

import numpy as np

MAX_JSON_DEPTH = 100  # lmms-eval logs, the deepest inputs read, nest about 6 levels
_CHUNK = 1 << 26  # bytes scanned per NumPy pass: bounds the scan's temporary masks
_BRACKETS = np.zeros(256, dtype=bool)
_BRACKETS[[ord(c) for c in '"[]{}']] = True
_STEP = np.zeros(256, dtype=np.int8)  # what each structural character does to the depth
_STEP[[ord("["), ord("{")]], _STEP[[ord("]"), ord("}")]] = 1, -1
_WS = re.compile(r"[ \t\n\r]*")


class Refused(ValueError):
    """A value strict JSON refuses; ``line`` is the line it is on, once known (1-based)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    """The object, unless a key repeats (the C parser calls this once per object)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:  # error path only: the first key met twice
            if key in seen:
                raise Refused(f"the key {key!r} appears twice in one object; keep one (the file is ambiguous)")
            seen.add(key)
    return obj


def _constant(name: str) -> object:
    """NaN, Infinity, -Infinity: not JSON, refused (the parser would make floats of them)."""
    raise Refused(f"{name} is not a JSON number; write null for a missing value")


_DECODERS = {
    True: json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant),
    False: json.JSONDecoder(object_pairs_hook=_pairs),
}


def too_deep_line(text: str, max_depth: int = MAX_JSON_DEPTH) -> int | None:
    """The line where nesting first exceeds ``max_depth`` (brackets inside strings do not count),
    else None. Column-wise: escapes are dropped, then quote parity and bracket depth are cumulative
    sums over the few structural characters, block by block (the state carried between blocks)."""
    if text.count("[") + text.count("{") <= max_depth:
        return None
    raw = text.replace("\\\\", "").replace('\\"', "").encode("utf-8")
    arr = np.frombuffer(raw, dtype=np.uint8)
    quotes, depth = 0, 0
    for start in range(0, len(arr), _CHUNK):
        block = arr[start : start + _CHUNK]
        pos = np.flatnonzero(_BRACKETS[block])
        ch = block[pos]
        parity = np.cumsum(ch == ord('"'), dtype=np.int64) + quotes
        level = np.cumsum(_STEP[ch] * ((parity & 1) == 0), dtype=np.int64) + depth  # brackets outside strings
        over = np.flatnonzero(level > max_depth)
        if over.size:
            return raw.count(b"\n", 0, start + int(pos[over[0]])) + 1
        if pos.size:
            quotes, depth = int(parity[-1]), int(level[-1])
    return None


def decode(text: str, max_depth: int = MAX_JSON_DEPTH, *, constants: bool = False) -> object:
    """``text`` parsed strictly (module docstring). Raises json.JSONDecodeError for text that is not
    JSON and Refused for JSON refused here (its ``line`` set for nesting; see ``locate``).
    ``max_depth``: one more for lines joined into one array. ``constants``: read NaN / Infinity as
    floats (lmms-eval logs: Python's json writes a missing float as NaN anywhere in a document; the
    gate still checks the fields that are read as numbers)."""
    line = too_deep_line(text, max_depth)
    if line is not None:
        raise Refused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels; not a result file", line)
    return _DECODERS[not constants].decode(text)


def locate(text: str, exc: Refused, *, constants: bool = False) -> int | None:
    """The line of ``exc`` in ``text``: known already, or found by descending into the one value that
    fails (error path only). Each child is parsed by the C scanner, so the search costs about one
    more parse, not a pure-Python one; it ends at the refused constant itself, or at the repeated key."""
    if exc.line is not None:
        return exc.line
    scan = _DECODERS[not constants].scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__; not in typeshed
    pos = _refused_at(text, scan, _skip_ws(text, 0))
    return text.count("\n", 0, pos) + 1


def _skip_ws(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON whitespace (``_WS`` matches, maybe empty)."""
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _refused_at(text: str, scan, pos: int) -> int:
    """Where in the value starting at ``pos`` (known to be refused) the refusal is."""
    kind = text[pos]
    if kind not in "[{":
        return pos  # NaN / Infinity
    keys: set[str] = set()
    i = _skip_ws(text, pos + 1)
    while text[i] not in "]}":
        if kind == "{":
            key, end = scan(text, i)
            if key in keys:
                return i  # the second occurrence of a key
            keys.add(key)
            i = _skip_ws(text, _skip_ws(text, end) + 1)  # past the colon
        try:
            _, end = scan(text, i)
        except Refused:
            return _refused_at(text, scan, i)
        i = _skip_ws(text, end)
        i = _skip_ws(text, i + 1) if text[i] == "," else i
    return pos
