"""Readers never see half an ingest, and two concurrent ingests cannot both pass the conflict check.

One process ingests many batches (and finally replaces one) while this process reads counts and a
per-config aggregate in a loop; every snapshot must consist of whole batches.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from store.store import Store

BATCHES = 10
ITEMS_PER_BATCH = 40
CONFIGS = ["8f", "32f"]
ROWS_PER_BATCH = ITEMS_PER_BATCH * len(CONFIGS)

WRITER = """
import sys
from store.ingest import ingest_paths
store, flip, *files = sys.argv[1:]
for f in files:
    ingest_paths(store, [f])
ingest_paths(store, [flip], replace=True)
"""


def _batch(b: int, letter: str = "A") -> pd.DataFrame:
    items = [f"b{b:02d}-{i:03d}" for i in range(ITEMS_PER_BATCH)]
    return pd.DataFrame(
        {
            "model": "m",
            "benchmark": "bench",
            "item_id": [i for i in items for _ in CONFIGS],
            "config": CONFIGS * ITEMS_PER_BATCH,
            "prediction": letter,
            "target": "A",
        }
    )


@pytest.mark.slow
def test_readers_see_whole_batches_while_an_ingest_runs(tmp_path):
    files = []
    for b in range(BATCHES):
        files.append(tmp_path / f"batch{b}.csv")
        _batch(b).to_csv(files[-1], index=False)
    flip = tmp_path / "flip.csv"
    _batch(0, letter="B").to_csv(flip, index=False)  # replaces batch 0: same keys, now wrong
    store = Store(tmp_path / "store")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store.root), str(flip), *map(str, files)],
        cwd=Path(__file__).resolve().parents[1],
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + 300
    while True:
        done = writer.poll() is not None
        with store.connect() as con:  # one snapshot for both queries
            total = con.execute("SELECT count(*) FROM responses").fetchone()[0]
            per_config = con.execute("SELECT config, count(*), sum(correct) FROM responses GROUP BY config").fetchall()
        counts = {c: n for c, n, _ in per_config}
        correct = sum(int(k) for _, _, k in per_config)
        assert total % ROWS_PER_BATCH == 0, f"torn batch: {total} rows"
        assert sum(counts.values()) == total
        assert all(n == total // len(CONFIGS) for n in counts.values()), counts
        assert correct in (total, total - ROWS_PER_BATCH), "a replace must swap a whole batch"
        assert not seen or total >= seen[-1][0], "the row count went back"
        seen.append((total, correct))
        if done or time.monotonic() > deadline:
            break
    assert writer.wait(timeout=60) == 0, writer.stderr.read()
    assert seen[-1] == (BATCHES * ROWS_PER_BATCH, (BATCHES - 1) * ROWS_PER_BATCH)
    assert len({t for t, _ in seen}) >= 3, "the reader should have seen the store grow"


@pytest.mark.slow
def test_two_concurrent_conflicting_ingests_cannot_both_pass(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _batch(0, "A").to_csv(a, index=False)
    _batch(0, "B").to_csv(b, index=False)
    store = tmp_path / "store"
    cli = str(Path(sys.executable).parent / "trajaudit")
    procs = [
        subprocess.Popen(
            [cli, "ingest", str(p), "--store", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for p in (a, b)
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert sorted(rc for rc, _ in results) == [0, 2]
    loser = next(err for rc, err in results if rc == 2)
    assert f"{ROWS_PER_BATCH} row(s) change values the store holds" in loser
    assert Store(store).query("SELECT count(*) AS n FROM responses")["n"][0] == ROWS_PER_BATCH


READER = """
import sys
from store.store import Store
con = Store(sys.argv[1]).connect()
print(con.execute("SELECT count(*) FROM responses").fetchone()[0], flush=True)
sys.stdin.readline()
print(con.execute("SELECT count(*) FROM responses").fetchone()[0], flush=True)
"""


def _responses(n: int, model: str) -> pd.DataFrame:
    return pd.DataFrame(
        {"model": model, "benchmark": "b", "item_id": [str(i) for i in range(n)], "config": "8f", "correct": 1}
    )


@pytest.mark.slow
def test_a_reader_process_keeps_its_snapshot_through_compactions_in_the_grace_period(tmp_path):
    """A reader process holds the snapshot before a compaction while this process compacts and writes
    on (each write collecting retired files): within the grace period the reader still reads all of it."""
    from store.store import RETIRED_GRACE_S

    now = [1_800_000_000.0]
    store = Store(tmp_path / "store", clock=lambda: now[0])
    for k in range(3):
        store.append({"responses": _responses(5, f"m{k}")})
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store.root)],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdin is not None
    assert reader.stdout.readline().strip() == "15"
    store.compact()
    for k in range(20):
        now[0] += (RETIRED_GRACE_S - 1) / 20
        store.append({"responses": _responses(1, f"late{k}")})
    reader.stdin.write("\n")
    reader.stdin.flush()
    assert reader.stdout.readline().strip() == "15"
    assert reader.wait(timeout=60) == 0
    assert store.query("SELECT count(*) AS n FROM responses").n[0] == 35


KILLED = """
import os, sys
from store import retired
from store.store import Manifest, Store
if sys.argv[2] == "manifest":
    Manifest.save = lambda self, target: os._exit(9)
else:
    retired.write_all = lambda root, entries: os._exit(9)
Store(sys.argv[1]).compact()
"""


@pytest.mark.slow
@pytest.mark.parametrize("killed_at", ["manifest", "record"])
def test_a_writer_killed_while_it_publishes_loses_no_file_and_deletes_none_early(tmp_path, killed_at):
    """A compaction killed before its manifest swap, after its write-log entry, is committed: the next write
    publishes it and records the files it retired. One killed between its manifest and its record of retired
    files leaves those on disk unrecorded: a later write, past the grace period, deletes none of them
    (``check``: orphans; ``repair`` records them for a full grace period) and every listed file reads."""
    from store import health, retired
    from store.store import RETIRED_GRACE_S

    now = [1_800_000_000.0]
    store = Store(tmp_path / "store", clock=lambda: now[0])
    for k in range(3):
        store.append({"responses": _responses(5, f"m{k}")})
    before = store.manifest().listed()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED, str(store.root), killed_at], cwd=Path(__file__).resolve().parents[1]
    )
    assert killed.returncode == 9
    assert retired.records(store.root) == []
    after = store.manifest().listed()
    assert (after == before) == (killed_at == "manifest") and len(after) == (3 if killed_at == "manifest" else 1)
    now[0] += RETIRED_GRACE_S * 2
    store.append({"responses": _responses(1, "after")})
    assert all((store.root / f).exists() for f in before + after)
    assert store.query("SELECT count(*) AS n FROM responses").n[0] == 16
    report = health.check(store)
    orphans = set(report.orphans)
    if killed_at == "manifest":  # committed by its log entry, published by the next write with its record
        assert orphans == set() and {f for r in retired.records(store.root) for f in r.files or []} == set(before)
    else:  # the retired files, never recorded
        assert orphans == set(before) - set(after) and len(orphans) == 3
    assert report.sound and set(health.repair(store).retired_recorded) == orphans
    assert all((store.root / f).exists() for f in before + after)
    assert store.query("SELECT count(*) AS n FROM responses").n[0] == 16
