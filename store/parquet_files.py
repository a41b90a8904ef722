"""A Parquet file's footer (schema, metadata, row count) and some of its columns, read as
``pyarrow.parquet.ParquetFile`` reads them, without importing ``pyarrow.parquet``.

That module imports ``pyarrow.fs`` (its S3, GCS, HDFS and Azure bindings, and ``ssl``): 10-20 ms that the first
read after a one-row write paid to read one new file's footer and rows (issue 37), and that ``Store.connect``
paid to verify a new file's schema. ``ParquetFile`` is this reader (``pyarrow._parquet.ParquetReader``) opened
with the same defaults on the local file; pyarrow is pinned (pyproject.toml), and ``tests/test_parquet_files.py``
checks both give the same schema, row count and rows. Writes and compactions still use ``pyarrow.parquet``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyarrow._parquet import FileMetaData, ParquetReader


def reader(path: Path | str) -> ParquetReader:
    """The file opened as ``pyarrow.parquet.ParquetFile(path)`` opens it (its defaults)."""
    out = ParquetReader()
    out.open(str(path), use_memory_map=False, buffer_size=0, pre_buffer=True, arrow_extensions_enabled=True)
    return out


def schema(path: Path | str) -> pa.Schema:
    """``pyarrow.parquet.read_schema(path)``: the Arrow schema with the file's key-value metadata."""
    return reader(path).schema_arrow


def metadata(path: Path | str) -> FileMetaData:
    """``pyarrow.parquet.ParquetFile(path).metadata``: row count, row groups."""
    return reader(path).metadata


def read(path: Path | str, columns: list[str]) -> pa.Table:
    """``pyarrow.parquet.ParquetFile(path).read(columns=columns)``: each named column (every leaf of a nested
    one), in the order named."""
    file = reader(path)
    leaves = list(file.column_paths)
    indices = [i for name in columns for i, leaf in enumerate(leaves) if leaf[0] == name]
    return file.read_all(column_indices=indices, use_threads=True)
