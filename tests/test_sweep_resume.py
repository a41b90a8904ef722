"""A sweep killed mid-way (SIGKILL, no chance to clean up) and resumed: no cell twice, none lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.store import Store
from tests.test_sweep import build_sweep_store
from tests.tiny_models import tiny  # noqa: F401  (a fixture)

REPO = Path(__file__).resolve().parents[1]
GRID = "text,4f,8f"


def slow_sweep(root: str, delay: float) -> None:
    """The CLI sweep with every answered cell slowed down (run as a subprocess by the test)."""
    from backend.cli import main
    from backend.runtime.sweep.shard import ShardRunner

    add = ShardRunner._add

    def slow_add(self, done):
        add(self, done)
        time.sleep(delay)

    ShardRunner._add = slow_add
    args = ["sweep", "--store", root, "--model", "llava_next_video", "--benchmark", "bench", "--grid", GRID]
    sys.exit(main([*args, "--batch-size", "3", "--no-progress"]))


def _rows(root: Path):
    return Store(root).query("SELECT item_id, config, run_id FROM responses")


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_killed_sweep_resumes_without_duplicates_or_gaps(tiny, tmp_path):
    root = build_sweep_store(tmp_path / "s", ["llava_next_video"], tiny)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = f"from tests.test_sweep_resume import slow_sweep; slow_sweep({str(root)!r}, 0.3)"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while _rows(root).empty:  # wait for the first batch to land, then kill without warning
            assert proc.poll() is None, f"the sweep ended before its first batch landed: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "no batch landed within 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    before = _rows(root)
    assert 3 <= len(before) < 19  # some batches landed, not all of them

    from backend.cli import main

    args = ["sweep", "--store", str(root), "--model", "llava_next_video", "--benchmark", "bench", "--grid", GRID]
    assert main([*args, "--no-progress"]) == 2  # refuses: cells are stored
    assert main([*args, "--resume", "--no-progress", "--json"]) == 1  # t-1's visual cells fail (no video)
    after = _rows(root)
    twice = Store(root).query(
        "SELECT item_id, config, count(*) AS n FROM responses GROUP BY item_id, config HAVING count(*) > 1"
    )
    assert twice.empty
    expected = {(f"v{v}-{q}", c) for v in (1, 2) for q in (1, 2, 3) for c in GRID.split(",")} | {("t-1", "text")}
    assert set(zip(after["item_id"], after["config"])) == expected  # none lost
    kept = before.merge(after, on=["item_id", "config"], suffixes=("_before", "_after"))
    assert len(kept) == len(before) and (kept["run_id_before"] == kept["run_id_after"]).all()  # first rows kept
    assert len(after) == 19
