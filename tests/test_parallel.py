"""The parallel run's groups (tests/conftest.py): every browser test lands on one pytest-xdist worker, and
every tiny-model test on one, so their session-scoped server, browser and models are built once.

Run on a throwaway suite that loads this project's conftest hooks, with two workers; each test writes
which worker ran it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CONFTEST = "from tests.conftest import pytest_collection_modifyitems, pytest_xdist_auto_num_workers  # noqa: F401\n"
SUITE = """
import os
from pathlib import Path

import pytest

OUT = Path(__file__).parent / "ran"


@pytest.fixture
def tiny():
    return None


def _record(name):
    OUT.mkdir(exist_ok=True)
    (OUT / name).write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.parametrize("k", range(6))
@pytest.mark.browser
def test_browser(k):
    _record(f"browser-{k}")


@pytest.mark.parametrize("k", range(6))
def test_tiny(tiny, k):
    _record(f"tiny-{k}")


@pytest.mark.parametrize("k", range(12))
def test_plain(k):
    _record(f"plain-{k}")
"""


@pytest.mark.slow  # two pytest workers start: seconds of CPU
def test_browser_and_tiny_model_tests_each_run_on_one_worker(tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is a test extra (pip install -e '.[test]')")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    browser: b\n    slow: s\n")
    env = os.environ | {"PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = {p.name: p.read_text() for p in (tmp_path / "ran").iterdir()}
    assert len(ran) == 24
    workers = {kind: {w for name, w in ran.items() if name.startswith(kind)} for kind in ("browser", "tiny", "plain")}
    assert len(workers["browser"]) == 1 and len(workers["tiny"]) == 1, workers
    # the work is shared out: both workers ran tests (one may run both groups and the other every plain test:
    # 12 and 12, a balanced split the scheduler is free to choose)
    assert set().union(*workers.values()) == {"gw0", "gw1"}, workers
