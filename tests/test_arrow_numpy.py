"""``backend.scope.arrow_numpy``: the conversions equal pyarrow's own, and none of them imports pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from backend.scope import arrow_numpy

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "values",
    [np.arange(7, dtype=np.int64), np.linspace(0, 1, 5, dtype=np.float32), np.array([1, 0, 1, 1, 0, 0, 1, 1, 1], bool)],
)
def test_numbers_and_arrays_round_trip(values):
    arrow = arrow_numpy.array(values)
    assert arrow.to_pylist() == values.tolist()
    assert np.array_equal(arrow_numpy.numbers(arrow), values)
    assert np.array_equal(arrow_numpy.numbers(arrow.slice(2, 4)), values[2:6])  # an offset into the buffers
    chunked = pa.chunked_array([arrow, arrow.slice(1)])
    assert np.array_equal(arrow_numpy.numbers(chunked), np.concatenate([values, values[1:]]))
    assert arrow_numpy.numbers(pa.chunked_array([], arrow.type)).shape == (0,)


def test_numbers_refuse_nulls():
    with pytest.raises(ValueError, match="nulls"):
        arrow_numpy.numbers(pa.array([1, None]))


def test_strings_tables_and_files(tmp_path):
    keys = arrow_numpy.strings(["b", None, "é", ""])
    assert keys.to_pylist() == ["b", None, "é", ""] and keys.null_count == 1 and keys.type == pa.string()
    table = arrow_numpy.table({"key": keys, "n": arrow_numpy.array(np.arange(4))})
    assert table.equals(pa.table({"key": ["b", None, "é", ""], "n": np.arange(4)}))
    assert arrow_numpy.empty(table.schema).schema == table.schema and arrow_numpy.empty(table.schema).num_rows == 0
    arrow_numpy.write_file(table, tmp_path / "t.arrow")
    assert feather.read_table(tmp_path / "t.arrow", memory_map=True).equals(table)
    assert arrow_numpy.read_file(tmp_path / "t.arrow").equals(table)
    feather.write_feather(table, tmp_path / "f.arrow")  # a Feather V2 file (lz4 buffers) reads the same
    assert arrow_numpy.read_file(tmp_path / "f.arrow").equals(table)


def test_no_conversion_imports_pandas(tmp_path):
    code = f"""import sys, numpy as np, pyarrow as pa
from backend.scope import arrow_numpy as an
t = an.table({{"k": an.strings(["a", None]), "n": an.array(np.arange(2)), "b": an.array(np.array([True, False]))}})
an.numbers(t["n"]), an.numbers(t["b"]), an.numbers(an.empty(t.schema)["n"])
an.write_file(t, {str(tmp_path / "t.arrow")!r})
an.read_file({str(tmp_path / "t.arrow")!r})
print("pandas" in sys.modules, "pyarrow.feather" in sys.modules)"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env={"PYTHONPATH": str(REPO)}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False"
