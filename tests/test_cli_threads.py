"""No thread a CLI command starts outlives it: the cache entries it writes in the background are finished
before ``main`` returns (``backend.cli._settle``), and the process then exits at once.

A subprocess builds a store, runs ``trajaudit metrics`` cold (the coverage entry is written by a thread of its
own), appends a repeat and runs it again (the entry is patched, published in the background and the old version
pruned in another thread), then lists the threads still alive after each ``main`` returned. Each background
write is made to last half a second, as a large store's does, so a command that did not wait would leave it
running.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = """
import json, sys, threading, time
from backend.cli import main
from backend.scope import cache_folder
from store.store import Store
from tests.matrix_fixtures import item_rows, response_rows

publish = cache_folder._publish
def slow_publish(*args, **kwargs):  # a background write that lasts: a large store's entry
    time.sleep(0.5)
    return publish(*args, **kwargs)
cache_folder._publish = slow_publish

store = Store(sys.argv[1])
store.append({"responses": response_rows({"a": {"8f": [1, 0, 1], "16f": [0, 1, 1]}}), "items": item_rows(3)})
alive = []
for k in range(3):
    assert main(["metrics", "--store", sys.argv[1], "--models", "a", "--json"]) == 0
    alive.append([t.name for t in threading.enumerate() if t is not threading.main_thread()])
    store.append({"responses": response_rows({"a": {"8f": [k % 2, 1, 0]}}, run=f"r{k}")})  # a repeat run: patched
entries = sorted(p.name for p in (store.root / ".cache").iterdir())
print(json.dumps({"alive": alive, "entries": entries}), file=sys.stderr)
"""


def test_a_cli_command_leaves_no_thread_running(tmp_path: Path):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["alive"] == [[], [], []]
    assert any(name.startswith("available") for name in report["entries"]), report["entries"]
    assert time.monotonic() - started < 120
