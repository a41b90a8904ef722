"""``store.parquet_files`` reads a footer and columns as ``pyarrow.parquet.ParquetFile`` does, without importing it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from store import parquet_files
from store.store import PARTS, Store

REPO = Path(__file__).resolve().parent.parent


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "s")
    rows = pd.DataFrame(
        {
            "model": ["a", "a", "b"],
            "benchmark": "bench",
            "item_id": ["i0", "é", "i0"],
            "config": "8f",
            "correct": pd.array([1, 0, None], dtype="Int8"),
            "frame_indices": [[0, 4], None, [1]],
        }
    )
    store.append(
        {"responses": rows, "items": pd.DataFrame({"benchmark": "bench", "item_id": ["i0"], "task_type": "x"})}
    )
    store.append({"responses": rows.assign(run="r2")})
    store.compact()  # a merged file: its metadata names its parts
    store.append({"responses": rows.iloc[:1].assign(run="r3")})
    return store


def test_footers_and_columns_read_as_pyarrow_parquet_reads_them(tmp_path):
    store = _store(tmp_path)
    files = [store.root / rel for listed in store.manifest().files.values() for rel in listed]
    assert any(PARTS in (pq.read_schema(f).metadata or {}) for f in files)
    for path in files:
        assert parquet_files.schema(path).equals(pq.read_schema(path), check_metadata=True)
        assert parquet_files.metadata(path).num_rows == pq.ParquetFile(path).metadata.num_rows
        names = pq.read_schema(path).names
        for columns in (names, names[::-1][:3], [n for n in names if n in ("frame_indices", "item_id")]):
            mine, theirs = parquet_files.read(path, columns), pq.ParquetFile(path).read(columns=columns)
            assert mine.equals(theirs) and mine.schema.equals(theirs.schema, check_metadata=True), columns
    assert isinstance(parquet_files.read(files[0], []), pa.Table)


def test_reading_a_footer_imports_no_pyarrow_parquet(tmp_path):
    store = _store(tmp_path)
    path = store.root / store.manifest().files["responses"][0]
    code = f"""import sys
from store import parquet_files
from store.store import Store
parquet_files.schema({str(path)!r}), parquet_files.read({str(path)!r}, ["item_id"])
Store({str(store.root)!r}).query("SELECT count(*) FROM responses")
print("pyarrow.parquet" in sys.modules, "pyarrow.fs" in sys.modules)"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env={"PYTHONPATH": str(REPO)}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False"
