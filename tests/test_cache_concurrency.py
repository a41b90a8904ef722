"""A reader process loading the cached matrix while another process appends 50 times never sees a torn
cache (``backend.scope.matrix_cache``: each version a folder written whole and renamed into place).

Every write keeps an invariant a torn read would break: item ``q<k>`` has a main response in every
(model, configuration) whose correctness is ``k % 2`` and confidence ``k / 1000``; each append adds one
such item, every other one also a re-run overlay row with the opposite answer (which the default matrix
must never show). A reader checks each matrix it loads against the invariant and that the items it sees
only grow.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from backend.scope import matrix as matrix_module
from backend.scope.loader import load_matrix
from store.store import Store

MODELS = ["a", "b"]
CONFIGS = ["8f", "16f"]
REPO = Path(__file__).resolve().parent.parent

READER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import numpy as np
    from backend.scope import matrix as matrix_module
    from backend.scope.loader import load_matrix
    from store.store import Store

    matrix_module.CACHE_MIN_CELLS = 0
    store, stop, progress = Store(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    seen, last = [], 0
    while not stop.exists() or not seen:
        m = load_matrix(store, ["a", "b"])
        k = np.array([int(i[1:]) for i in m.items["item_id"]])
        ok = (
            list(k) == list(range(len(k)))
            and m.correct.shape == (2, len(k), 2)
            and bool((m.correct == (k % 2)[None, :, None]).all())
            and bool(np.allclose(m.confidence, (k / 1000)[None, :, None]))
            and m.n_excluded == 0
            and len(k) >= last
        )
        last = len(k)
        seen.append({"items": len(k), "ok": ok})
        progress.write_text(str(len(seen)))
    print(json.dumps(seen))
    """
)


def _rows(k: int, origin: str = "ingest", flip: bool = False) -> pd.DataFrame:
    out = [
        {
            "model": m,
            "benchmark": "bench",
            "item_id": f"q{k:03d}",
            "config": c,
            "run": "main",
            "origin": origin,
            "correct": (k + flip) % 2,
            "confidence": k / 1000,
        }
        for m in MODELS
        for c in CONFIGS
    ]
    return pd.DataFrame(out).astype({"correct": "int8"})


def _loads(progress: Path) -> int | None:
    """The reader's count of loads so far; None while it is not written yet, or caught mid-write."""
    try:
        return int(progress.read_text())
    except (OSError, ValueError):
        return None


def _wait_for_a_load(progress: Path, reader: subprocess.Popen, timeout: float = 300.0) -> None:
    """Block until the reader reports one more load than when called (it reports after each one)."""
    deadline = time.monotonic() + timeout
    before = _loads(progress)
    while before is None and progress.exists() and time.monotonic() < deadline:
        before = _loads(progress)
    before = before or 0
    while reader.poll() is None and time.monotonic() < deadline:
        if (_loads(progress) or 0) > before:
            return
        time.sleep(0.05)


@pytest.mark.slow
def test_a_reader_process_never_sees_a_torn_cache_during_50_appends(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix_module, "CACHE_MIN_CELLS", 0)
    store = Store(tmp_path / "s")
    store.append({"responses": pd.concat([_rows(k) for k in range(20)], ignore_index=True)})
    load_matrix(store, MODELS)  # the first entry, so the reader patches from the start
    stop, progress = tmp_path / "stop", tmp_path / "progress"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store.root), str(stop), str(progress)],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for k in range(20, 70):
            if k % 10 == 0:  # let the reader load between writes, however loaded the machine is
                _wait_for_a_load(progress, reader)
            store.append({"responses": _rows(k)})
            if k % 2:
                store.append({"responses": _rows(k - 1, origin="rerun", flip=True).assign(run=f"job-{k}")})
    finally:
        stop.touch()
        out, err = reader.communicate(timeout=600)
    assert reader.returncode == 0, err
    seen = json.loads(out)
    assert len(seen) >= 5, seen  # the reader loaded while the writer wrote (one load per 10 appends at least)
    assert all(s["ok"] for s in seen), [s for s in seen if not s["ok"]]
    final = load_matrix(store, MODELS)
    assert final.n_items == 70
    cold = matrix_module.matched(matrix_module.scan(store, MODELS, None, CONFIGS, None, False, False))
    assert np.array_equal(final.correct, cold.correct)
    assert np.array_equal(final.confidence, cold.confidence)
