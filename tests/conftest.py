"""Shared fixtures: an empty store in a temp folder, a store seeded with one good ingest, the real-data
folder beside the project.

Also the torch-free tier's collection rule (tests/run.sh runs the suite a second time in a core-only
venv): without the worker extra, a test module whose import needs it, and a test marked ``worker``,
are skipped with the reason instead of erroring. Only a missing torch/transformers/... module skips:
any other import error still fails, and ``tests/test_extras.py`` checks that no core module needs
the extra, so a core regression cannot hide behind this rule.

And the fast tier's rule (docs/testing.md): a test that uses the tiny models (the ``tiny`` fixture,
``tests/tiny_models.py``: minutes of CPU to build) is marked ``slow``, wherever it is written.

And the parallel run's rules (pytest-xdist, ``-n auto --dist loadgroup`` in pyproject.toml): the
browser tests share one xdist group and the tiny-model tests another, so each session-scoped server,
browser and model set is built on one worker only, not once per worker (the ``cluster`` tests, which start
Ray clusters, join the browser group: run beside a browser test, their load made its pages time out); ``-n auto`` means one worker
per CPU this process may use (not psutil's physical cores, which is 1 on a 2-vCPU machine).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from backend.extras import WORKER_EXTRA, WORKER_INSTALL, missing_worker_extra

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"
NO_WORKER_EXTRA = missing_worker_extra()


class _NeedsWorkerExtra(pytest.Module):
    """A test module that is skipped, not failed, when importing it needs the missing worker extra."""

    def collect(self):
        try:
            self.obj  # noqa: B018 - imports the module
        except self.CollectError as exc:
            cause = exc.__cause__
            name = getattr(cause, "name", None) or ""
            if isinstance(cause, ModuleNotFoundError) and name.split(".")[0] in WORKER_EXTRA:
                pytest.skip(f"{self.path.name} needs the worker extra ({name} not installed: {WORKER_INSTALL})")
            raise
        return super().collect()


def pytest_pycollect_makemodule(module_path, parent):
    if NO_WORKER_EXTRA:
        return _NeedsWorkerExtra.from_parent(parent, path=module_path)
    return None


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: absent where it is not installed
def pytest_xdist_auto_num_workers(config) -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _join_group(item: pytest.Item, group: str) -> None:
    """Put ``item`` in an xdist group. pytest-xdist 3.8 schedules a group by the suffix ``@group`` on the
    node id, which it writes to ``item._nodeid``; pytest 9 reads the id from ``item._id`` instead, so the
    suffix is lost and the group's tests spread over the workers. Write the id pytest reads (on a worker
    of a ``--dist loadgroup`` run only); ``tests/test_parallel.py`` checks the group lands on one worker."""
    item.add_marker(pytest.mark.xdist_group(group))
    if getattr(item.config.option, "loadgroup", False) and "@" not in item.nodeid:
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(f"{item.nodeid}@{group}")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects and before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:  # building the tiny models takes minutes of CPU: every test using them is slow
        if "tiny" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
            _join_group(item, "tiny")
        elif item.get_closest_marker("browser") or item.get_closest_marker("cluster"):
            # a Ray cluster's raylets and actors load both CPUs: beside a browser test on the other worker,
            # a page then waited past its timeout; one worker runs them one after the other instead
            _join_group(item, "browser")
    if NO_WORKER_EXTRA:
        skip = pytest.mark.skip(reason=f"needs the worker extra ({', '.join(NO_WORKER_EXTRA)} not installed)")
        for item in items:
            if item.get_closest_marker("worker"):
                item.add_marker(skip)


@pytest.fixture
def store(tmp_path):
    """An empty store folder."""
    from store.store import Store

    return Store(tmp_path / "store")


@pytest.fixture
def realdata() -> Path:
    """../shared/realdata, or a skip saying why (the project never commits those files)."""
    if not REALDATA.is_dir():
        pytest.skip(f"real evaluation outputs not found at {REALDATA} (they live beside the project, not in it)")
    return REALDATA


@pytest.fixture(autouse=True)
def _restore_main_module():
    """Streamlit's AppTest replaces ``sys.modules["__main__"]`` with its script and leaves it there;
    a later ``multiprocessing`` spawn would then re-run that script in the child. Put it back."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


@pytest.fixture(scope="session")
def _demo_store_built(tmp_path_factory) -> Path:
    """The small demo store (60 items, with videos), built once per session (seconds of CPU each time)."""
    from backend.demo.synthetic import build_demo

    root = tmp_path_factory.mktemp("demo-built") / "store"
    build_demo(root, n_items=60, seed=0)
    return root


@pytest.fixture(scope="module")
def demo_store(_demo_store_built, tmp_path_factory) -> Path:
    """A private copy of the small demo store per test module that asks for it (a module may write to
    it: re-runs, annotations, caches), copied rather than rebuilt."""
    root = tmp_path_factory.mktemp("demo") / "store"
    shutil.copytree(_demo_store_built, root)
    return root


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory) -> Path:
    """One good ingest, built once: each test takes a copy (``seeded``), never this folder."""
    from tests.ingest_fixtures import ingest_quietly, write_table

    base = tmp_path_factory.mktemp("seeded")
    ingest_quietly(str(write_table(base / "good")), "--store", str(base / "store"))
    return base / "store"


@pytest.fixture
def seeded(seeded_template, tmp_path) -> Path:
    """A store holding one good ingest, so a refusal has something to leave untouched: a copy of the
    template (an ingest costs a few hundred ms, copying its four files about one)."""
    from tests.ingest_fixtures import private_copy

    return private_copy(seeded_template, tmp_path)


@pytest.fixture
def app_env(tmp_path, monkeypatch):
    """What the dashboard reads from the environment, isolated per test: thumbnail cache, video root."""
    monkeypatch.setenv("TRAJAUDIT_THUMB_CACHE", str(tmp_path / "thumbs"))
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
