"""Issue 34, points 1-4: a store that never loses a value.

Each test reproduces one failure a probe found: a lost manifest made ``repair`` delete every data
file; a changed confidence or score was skipped as "already stored"; a killed ``--replace`` and a
corrupt manifest lost the row and revived a killed ingest; a writer whose clock runs behind left the
old question on screen and cut the readers' grace. Then a property test: random sequences of ingest,
``--replace``, compaction, kill -9 at chosen points of a write, manifest loss and ``repair``, after
which every value committed and not replaced is readable and nothing uncommitted is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.cli import main
from backend.contracts.catalog import parsed
from store import retired
from store.store import MANIFEST, Store
from tests.ingest_fixtures import table_frame, write_table
from tests.test_ingest_gate import snapshot
from tests.test_store_health import two_ingests  # noqa: F401 (a fixture: two ingests of six rows each)

ROOT = Path(__file__).resolve().parents[1]


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err.strip()


def responses(store: Path) -> pd.DataFrame:
    return Store(store).query(
        "SELECT model, item_id, config, run, answer, confidence, score FROM responses ORDER BY ALL"
    )


# -- 1. a lost manifest ------------------------------------------------------------------------


def test_a_lost_manifest_is_named_and_restored_never_emptied(two_ingests, capsys):
    before = responses(two_ingests)
    (two_ingests / MANIFEST).unlink()
    rc, out, err = cli(capsys, "check", "--store", str(two_ingests))
    assert rc == 1 and "NOT sound" in out
    assert "manifest.json: missing: reads use the newest write-log entry, log/00000000000000000002.json" in out
    assert responses(two_ingests).equals(before)  # read through the log meanwhile, never as an empty store
    rc, out, _ = cli(capsys, "repair", "--store", str(two_ingests))
    assert rc == 0 and "manifest restored from the write log" in out and "responses 12" in out
    assert responses(two_ingests).equals(before)
    assert main(["check", "--store", str(two_ingests)]) == 0


def test_a_write_after_a_lost_manifest_builds_on_the_last_committed_write(two_ingests, tmp_path, capsys):
    """A writer reading a missing manifest as empty would publish version 1 over every row."""
    (two_ingests / MANIFEST).unlink()
    rc, _, _ = cli(
        capsys, "ingest", str(write_table(tmp_path / "m3", df=table_frame("m3"))), "--store", str(two_ingests)
    )
    assert rc == 0 and len(responses(two_ingests)) == 18
    assert Store(two_ingests).manifest().version == 3 and main(["check", "--store", str(two_ingests)]) == 0


def test_a_lost_manifest_of_a_store_without_a_write_log_is_refused_in_one_line(two_ingests, capsys):
    shutil.rmtree(two_ingests / "log")
    (two_ingests / MANIFEST).unlink()
    rc, _, err = cli(capsys, "info", "--store", str(two_ingests))
    assert rc == 2 and "\n" not in err and "is missing but the store holds" in err and "trajaudit repair" in err


# -- 9. a newer store is left alone --------------------------------------------------------------


def test_a_store_of_a_newer_format_is_refused_and_repair_leaves_it_alone(two_ingests, capsys):
    manifest = json.loads((two_ingests / MANIFEST).read_text())
    (two_ingests / MANIFEST).write_text(json.dumps(manifest | {"format": 3}))
    before = snapshot(two_ingests)
    for command in ("info", "check", "repair"):
        rc, _, err = cli(capsys, command, "--store", str(two_ingests))
        assert rc == 2 and "\n" not in err, command
        assert "written by a newer trajaudit (store format 3; this version reads formats up to 2)" in err
    assert snapshot(two_ingests) == before


def test_a_file_with_columns_of_a_newer_version_is_not_moved_aside(two_ingests, capsys):
    rel = Store(two_ingests).manifest().files["responses"][0]
    table = pq.read_table(two_ingests / rel)
    pq.write_table(table.append_column("judge_model", pa.nulls(table.num_rows, pa.string())), two_ingests / rel)
    before = snapshot(two_ingests)
    for command in ("info", "repair"):
        rc, _, err = cli(capsys, command, "--store", str(two_ingests))
        assert rc == 2 and "\n" not in err and "columns this trajaudit does not know (judge_model)" in err, command
    assert snapshot(two_ingests) == before


# -- 2. changed values -------------------------------------------------------------------------


@pytest.mark.parametrize(("column", "old", "new"), [("confidence", 0.9, 0.1), ("score", 0.9, 0.05)])
def test_a_changed_value_is_refused_then_replaced_with_its_history(tmp_path, capsys, column, old, new):
    root = str(tmp_path / "store")
    df = table_frame().assign(score=0.5)
    df.loc[0, column] = old
    assert main(["ingest", str(write_table(tmp_path / "a", df=df)), "--store", root]) == 0
    df.loc[0, column] = new
    path = str(write_table(tmp_path / "b", df=df))
    rc, _, err = cli(capsys, "ingest", path, "--store", root)
    assert rc == 2 and "\n" not in err
    assert "1 row(s) change values the store holds" in err and f"({column} in 1)" in err
    assert f"{column} stored {old}, new {new}" in err and "--replace" in err
    rc, _, _ = cli(capsys, "ingest", path, "--store", root, "--replace")
    assert rc == 0
    assert Store(root).query(f"SELECT {column} FROM responses WHERE item_id = '001-1'")[column].tolist() == [new]
    rc, out, _ = cli(
        capsys, "inspect", "--benchmark", "videomme", "--item", "001-1", "--history", "--store", root, "--json"
    )
    report = json.loads(out)
    parsed("inspect --history", report)  # raises where the output breaks its contract
    history = report["history"]
    assert (
        rc == 0 and len(history) == 1 and history[0][column] == old and history[0]["replaced_seq"] > history[0]["seq"]
    )


def test_one_key_with_two_values_in_one_file_names_both_lines(tmp_path, capsys):
    df = pd.concat([table_frame(), table_frame().iloc[[2]].assign(confidence=0.05)], ignore_index=True)
    path = write_table(tmp_path, df=df)
    rc, _, err = cli(capsys, "ingest", str(path), "--store", str(tmp_path / "store"))
    assert rc == 2 and "\n" not in err
    assert "item_id=001-3" in err and f"confidence 0.4 at {path} line 4 vs 0.05 at {path} line 8" in err


# -- 3. a killed --replace, then a corrupt manifest ----------------------------------------------


@pytest.fixture
def driver() -> Iterator[subprocess.Popen]:
    """``tests/kill_driver.py``: forks a child per command and kills it where asked."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.kill_driver"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    yield proc
    proc.stdin.close()  # type: ignore[union-attr]
    proc.wait(timeout=30)


def run(driver: subprocess.Popen, argv: list[str], kill: list | None = None) -> dict:
    driver.stdin.write(json.dumps({"argv": argv, "kill": kill}) + "\n")  # type: ignore[union-attr]
    driver.stdin.flush()  # type: ignore[union-attr]
    return json.loads(driver.stdout.readline())  # type: ignore[union-attr]


def test_a_killed_replace_and_a_killed_ingest_never_come_back(two_ingests, tmp_path, capsys, driver):
    """The --replace is killed after its rewritten file, before its new rows; a plain ingest is killed
    after its response file; then the manifest is corrupted. The old row stays, the killed rows do not."""
    before = responses(two_ingests)
    changed = table_frame().assign(confidence=0.11)
    replace = ["ingest", str(write_table(tmp_path / "r", df=changed)), "--store", str(two_ingests), "--replace"]
    # adds: history, the rewritten file, then the new rows: killed after the rewritten file
    assert run(driver, replace, ["add", 2]) == {"rc": None, "killed": True, "committed": False}
    plain = ["ingest", str(write_table(tmp_path / "m3", df=table_frame("m3"))), "--store", str(two_ingests)]
    assert run(driver, plain, ["add", 1]) == {"rc": None, "killed": True, "committed": False}
    (two_ingests / MANIFEST).write_text((two_ingests / MANIFEST).read_text()[:30])
    rc, out, _ = cli(capsys, "repair", "--store", str(two_ingests))
    assert rc == 0 and "set aside" in out
    assert responses(two_ingests).equals(before)
    assert main(["check", "--store", str(two_ingests)]) == 0


def test_a_write_killed_after_its_commit_is_published_by_the_next(two_ingests, tmp_path, capsys, driver):
    plain = ["ingest", str(write_table(tmp_path / "m3", df=table_frame("m3"))), "--store", str(two_ingests)]
    assert run(driver, plain, ["commit"]) == {"rc": None, "killed": True, "committed": True}
    assert len(responses(two_ingests)) == 12  # committed, not yet visible
    rc, out, _ = cli(capsys, "check", "--store", str(two_ingests))
    assert rc == 1 and "a committed write the manifest does not show yet" in out
    rc, out, _ = cli(capsys, "repair", "--store", str(two_ingests))
    assert rc == 0 and "published 1 committed write(s)" in out and len(responses(two_ingests)) == 18


def test_a_failed_manifest_swap_takes_its_commit_back(two_ingests, tmp_path, monkeypatch):
    """The log entry is written, then the manifest swap fails (a full disk): the write is abandoned, so its
    entry goes with its files, and no later write rolls it forward onto files that are gone."""
    before = snapshot(two_ingests)

    def full(self, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("store.store.Manifest.save", full)
    with pytest.raises(OSError):
        row = {"model": "m3", "benchmark": "videomme", "item_id": "001-1", "config": "16f", "run": "main"}
        Store(two_ingests).append({"responses": pd.DataFrame([row | {"answer": "A", "correct": 1}])})
    monkeypatch.undo()
    assert snapshot(two_ingests) == before
    assert main(["ingest", str(write_table(tmp_path / "m4", df=table_frame("m4"))), "--store", str(two_ingests)]) == 0
    assert len(responses(two_ingests)) == 18 and main(["check", "--store", str(two_ingests)]) == 0


# -- 4. order by the store, not by the clock -----------------------------------------------------


def test_a_writer_whose_clock_runs_behind_still_corrects_the_question(two_ingests, tmp_path, capsys, monkeypatch):
    late = pd.Timestamp.now(tz="UTC") - pd.Timedelta(hours=1)
    monkeypatch.setattr("store.ingest.publish.pd.Timestamp.now", lambda tz=None: late)
    fixed = table_frame().assign(question="the corrected question")
    assert main(["ingest", str(write_table(tmp_path / "fix", df=fixed)), "--store", str(two_ingests)]) == 0
    assert Store(two_ingests).query("SELECT DISTINCT question FROM items")["question"].tolist() == [
        "the corrected question"
    ]
    rc, out, _ = cli(
        capsys, "inspect", "--benchmark", "videomme", "--item", "001-1", "--store", str(two_ingests), "--json"
    )
    assert json.loads(out)["item"]["question"] == "the corrected question"


def test_a_deletion_by_a_writer_whose_clock_runs_behind_still_deletes(two_ingests, monkeypatch):
    from backend.scope.annotations import add_annotation, annotations_for, delete_annotation

    store = Store(two_ingests)
    note = add_annotation(store, "videomme", "001-1", "counting", "a note", "ana")
    late = pd.Timestamp.now(tz="UTC") - pd.Timedelta(hours=1)
    monkeypatch.setattr(pd.Timestamp, "now", lambda tz=None: late)  # the clock the delete reads (pandas')
    delete_annotation(store, note.annotation_id, "ben")
    assert annotations_for(store, "videomme", "001-1").empty


def test_a_compaction_by_a_slow_clock_keeps_the_readers_grace(two_ingests, tmp_path):
    """The compaction records its retirement an hour in the past; the next normal write must not delete
    the retired files under a reader still scanning the snapshot before it."""
    reader = Store(two_ingests).connect()
    slow = Store(two_ingests, clock=lambda: time.time() - 3600)
    assert slow.compact()["responses"] == 2
    assert main(["ingest", str(write_table(tmp_path / "m3", df=table_frame("m3"))), "--store", str(two_ingests)]) == 0
    kept = {f for r in retired.records(two_ingests) for f in r.files or []}
    assert kept and all((two_ingests / f).exists() for f in kept)
    assert reader.execute("SELECT count(*) FROM responses").fetchone() == (12,)


# -- the property: every committed value, nothing uncommitted -------------------------------------

KEYS = [(m, i, c) for m in ("m1", "m2") for i in range(3) for c in ("8f", "16f")]
KILLS = [None, None, ["add", 1], ["add", 2], ["add", 3], ["commit"], ["publish"]]
row = st.tuples(st.sampled_from(range(len(KEYS))), st.sampled_from("AB"), st.sampled_from([0.25, 0.75]))
ingest = st.tuples(st.just("ingest"), st.lists(row, min_size=1, max_size=6), st.booleans(), st.sampled_from(KILLS))
compact = st.tuples(st.just("compact"), st.sampled_from(KILLS))
lose = st.tuples(st.just("lose"), st.sampled_from(["delete", "truncate"]))
operations = st.lists(st.one_of(ingest, ingest, compact, lose, st.just(("repair",))), min_size=2, max_size=9)


def _stored_values(store: Path) -> dict:
    rows = Store(store).query("SELECT model, item_id, config, answer, confidence FROM responses")
    return {(r.model, r.item_id, r.config): (r.answer, r.confidence) for r in rows.itertuples()}


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_random_writes_kills_and_repairs_keep_exactly_the_committed_values(tmp_path_factory, driver, ops):
    work = tmp_path_factory.mktemp("prop")
    store, committed, lost, steps = str(work / "store"), {}, False, 0
    (work / "store").mkdir()
    for op in ops:
        steps += 1
        if op[0] == "ingest":
            _, rows, replace, kill = op
            batch = {KEYS[k]: (answer, conf) for k, answer, conf in rows}
            frame = pd.DataFrame(
                [
                    {"model": m, "benchmark": "b", "item_id": f"q{i}", "config": c, "prediction": a, "target": "A"}
                    | {"confidence": conf}
                    for (m, i, c), (a, conf) in batch.items()
                ]
            )
            path = write_table(work / f"in{steps}", df=frame)
            got = run(driver, ["ingest", str(path), "--store", store] + ["--replace"] * replace, kill)
            values = {(m, f"q{i}", c): v for (m, i, c), v in batch.items()}
            conflict = any(committed.get(k, v) != v for k, v in values.items())
            if lost or (conflict and not replace):
                assert got == {"rc": 2, "killed": False, "committed": False}
            elif got["committed"] or got["rc"] == 0:  # a write with nothing new commits nothing
                committed.update(values)
            else:
                assert got["killed"]
        elif op[0] == "compact":
            got = run(driver, ["compact", "--store", store], op[1])
            assert got["rc"] in ((2,) if lost else (0, None))
        elif op[0] == "lose":
            manifest = Path(store) / MANIFEST
            if manifest.exists():
                # a missing manifest: the newest write-log entry stands in; a corrupt one: refused until repair
                lost = op[1] == "truncate"
                if op[1] == "delete":
                    manifest.unlink()
                    assert _stored_values(Path(store)) == committed, ops
                else:
                    manifest.write_text(manifest.read_text()[: len(manifest.read_text()) // 2])
        else:
            got = run(driver, ["repair", "--store", store])
            assert got["rc"] == 0, ops
            lost = False
            assert _stored_values(Path(store)) == committed, ops
    if not lost:
        assert run(driver, ["repair", "--store", store])["rc"] == 0
        assert _stored_values(Path(store)) == committed, ops
        assert run(driver, ["check", "--store", store])["rc"] == 0
