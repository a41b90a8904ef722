"""Issue 9, point 6: `trajaudit check` / `repair` on a store with a deleted Parquet file, a
truncated manifest, a compacted store whose manifest is lost, and leftovers of a killed writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.cli import main
from store.store import MANIFEST, Store
from tests.ingest_fixtures import table_frame, write_table
from tests.test_ingest_gate import snapshot


@pytest.fixture
def two_ingests(tmp_path) -> Path:
    """A store with two ingests (two response files of 6 rows each)."""
    root = tmp_path / "store"
    for model in ("m1", "m2"):
        assert main(["ingest", str(write_table(tmp_path / model, df=table_frame(model))), "--store", str(root)]) == 0
    return root


def run_json(argv: list[str], capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc = main([*argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_sound_store_checks_clean(two_ingests, capsys):
    rc, report = run_json(["check", "--store", str(two_ingests), "--deep"], capsys)
    assert rc == 0 and report["sound"] and report["rows"]["responses"] == 12 and report["problems"] == []
    before = snapshot(two_ingests)
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert rc == 0 and not out["changed"] and snapshot(two_ingests) == before


def test_deleted_parquet_file(two_ingests, capsys):
    lost = Store(two_ingests).manifest().files["responses"][0]
    (two_ingests / lost).unlink()
    capsys.readouterr()
    assert main(["info", "--store", str(two_ingests)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{lost} is listed in" in err and "trajaudit repair" in err
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert rc == 1 and not report["sound"]
    assert report["problems"] == [{"file": lost, "table": "responses", "problem": "missing", "rows": 6}]
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert rc == 0 and out["responses_lost"] == 6 and [p["file"] for p in out["dropped"]] == [lost]
    assert main(["check", "--store", str(two_ingests)]) == 0
    assert len(Store(two_ingests).query("SELECT * FROM responses")) == 6


def test_unreadable_parquet_file_is_moved_aside(two_ingests, capsys):
    bad = Store(two_ingests).manifest().files["responses"][1]
    (two_ingests / bad).write_bytes(b"not parquet")
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert rc == 1 and report["problems"][0]["problem"].startswith("unreadable Parquet")
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert out["moved_to_damaged"] == [f"damaged/{bad}"] and (two_ingests / "damaged" / bad).exists()
    assert main(["check", "--store", str(two_ingests)]) == 0


def test_truncated_manifest_is_named_and_rebuilt(two_ingests, capsys):
    before = Store(two_ingests).query("SELECT * FROM responses ORDER BY model, item_id")
    manifest = two_ingests / MANIFEST
    manifest.write_text(manifest.read_text()[:40])
    capsys.readouterr()
    assert main(["metrics", "--models", "m1,m2", "--store", str(two_ingests)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{manifest} is corrupt" in err and "trajaudit repair" in err
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert rc == 1 and report["problems"][0]["file"] == MANIFEST
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert rc == 0 and out["rebuilt_manifest"] and len(out["taken"]) == 5  # 2 x (responses, runs) + items once
    after = Store(two_ingests).query("SELECT * FROM responses ORDER BY model, item_id")
    assert after.equals(before)
    assert main(["check", "--store", str(two_ingests)]) == 0


def test_rebuild_after_compaction_skips_superseded_files(two_ingests, capsys):
    """Compaction leaves the old files on disk (grace period); the merged file names them, so a
    rebuilt manifest does not count their rows twice."""
    assert main(["compact", "--store", str(two_ingests)]) == 0
    (two_ingests / MANIFEST).write_text("{")
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert rc == 0 and len(Store(two_ingests).query("SELECT * FROM responses")) == 12


def test_rebuild_refuses_when_rows_would_count_twice(two_ingests, capsys):
    files = Store(two_ingests).manifest().files["responses"]
    copy = two_ingests / files[0].replace(".parquet", "-copy.parquet")
    copy.write_bytes((two_ingests / files[0]).read_bytes())
    (two_ingests / MANIFEST).write_text("")
    before = snapshot(two_ingests)
    capsys.readouterr()
    assert main(["repair", "--store", str(two_ingests)]) == 2
    err = capsys.readouterr().err
    assert "cannot be rebuilt safely" in err and "move the older file out" in err
    assert snapshot(two_ingests) == before


def test_repair_removes_a_killed_writers_leftovers(two_ingests, capsys):
    (two_ingests / "responses" / "20990101T000000-deadbeef.parquet.tmp").write_bytes(b"half")
    (two_ingests / f".{MANIFEST}.abcd1234.tmp").write_text("{")
    orphan = two_ingests / "items" / "20990101T000000-0123456789ab.parquet"
    orphan.write_bytes((two_ingests / Store(two_ingests).manifest().files["items"][0]).read_bytes())
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert rc == 0 and len(report["orphans"]) == 3
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert len(out["removed_orphans"]) == 3 and not orphan.exists()
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert report["orphans"] == []
