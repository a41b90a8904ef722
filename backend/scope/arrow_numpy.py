"""Arrow and NumPy conversions that leave pandas unimported.

pyarrow probes for pandas, importing it when it is installed (0.3 s on this project's machine, as long as
the rest of a computing ``metrics``), on its first conversion of Python or NumPy data: ``pa.array``,
``pa.table``, ``pa.scalar``, ``Array.to_numpy``, ``Schema.empty_table`` (pyarrow 26, ``pandas-shim.pxi``).
The first read after a write converts a few columns of this kind (a write's new rows, the positions of
its items) and would pay that import for nothing (issue 37). These go through DLPack and Arrow's buffers
instead, which never ask for pandas; ``tests/test_cli_answers.py`` fails if a computing ``metrics`` imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc


def numbers(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A fixed-width column without nulls (integers, floats, booleans) as NumPy: a read-only view of the
    Arrow data where it is one chunk (DLPack), booleans unpacked from their bits."""
    array = values
    if isinstance(values, pa.ChunkedArray):  # no chunks: an empty array of the type (combine_chunks probes)
        empty = values.num_chunks == 0
        array = pa.Array.from_buffers(values.type, 0, [None, pa.py_buffer(b"")]) if empty else values.combine_chunks()
    if array.null_count:
        raise ValueError("a column with nulls has no NumPy view: drop or fill them first")
    if pa.types.is_boolean(array.type):
        start, n = array.offset, len(array)
        bits = np.frombuffer(array.buffers()[1], dtype=np.uint8) if n else np.zeros(0, dtype=np.uint8)
        return np.unpackbits(bits, count=start + n, bitorder="little")[start:].astype(bool)
    return np.from_dlpack(array)


def array(values: np.ndarray) -> pa.Array:
    """A one-dimensional NumPy array of numbers or booleans as an Arrow array without nulls (its buffer
    shared where it is contiguous)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        return pa.Array.from_buffers(
            pa.bool_(), len(values), [None, pa.py_buffer(np.packbits(values, bitorder="little"))]
        )
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def floats(values: np.ndarray) -> pa.Array:
    """Floats as an Arrow double array, NaN as null (what ``pa.array(values, from_pandas=True)`` gives)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    missing = np.isnan(values)
    nulls = int(missing.sum())
    validity = pa.py_buffer(np.packbits(~missing, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(pa.float64(), len(values), [validity, pa.py_buffer(values)], null_count=nulls)


def lists(values: pa.Array, lengths: np.ndarray) -> pa.ListArray:
    """``values`` cut into consecutive lists of ``lengths`` (a list per row, built from offsets, not per row)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(array(offsets), values)


def strings(values: Sequence[str | None]) -> pa.Array:
    """A few Python strings (None: null) as an Arrow string array (a write's item keys)."""
    data = [b"" if v is None else v.encode() for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    valid = np.array([v is not None for v in values], dtype=bool)
    nulls = len(values) - int(valid.sum())
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    return pa.Array.from_buffers(pa.string(), len(data), buffers, null_count=nulls)


def table(columns: dict[str, pa.Array | pa.ChunkedArray]) -> pa.Table:
    """Arrow columns as a table (``pa.table`` of a dict asks whether it is a DataFrame first)."""
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))


def empty(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` without rows."""
    return pa.Table.from_batches([], schema=schema)


def read_file(path: Path) -> pa.Table:
    """An Arrow IPC file (``write_file``'s, or any Feather V2 file), memory-mapped: what
    ``pyarrow.feather.read_table(path, memory_map=True)`` reads, without importing ``pyarrow.feather`` (with
    ``pyarrow.pandas_compat`` and ``concurrent.futures`` behind it: 2-3 ms of every read of a kept entry)."""
    return ipc.open_file(pa.memory_map(str(path))).read_all()


def write_file(table: pa.Table, path: Path) -> None:
    """``table`` as an uncompressed Arrow IPC file, which ``pyarrow.feather.read_table`` maps (``write_feather``
    asks whether it is a DataFrame first)."""
    with ipc.new_file(path, table.schema) as out:
        out.write_table(table)
