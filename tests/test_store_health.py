"""Issue 9, point 6: `trajaudit check` / `repair` on a store with a deleted Parquet file, a
truncated manifest, a compacted store whose manifest is lost, and leftovers of a killed writer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backend.cli import main
from store.store import MANIFEST, Store
from tests.ingest_fixtures import QIDS, table_frame, write_table
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


def test_a_store_without_a_write_log_is_rebuilt_only_when_told(two_ingests, capsys):
    """A store written before the write log cannot tell a killed write's files from committed ones: repair
    refuses in one line, and ``--take-all`` rebuilds as before, with its guard against rows in two files."""
    shutil.rmtree(two_ingests / "log")
    files = Store(two_ingests).manifest().files["responses"]
    copy = two_ingests / files[0].replace(".parquet", "-copy.parquet")
    copy.write_bytes((two_ingests / files[0]).read_bytes())
    (two_ingests / MANIFEST).write_text("")
    before = snapshot(two_ingests)
    capsys.readouterr()
    assert main(["repair", "--store", str(two_ingests)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no write log" in err and "--take-all" in err and "nothing was changed" in err
    assert main(["repair", "--store", str(two_ingests), "--take-all"]) == 2
    err = capsys.readouterr().err
    assert "cannot be rebuilt safely" in err and "move the older file out" in err
    assert snapshot(two_ingests) == before
    copy.unlink()
    rc, out = run_json(["repair", "--store", str(two_ingests), "--take-all"], capsys)
    assert rc == 0 and out["kept_rows"]["responses"] == 12


def test_a_copy_no_write_committed_is_set_aside_not_taken(two_ingests, capsys):
    files = Store(two_ingests).manifest().files["responses"]
    copy = files[0].replace(".parquet", "-copy.parquet")
    (two_ingests / copy).write_bytes((two_ingests / files[0]).read_bytes())
    (two_ingests / MANIFEST).write_text("")
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert rc == 0 and out["restored_from"] == "log/00000000000000000002.json"
    assert [(p["file"], p["rows"]) for p in out["set_aside"]] == [(copy, 6)]
    assert (two_ingests / "damaged" / copy).exists() and out["kept_rows"]["responses"] == 12
    assert len(Store(two_ingests).query("SELECT * FROM responses")) == 12


def test_repair_removes_a_killed_writers_leftovers(two_ingests, capsys):
    (two_ingests / "responses" / "20990101T000000-deadbeef.parquet.tmp").write_bytes(b"half")
    (two_ingests / f".{MANIFEST}.abcd1234.tmp").write_text("{")
    orphan = two_ingests / "items" / "20990101T000000-0123456789ab.parquet"
    orphan.write_bytes((two_ingests / Store(two_ingests).manifest().files["items"][0]).read_bytes())
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert rc == 0 and len(report["orphans"]) == 3
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert len(out["removed_orphans"]) == 2  # the temporary files: never renamed into place, so never data
    assert not orphan.exists() and (two_ingests / "damaged" / orphan.relative_to(two_ingests)).exists()
    assert [p["file"] for p in out["set_aside"]] == [str(orphan.relative_to(two_ingests))]
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert report["orphans"] == []


def test_retired_files_in_their_grace_period_are_neither_problems_nor_orphans(two_ingests, capsys):
    """After a compaction the merged files wait in ``retired/``: ``check`` knows them, ``repair`` keeps them."""
    from store import retired

    assert main(["compact", "--store", str(two_ingests)]) == 0
    [record] = retired.records(two_ingests)
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    assert rc == 0 and report["sound"] and report["orphans"] == []
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert not out["changed"] and all((two_ingests / f).exists() for f in record.files or [])


def test_records_that_are_not_the_stores_own_are_named_and_removed(two_ingests, capsys):
    """A record with a name the store never writes, one that does not parse, and a writer's temporary file."""
    from store import retired

    folder = two_ingests / retired.FOLDER
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / "0000000000000000001-0123456789ab.json").write_text('{"files": ')
    (folder / ".0000000000000000002-0123456789ab.json.0011223344556677.tmp").write_text("{")
    rc, report = run_json(["check", "--store", str(two_ingests)], capsys)
    problems = {p["file"]: p["problem"] for p in report["problems"]}
    assert rc == 1 and set(problems) == {"retired/notes.txt", "retired/0000000000000000001-0123456789ab.json"}
    assert problems["retired/notes.txt"].startswith("not a record this store writes")
    assert problems["retired/0000000000000000001-0123456789ab.json"].startswith("unreadable (JSONDecodeError")
    assert report["orphans"] == ["retired/.0000000000000000002-0123456789ab.json.0011223344556677.tmp"]
    note = ["--benchmark", "videomme", "--item", QIDS[0], "--tag", "temporal-order"]
    assert main(["annotate", "add", "--store", str(two_ingests), *note]) == 0  # a write passes them by
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert rc == 0 and {d["file"] for d in out["dropped"]} == set(problems) and len(out["removed_orphans"]) == 1
    assert sorted(folder.iterdir()) == [] and main(["check", "--store", str(two_ingests)]) == 0


def test_a_rebuilt_manifest_records_the_superseded_files_as_retired(two_ingests, capsys):
    """The rebuild keeps files some other file supersedes on disk for the grace period, recorded in
    ``retired/`` (not in the manifest), so a reader of the lost manifest's snapshot can finish."""
    from store import retired

    assert main(["compact", "--store", str(two_ingests)]) == 0
    for record in retired.records(two_ingests):
        (two_ingests / record.rel).unlink()  # the manifest and the records lost together
    (two_ingests / MANIFEST).write_text("{")
    rc, out = run_json(["repair", "--store", str(two_ingests)], capsys)
    assert rc == 0 and out["rebuilt_manifest"] and len(out["taken"]) == 3
    assert "retired" not in json.loads((two_ingests / MANIFEST).read_text())
    superseded = {f for r in retired.records(two_ingests) for f in r.files or []}
    assert len(superseded) == 4 and all((two_ingests / f).exists() for f in superseded)
    assert main(["check", "--store", str(two_ingests)]) == 0
