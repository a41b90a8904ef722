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


# -- retired files: kept outside the manifest for the grace period (store.retired) -----------------------------------
class Clock:
    """The time a store's writes see, stepped by the test (never slept)."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def _retired_store(tmp_path) -> tuple:
    """(a store on a test clock, the clock, the files a compaction retired, a reader of the snapshot before it)."""
    import store.store as store_module

    clock = Clock()
    s = store_module.Store(tmp_path / "store", clock=clock)
    for i in range(3):
        s.append({"responses": _responses(2, model=f"m{i}")})
    old = list(s.manifest().files["responses"])
    reader = s.connect()
    assert s.compact() == {"responses": 3}
    return s, clock, old, reader


def test_retired_files_are_recorded_outside_the_manifest(tmp_path):
    """The manifest every read parses lists the live files and their rows only; the retired ones are in a
    record of ``retired/`` that names them, with the time they were retired."""
    import json

    from store import retired
    from store.store import MANIFEST

    s, clock, old, _ = _retired_store(tmp_path)
    raw = json.loads((s.root / MANIFEST).read_text())
    assert "retired" not in raw
    assert set(raw["rows"]) == set(s.manifest().listed()) and not set(raw["rows"]) & set(old)
    [record] = retired.records(s.root)
    assert record.files == old and record.at == clock.now and record.problem is None


def test_retired_files_stay_for_the_grace_period_then_go(tmp_path):
    """A reader holding the snapshot before a compaction reads its files for ``RETIRED_GRACE_S``; the first
    write after that deletes them and their record (a test clock, not a sleep)."""
    from store import retired
    from store.store import RETIRED_GRACE_S

    s, clock, old, reader = _retired_store(tmp_path)
    clock.now += RETIRED_GRACE_S - 1
    s.append({"responses": _responses(1, model="late")})
    assert all((s.root / f).exists() for f in old)
    assert reader.execute("SELECT count(*) FROM responses").fetchone()[0] == 6  # the old snapshot, whole
    clock.now += 2
    s.append({"responses": _responses(1, model="later")})
    assert not any((s.root / f).exists() for f in old)
    assert retired.records(s.root) == []
    assert s.query("SELECT count(*) AS n FROM responses").n[0] == 8


def test_a_manifest_holding_its_retired_list_is_read_then_migrated_on_the_next_write(tmp_path):
    """A store written before ``retired/`` kept the list (and the retired files' rows) in its manifest:
    readers read it as it is; the next write moves each entry to a record with its own retirement time,
    so one long past its grace is deleted and one within it is kept until it falls due."""
    import json

    from store import retired
    from store.store import MANIFEST, RETIRED_GRACE_S

    s, clock, old, _ = _retired_store(tmp_path)
    for record in retired.records(s.root):
        (s.root / record.rel).unlink()
    raw = json.loads((s.root / MANIFEST).read_text())
    long_ago, lately = clock.now - RETIRED_GRACE_S - 10, clock.now - 10
    raw["retired"] = [[old[0], long_ago], [old[1], lately], [old[2], lately]]
    raw["rows"] |= {f: 2 for f in old}
    (s.root / MANIFEST).write_text(json.dumps(raw))
    assert s.query("SELECT count(*) AS n FROM responses").n[0] == 6
    assert [r for r, _ in s.manifest().retired] == old

    s.append({"responses": _responses(1, model="new")})
    raw = json.loads((s.root / MANIFEST).read_text())
    assert "retired" not in raw and not set(raw["rows"]) & set(old)
    assert not (s.root / old[0]).exists() and (s.root / old[1]).exists() and (s.root / old[2]).exists()
    assert [(r.at, r.files) for r in retired.records(s.root)] == [(lately, old[1:])]
    clock.now = lately + RETIRED_GRACE_S + 1
    s.append({"responses": _responses(1, model="newer")})
    assert not any((s.root / f).exists() for f in old) and retired.records(s.root) == []


def test_a_listed_file_in_a_record_is_never_deleted(tmp_path):
    """A record naming live files (only an edit puts them there; also in another letter case, for file
    systems that fold names) is collected without touching them."""
    from store import retired
    from store.store import RETIRED_GRACE_S

    s, clock, _, _ = _retired_store(tmp_path)
    live = s.manifest().listed()
    folded = f"responses/{live[0].split('/')[1].removesuffix('.parquet').upper()}.parquet"
    retired.write(s.root, [*live, folded], clock.now - RETIRED_GRACE_S - 1)
    s.append({"responses": _responses(1, model="new")})
    assert all((s.root / f).exists() for f in live)
    assert len(retired.records(s.root)) == 1  # the compaction's own record, not yet due
    assert s.query("SELECT count(*) AS n FROM responses").n[0] == 7


def test_a_failed_publish_changes_nothing(tmp_path, monkeypatch):
    """A write whose manifest cannot be saved publishes nothing and records nothing; its files are removed."""
    from store import retired
    from store.store import Manifest

    s, _, old, _ = _retired_store(tmp_path)
    s.append({"responses": _responses(2, model="m9")})
    before = (s.manifest(), sorted(p.name for p in s.root.rglob("*.parquet")), retired.records(s.root))

    def full(self, target):
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(Manifest, "save", full)
    with pytest.raises(OSError):
        s.compact()
    monkeypatch.undo()
    assert (s.manifest(), sorted(p.name for p in s.root.rglob("*.parquet")), retired.records(s.root)) == before
