"""The store folder: atomic publication through the manifest, rollback on error, compaction."""

import pandas as pd
import pytest

from store.schema import SchemaError


def _responses(n: int, model: str = "m", correct: int = 1) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": model,
            "benchmark": "b",
            "item_id": [str(i) for i in range(n)],
            "config": "16f",
            "run": "main",
            "correct": correct,
            "frame_indices": [[0, 5, 9]] * n,
        }
    )


def test_append_publishes_across_tables_and_bumps_version(store):
    assert store.is_empty() and store.version() == 0
    v = store.append({"responses": _responses(3), "items": pd.DataFrame({"benchmark": ["b"], "item_id": ["0"]})})
    assert v == 1 == store.version()
    assert store.query("select count(*) n from responses").n[0] == 3
    assert store.query("select frame_indices from responses limit 1").frame_indices[0].tolist() == [0, 5, 9]
    assert store.query("select count(*) n from items").n[0] == 1


def test_failed_write_publishes_nothing_and_leaves_no_files(store):
    store.append({"responses": _responses(2)})
    before = sorted(p.name for p in store.root.rglob("*.parquet"))
    with pytest.raises(RuntimeError):
        with store.writer() as w:
            w.add("responses", _responses(5, model="x"))
            raise RuntimeError("boom")
    assert store.version() == 1
    assert sorted(p.name for p in store.root.rglob("*.parquet")) == before
    assert store.query("select count(*) n from responses").n[0] == 2


def test_unknown_column_is_refused(store):
    with pytest.raises(SchemaError, match="unknown columns"):
        store.append({"responses": _responses(1).assign(bogus=1)})
    assert store.version() == 0


def test_items_view_keeps_latest_row_per_item(store):
    t0, t1 = pd.Timestamp("2026-01-01", tz="UTC"), pd.Timestamp("2026-01-02", tz="UTC")
    store.append(
        {"items": pd.DataFrame({"benchmark": ["b"], "item_id": ["1"], "question": ["old"], "written_at": [t0]})}
    )
    store.append(
        {"items": pd.DataFrame({"benchmark": ["b"], "item_id": ["1"], "question": ["new"], "written_at": [t1]})}
    )
    assert store.query("select question from items").question.tolist() == ["new"]
    assert store.query("select count(*) n from items_all").n[0] == 2


def test_compaction_merges_files_and_old_snapshot_still_reads(store):
    for i in range(3):
        store.append({"responses": _responses(2, model=f"m{i}")})
    reader = store.connect()  # a reader holding the pre-compaction snapshot
    merged = store.compact()
    assert merged == {"responses": 3}
    assert len(store.manifest().files["responses"]) == 1
    assert store.query("select count(*) n from responses").n[0] == 6
    assert reader.execute("select count(*) from responses").fetchone()[0] == 6  # retired files kept for a grace period


def test_a_snapshot_is_opened_once_and_each_reader_gets_its_own_cursor(store, monkeypatch):
    """Reads of one manifest share its views (built once per process); a write is a new snapshot."""
    import store.store as store_module

    opened = []
    real = store_module._open_snapshot
    monkeypatch.setattr(store_module, "_open_snapshot", lambda paths: opened.append(paths) or real(paths))
    store.append({"responses": _responses(3)})
    with store.connect() as a, store.connect() as b:
        a.execute("CREATE TEMP TABLE mine AS SELECT 1 AS x")  # a reader's scratch space stays its own
        with pytest.raises(Exception, match="mine"):
            b.execute("SELECT * FROM mine")
        assert a.execute("SELECT count(*) FROM responses").fetchone()[0] == 3
        assert b.execute("SELECT count(*) FROM responses").fetchone()[0] == 3
    assert store.query("SELECT count(*) AS n FROM responses").n[0] == 3  # a closed cursor leaves the snapshot open
    assert len(opened) == 1
    store.append({"responses": _responses(2, model="m2")})
    assert store.query("SELECT count(*) AS n FROM responses").n[0] == 5
    assert len(opened) == 2


def test_empty_tables_read_through_a_cursor(store):
    """A table with no file yet is an empty table of its schema, visible to every cursor of the snapshot."""
    assert store.query("SELECT count(*) AS n FROM annotations").n[0] == 0
    store.append({"responses": _responses(1)})
    assert store.query("SELECT count(*) AS n FROM runs").n[0] == 0


def test_files_are_written_in_small_row_groups(store, monkeypatch):
    """Row groups small enough for DuckDB to skip most of a big file when one item is asked for."""
    import pyarrow.parquet as pq

    import store.store as store_module

    n = 3 * store_module.ROW_GROUP_ROWS["items"] + 5
    store.append({"items": pd.DataFrame({"benchmark": "b", "item_id": [f"q{i:06d}" for i in range(n)]})})
    meta = pq.ParquetFile(store.root / store.manifest().files["items"][0]).metadata
    assert [meta.row_group(k).num_rows for k in range(meta.num_row_groups)] == [16_384] * 3 + [5]
    monkeypatch.setattr(store_module, "DEFAULT_ROW_GROUP_ROWS", 10)  # every other table: the default size
    store.append({"responses": _responses(25)})
    meta = pq.ParquetFile(store.root / store.manifest().files["responses"][0]).metadata
    assert [meta.row_group(k).num_rows for k in range(meta.num_row_groups)] == [10, 10, 5]


def test_compaction_rewrites_a_lone_file_with_large_row_groups(store, monkeypatch):
    """A store written before the row-group size shrank gains it from ``compact``; a current one is left alone."""
    import pyarrow.parquet as pq

    import store.store as store_module

    store.append({"responses": _responses(25)})
    assert store.compact() == {}  # already in today's layout
    monkeypatch.setattr(store_module, "DEFAULT_ROW_GROUP_ROWS", 10)
    assert store.compact() == {"responses": 1}
    meta = pq.ParquetFile(store.root / store.manifest().files["responses"][0]).metadata
    assert [meta.row_group(k).num_rows for k in range(meta.num_row_groups)] == [10, 10, 5]
    assert store.query("select count(*) n from responses").n[0] == 25
    assert store.compact() == {}
