"""Issue 9, point 5: failures a user can cause exit 2 with one line naming the file or flag, never a
traceback; refusals leave the store byte-identical; JSON output never holds NaN/Infinity."""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pytest

from backend.cli import main
from backend.cli.common import print_json
from backend.runtime.rerun import MAX_SEED, parse_seed
from store.errors import UserError
from store.queue import JobQueue
from store.rerun_request import RerunRequest
from tests.ingest_fixtures import table_frame, write_table
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
    real_open = os.open

    def denied(file, flags, *args, **kwargs):  # filelock opens the lock file with os.open
        if str(file).endswith(".write.lock"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr("os.open", denied)
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


# -- issue 34 item 9: a read-only store ---------------------------------------------------------------
def read_only(root: Path, monkeypatch) -> None:
    """``root`` and its files without write permission. Run as root, where permissions do not bite, SQLite
    is made to open ``jobs.sqlite`` as it does for a user who cannot write the file: read-only (``mode=ro``),
    so a write meets SQLite's own ``attempt to write a readonly database``."""
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    if os.geteuid() == 0:
        real = sqlite3.connect

        def connect(database, *args, **kwargs):
            if str(database).startswith("file:") and quote(str(root.resolve())) in str(database):
                database = re.sub(r"mode=rwc?", "mode=ro", str(database))
            return real(database, *args, **kwargs)

        monkeypatch.setattr(sqlite3, "connect", connect)


@pytest.fixture
def read_only_store(tmp_path, monkeypatch) -> Path:
    """A store with one ingest (two configurations: the pages need a grid) and one queued job, then made read-only."""
    root = tmp_path / "store"
    two = pd.concat([table_frame("m1", "8f"), table_frame("m1", "16f")])
    assert main(["ingest", str(write_table(tmp_path / "in", df=two)), "--store", str(root)]) == 0
    JobQueue(root).enqueue(RerunRequest("m1", "videomme", "001-1", "8f"))
    read_only(root, monkeypatch)
    yield root
    for path in [root, *root.rglob("*")]:  # pytest removes tmp_path later: give the permission back
        path.chmod(path.stat().st_mode | 0o200)


def test_jobs_on_a_read_only_store_says_the_store_is_read_only(read_only_store, capsys):
    assert main(["info", "--store", str(read_only_store)]) == 0  # a read command works
    err = one_line_error(["jobs", "--store", str(read_only_store), "--json"], capsys)
    assert err.startswith(f"trajaudit jobs: error: the store is read-only: {read_only_store}"), err
    assert "stop the workers" not in err


def test_the_workers_page_on_a_read_only_store_shows_a_notice(read_only_store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from pages.common import ui

    monkeypatch.setenv("TRAJAUDIT_STORE", str(read_only_store))
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.query_params.update({"bench": "videomme"})
    at.run()
    at.switch_page("pages/workers.py").run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert any(f"The store is read-only: {ui.code(read_only_store)}" in w.value for w in at.warning), [
        w.value for w in at.warning
    ]


def test_demo_given_two_store_folders_refuses_and_writes_neither(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    err = one_line_error(["demo", str(a), "--store", str(b), "--items", "8", "--no-videos"], capsys)
    assert err == f"trajaudit demo: error: two store folders: {a} and --store {b}; give one"
    assert not a.exists() and not b.exists()
