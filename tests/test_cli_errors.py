"""Issue 9, point 5: failures a user can cause exit 2 with one line naming the file or flag, never a
traceback; refusals leave the store byte-identical; JSON output never holds NaN/Infinity."""

from __future__ import annotations

import json
import math

import pytest

from backend.cli import main
from backend.cli.common import print_json
from backend.runtime.rerun import MAX_SEED, parse_seed
from store.errors import UserError
from tests.ingest_fixtures import write_table
from tests.rerun_fixtures import build_store
from tests.test_ingest_gate import snapshot


def one_line_error(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_store_path_that_is_a_file(tmp_path, capsys):
    path = tmp_path / "not-a-folder"
    path.write_text("x")
    err = one_line_error(["ingest", str(write_table(tmp_path / "in")), "--store", str(path)], capsys)
    assert f"{path} is a file, not a store folder" in err
    err = one_line_error(["info", "--store", str(path)], capsys)
    assert f"{path} is a file" in err
    assert path.read_text() == "x"


def test_read_only_store(tmp_path, capsys, monkeypatch):
    """Tests run as root, where chmod does not stop writes: the lock file's open is made to fail
    as it does for a user without write permission."""
    root = tmp_path / "store"
    assert main(["ingest", str(write_table(tmp_path / "in")), "--store", str(root)]) == 0
    before = snapshot(root)
    real_open = open

    def denied(file, mode="r", *args, **kwargs):
        if str(file).endswith(".write.lock"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", denied)
    err = one_line_error(
        ["ingest", str(write_table(tmp_path / "in2", name="other")), "--store", str(root), "--run", "r2"], capsys
    )
    assert f"cannot write to the store {root}" in err and "Permission denied" in err
    monkeypatch.undo()
    assert snapshot(root) == before


def test_rerun_seed_out_of_64_bit_range():
    assert parse_seed(str(MAX_SEED)) == MAX_SEED
    with pytest.raises(UserError, match=r"seed must be a non-negative integer at most 9223372036854775807"):
        parse_seed("99999999999999999999999")


def test_rerun_cli_refuses_seed_and_zero_pixels(tmp_path, capsys):
    root = build_store(tmp_path / "store")
    base = ["rerun", "--store", str(root), "--model", "m", "--benchmark", "bench", "--item", "q1"]
    before = snapshot(root)
    err = one_line_error([*base, "--config", "8f/random", "--seed", "99999999999999999999999"], capsys)
    assert "seed must be a non-negative integer at most 9223372036854775807" in err
    err = one_line_error([*base, "--config", "8f@0k"], capsys)
    assert "pixels per frame must be in 1.." in err
    assert snapshot(root) == before  # nothing queued


def test_print_json_never_emits_nan_or_infinity(capsys):
    import numpy as np

    print_json({"a": math.inf, "b": [float("nan"), -math.inf], "c": np.float32("inf"), "d": np.array([np.inf, 1.0])})
    out = capsys.readouterr().out
    assert json.loads(out) == {"a": None, "b": [None, None], "c": None, "d": [None, 1.0]}
    assert "Infinity" not in out and "NaN" not in out
