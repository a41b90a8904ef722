"""The package imports and writes a store where ``fcntl`` cannot be imported (Windows, which the README names).

A subprocess makes ``import fcntl`` fail (``sys.modules["fcntl"] = None``) before anything else is imported,
then imports the CLI and the store, ingests a small table through ``trajaudit ingest`` and reads it back.
The locks then come from filelock's portable backend and process identity from psutil, not from ``fcntl``
or ``/proc``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
sys.modules["fcntl"] = None  # `import fcntl` now raises ImportError, as on Windows
import backend.cli, store, store.store
from backend.cli import main
from backend.runtime import lifeline, worker_pool
assert "fcntl" not in [m for m, v in sys.modules.items() if v is not None]
assert main(["ingest", sys.argv[1], "--store", sys.argv[2]]) == 0
rows = store.store.Store(sys.argv[2]).query("select count(*) as n from responses")
import os
print(int(rows["n"][0]), lifeline.identity(os.getpid()) is not None)
"""


def test_import_and_write_a_store_without_fcntl(tmp_path: Path):
    table = tmp_path / "rows.jsonl"
    rows = [
        {"model": "m", "benchmark": "b", "item_id": f"q{i}", "config": c, "correct": i % 2}
        for i in range(5)
        for c in ("8f", "16f")
    ]
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(table), str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["10", "True"]
