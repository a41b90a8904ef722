"""Ingest against a store: idempotence, conflicts, --replace, item merging, and every bad input
refused with a message naming the file and place while the store stays exactly as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from ingest_fixtures import private_copy, table_frame, write_answers, write_lmms_jsonl, write_table, write_wide

from backend.cli import main
from store import retired
from store.errors import UserError
from store.ingest import ingest_paths
from store.store import Store


def snapshot(store) -> tuple:
    """Everything a reader could see: manifest version and the rows of every table."""
    tables = {
        t: store.query(f"SELECT * EXCLUDE (written_at) FROM {t} ORDER BY ALL") for t in ("responses", "items_all")
    }
    runs = store.query("SELECT run_id, n_rows FROM runs ORDER BY ALL")
    return store.version(), (store.root / "manifest.json").read_text(), tables, runs


def assert_same(a: tuple, b: tuple) -> None:
    assert a[0] == b[0] and a[1] == b[1]
    for t in a[2]:
        pd.testing.assert_frame_equal(a[2][t], b[2][t])
    pd.testing.assert_frame_equal(a[3], b[3])


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory) -> Path:
    """The six-item table ingested once; each test takes a copy (``seeded``)."""
    base = tmp_path_factory.mktemp("seeded-store")
    ingest_paths(Store(base / "store"), [write_table(base / "seed", "csv")])
    return base / "store"


@pytest.fixture
def seeded(seeded_template, tmp_path) -> Store:
    """A store holding the six-item table for model m1 at 16f (a private copy: tests write to it)."""
    return Store(private_copy(seeded_template, tmp_path))


def test_reingesting_the_same_file_adds_nothing(tmp_path, store, capsys):
    path = write_table(tmp_path, "csv")
    first = ingest_paths(store, [path])
    assert (first.new, first.already_stored, first.store_version) == (6, 0, 1)
    again = ingest_paths(store, [path])
    assert (again.new, again.already_stored, again.replaced, again.items_written) == (0, 6, 0, 0)
    assert again.store_version == 1 and again.files[0].run_id is None  # nothing published, no run row
    assert main(["ingest", str(path), "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "6 rows, 0 new, 6 already stored" in out and "store version 1" in out
    assert store.query("SELECT count(*) AS n FROM responses")["n"][0] == 6
    assert store.query("SELECT count(*) AS n FROM runs")["n"][0] == 1


def test_another_run_id_is_a_separate_repeat(tmp_path, seeded):
    s = ingest_paths(seeded, [write_table(tmp_path, "csv")], run="seed2")
    assert s.new == 6
    assert seeded.query("SELECT run, count(*) AS n FROM responses GROUP BY run ORDER BY run")["n"].tolist() == [6, 6]


def test_conflicting_answers_are_refused_then_replaced(tmp_path, seeded):
    df = table_frame()
    df.loc[0, "prediction"] = "B"  # stored: A (correct); now: B (wrong)
    path = write_table(tmp_path, "csv", df)
    before = snapshot(seeded)
    with pytest.raises(UserError) as err:
        ingest_paths(seeded, [path])
    msg = str(err.value)
    assert msg.startswith("1 row(s) change values the store holds for the same model, benchmark, item, config and run")
    assert "(answer in 1, correct in 1, raw_output in 1)" in msg
    assert "model=m1 benchmark=videomme item_id=001-1 config=16f run=main: answer stored 'A', new 'B'" in msg
    assert f"{path} line 2" in msg and "--replace" in msg
    assert_same(before, snapshot(seeded))

    old_files = set(seeded.manifest().files["responses"])
    s = ingest_paths(seeded, [path], replace=True)
    assert (s.new, s.already_stored, s.replaced) == (0, 5, 1)
    rows = seeded.query("SELECT item_id, answer, correct FROM responses ORDER BY item_id")
    assert len(rows) == 6 and rows.iloc[0].tolist() == ["001-1", "B", 0]
    manifest = seeded.manifest()
    assert not old_files & set(manifest.files["responses"])  # the old file was rewritten and retired
    assert {f for r in retired.records(seeded.root) for f in r.files or []} == old_files


def test_conflicting_target_for_a_stored_item_is_refused(tmp_path, seeded):
    df = table_frame(model="m2")
    df.loc[2, "target"] = "C"  # 001-3 is stored with target D
    path = write_table(tmp_path, "csv", df)
    before = snapshot(seeded)
    with pytest.raises(
        UserError, match=r"1 item\(s\) have a different target in the store: videomme/001-3 \(stored D, new C\)"
    ):
        ingest_paths(seeded, [path])
    assert_same(before, snapshot(seeded))
    ingest_paths(seeded, [path], replace=True)
    assert seeded.query("SELECT target FROM items WHERE item_id = '001-3'")["target"][0] == "C"


def test_identical_duplicate_rows_are_kept_once_and_counted(tmp_path, store):
    df = pd.concat([table_frame(), table_frame().iloc[[1]]], ignore_index=True)
    s = ingest_paths(store, [write_table(tmp_path, "csv", df)])
    assert (s.rows, s.new, s.duplicates) == (7, 6, 1)
    assert store.query("SELECT count(*) AS n FROM responses")["n"][0] == 6


def test_items_merge_fields_from_different_sources(tmp_path, store):
    ingest_paths(store, [write_wide(tmp_path)], answers=write_answers(tmp_path))
    ingest_paths(store, [write_table(tmp_path, "csv")])  # brings question and options, no split
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert len(items) == 6 and set(items["split"]) == {"V1_short"}
    assert items["question"].notna().all() and items["task_type"].notna().all()
    assert ingest_paths(store, [write_table(tmp_path, "csv")]).items_written == 0


def test_all_files_of_one_call_are_published_together(tmp_path, seeded):
    good = write_table(tmp_path, "csv", table_frame(model="m3"), name="good")
    bad = write_table(tmp_path, "csv", table_frame(model="m4").drop(columns=["config"]), name="bad")
    before = snapshot(seeded)
    with pytest.raises(UserError, match="bad.csv: missing column"):
        ingest_paths(seeded, [good, bad])
    assert_same(before, snapshot(seeded))
    s = ingest_paths(seeded, [good, write_lmms_jsonl(tmp_path / "l")])
    assert s.new == 12 and s.store_version == before[0] + 1 and len(s.files) == 2


def _broken_jsonl(tmp_path):
    path = write_lmms_jsonl(tmp_path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:40]
    path.write_text("\n".join(lines))
    return [path], {}


def _latin1(tmp_path):
    path = tmp_path / "latin.csv"
    text = table_frame().assign(question="Qu'est-ce qu'il a vu à la fin ?").to_csv(index=False)
    path.write_bytes(text.encode("latin-1"))
    return [path], {}


def _dup_conflict(tmp_path):
    df = pd.concat([table_frame(), table_frame().iloc[[4]].assign(prediction="A")], ignore_index=True)
    return [write_table(tmp_path, "csv", df)], {}


def _bad_label(tmp_path):
    df = table_frame()
    df.loc[3, "config"] = "16frames"
    return [write_table(tmp_path, "csv", df)], {}


def _empty(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n \n")
    return [path], {}


def _unknown(tmp_path):
    path = tmp_path / "results.txt"
    path.write_text("model item answer\n")
    return [path], {}


def _bad_correct(tmp_path):
    df = table_frame().drop(columns=["prediction"]).assign(correct=[1, 0, 2, 1, 0, 1])
    return [write_table(tmp_path, "csv", df)], {}


def _answers_short(tmp_path):
    return [write_wide(tmp_path)], {"answers": write_answers(tmp_path / "a", drop=3)}


def _missing_column(tmp_path):
    return [write_table(tmp_path, "csv", table_frame().drop(columns=["config"]))], {}


BAD_INPUTS = {
    "missing column": (_missing_column, r"long.csv: missing column\(s\) config for a long table"),
    "unknown config label": (_bad_label, r"long.csv line 5: unknown config label '16frames'"),
    "unparseable JSON": (_broken_jsonl, r"samples_videomme.jsonl line 3: not valid JSON"),
    "answers missing items": (_answers_short, r"3 item\(s\) are not in the answers file .*e\.g\. 001-1, 001-2, 001-3"),
    "conflicting duplicates": (
        _dup_conflict,
        r"1 response key\(s\) appear more than once with different values: model=m1 .*item_id=002-2.*: answer .* at .*long.csv line 6 vs .* at .*long.csv line 8",
    ),
    "empty file": (_empty, r"empty.jsonl: empty file"),
    "wrong encoding": (_latin1, r"latin.csv line 2: not UTF-8 text \(byte 0xe0\)"),
    "unknown format": (_unknown, r"results.txt: cannot tell the format .*pass --format"),
    "correct not 0/1": (_bad_correct, r"long.csv line 4: `correct` must be 0 or 1, got '2'"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_refused_and_the_store_is_untouched(tmp_path, seeded, case):
    build, pattern = BAD_INPUTS[case]
    paths, kwargs = build(tmp_path)
    before = snapshot(seeded)
    with pytest.raises(UserError, match=pattern):
        ingest_paths(seeded, paths, **kwargs)
    assert_same(before, snapshot(seeded))


def test_a_missing_key_column_can_come_from_the_command_line(tmp_path, store):
    path = write_table(tmp_path, "csv", table_frame().drop(columns=["config"]))
    with pytest.raises(UserError, match=r"missing column\(s\) config for a long table; the file has: model, benchmark"):
        ingest_paths(store, [path])
    assert ingest_paths(store, [path], config="8f").configs == ["8f"]


def test_cli_errors_exit_2_with_the_message(tmp_path, seeded, capsys):
    paths, _ = _bad_label(tmp_path)
    before = snapshot(seeded)
    assert main(["ingest", str(paths[0]), "--store", str(seeded.root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trajaudit ingest: error: ") and "unknown config label '16frames'" in err
    assert main(["ingest", str(paths[0]), "--store", str(seeded.root), "--config", "sixteen"]) == 2
    assert "--config: unknown config label 'sixteen'" in capsys.readouterr().err
    assert_same(before, snapshot(seeded))


def test_cli_json_summary(tmp_path, store, capsys):
    path = write_wide(tmp_path)
    answers = write_answers(tmp_path)
    rc = main(["ingest", str(path), "--store", str(store.root), "--answers", str(answers), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: out[k] for k in ("rows", "new", "already_stored", "replaced", "flagged")} == {
        "rows": 12,
        "new": 12,
        "already_stored": 0,
        "replaced": 0,
        "flagged": {"no-answer": 1},
    }
    assert out["models"] == ["LLaVA-NeXT-Video-7B"] and out["benchmarks"] == ["videomme"]
    assert out["configs"] == ["text", "8f@151k"] and out["store_version"] == store.version() == 1
    assert out["files"][0]["format"] == "scalegrid" and out["files"][0]["run_id"].startswith("ingest-")
