"""Process hygiene: a worker the dashboard started stops when the dashboard stops, or when left idle."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backend.demo.model import register_demo_model_isolated
from backend.runtime import lifeline
from backend.runtime.worker import Worker
from backend.runtime.worker_pool import LOCAL_IDLE_TIMEOUT_S, local_worker, stop_local_workers
from tests.rerun_fixtures import FakeAdapter, build_store

pytestmark = pytest.mark.worker  # every test here runs the inference stack

REPO = Path(__file__).resolve().parents[1]
ONLINE_TIMEOUT_S = 240  # the worker imports torch and loads the tiny model on a busy CPU
EXIT_WITHIN_S = 5.0
# Stands in for the dashboard: starts the worker through the backend function, then idles.
FAKE_DASHBOARD = (
    "import sys, time; from backend.runtime.worker_pool import ensure_local_worker; "
    "print(ensure_local_worker(sys.argv[1], 'tiny').pid, flush=True); time.sleep(600)"
)


def _wait(condition, timeout_s: float, what: str) -> float:
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout_s, f"{what} within {timeout_s:g} s"
        time.sleep(0.1)
    return time.monotonic() - start


def test_lifeline_calls_back_once_the_process_is_gone():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = []
    lifeline.watch(sleeper.pid, lambda: gone.append(True), poll_s=0.05)
    time.sleep(0.3)
    assert not gone and lifeline.identity(sleeper.pid) is not None
    sleeper.kill()
    sleeper.wait()
    _wait(lambda: gone, 2.0, "the callback ran")
    assert lifeline.identity(sleeper.pid) is None


def test_worker_stops_after_the_idle_timeout(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    root = build_store(tmp_path / "store")
    worker = Worker(root, "m", device="cpu", poll_s=0.05, adapter_factory=lambda *a: FakeAdapter())
    start = time.monotonic()
    assert worker.run(idle_timeout_s=0.3) == 0
    assert 0.3 <= time.monotonic() - start < 5


@pytest.mark.slow
def test_dashboard_started_worker_stops_when_the_dashboard_is_killed(tmp_path):
    root = build_store(tmp_path / "store")
    register_demo_model_isolated(root, "tiny")
    env = os.environ | {"PYTHONPATH": str(REPO)}
    dashboard = subprocess.Popen(
        [sys.executable, "-c", FAKE_DASHBOARD, str(root)], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        worker_pid = int(dashboard.stdout.readline())
        _wait(lambda: local_worker(root, "tiny").state == "online", ONLINE_TIMEOUT_S, "the worker came online")
        who = local_worker(root, "tiny").started_by
        assert who is not None and who.parent_pid == dashboard.pid and who.idle_timeout_s == LOCAL_IDLE_TIMEOUT_S
        assert who.user
        dashboard.kill()  # a crash: no clean-up code of the dashboard runs
        dashboard.wait()
        _wait(lambda: lifeline.identity(worker_pid) is None, EXIT_WITHIN_S, "the worker exited")
        log = (root / "logs" / "worker-tiny.log").read_text()
        assert f"process {dashboard.pid} that started this worker is gone" in log
    finally:
        dashboard.kill()
        stop_local_workers(root)
