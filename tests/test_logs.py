"""The programs log through stdlib ``logging`` (``backend.runtime.logs``): timestamped, levelled lines on stderr
from the worker, the dispatcher and the sweep; ``trajaudit --verbose`` adds the debug lines."""

from __future__ import annotations

import json
import logging
import re

import pytest

from backend.cli import main
from backend.contracts.base import to_json
from backend.contracts.catalog import parsed
from backend.runtime import logs, registry
from benchmarks.dispatch import FakeRay, build
from tests.matrix_fixtures import BASIC, build_store

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) (trajaudit\.[a-z]+): (.*)$")


@pytest.fixture(autouse=True)
def _info_level():
    """Each test starts from the default level and leaves it there (the tree is process-wide)."""
    logs.configure(verbose=False)
    yield
    logs.configure(verbose=False)


def lines(err: str) -> list[tuple[str, str, str]]:
    """(level, logger, message) of every log line in ``err``; a line that is not one fails."""
    found = [LINE.match(line) for line in err.splitlines() if line.strip()]
    assert all(found), err
    return [m.groups() for m in found if m]


def test_a_line_carries_its_time_and_level_and_verbose_adds_debug_lines(tmp_path, capsys):
    log = logs.get("sweep")
    log.debug("hidden")
    log.info("shown")
    assert lines(capsys.readouterr().err) == [("INFO", "trajaudit.sweep", "shown")]
    store = build_store(tmp_path / "store", BASIC)
    assert main(["--verbose", "info", "--store", str(store.root), "--json"]) == 0
    assert logging.getLogger(logs.ROOT).level == logging.DEBUG
    capsys.readouterr()
    log.debug("now shown")
    assert lines(capsys.readouterr().err) == [("DEBUG", "trajaudit.sweep", "now shown")]
    assert main(["info", "--store", str(store.root), "--json"]) == 0
    assert logging.getLogger(logs.ROOT).level == logging.INFO


def test_the_dispatcher_logs_progress_at_info_and_trouble_at_warning(tmp_path, capsys):
    """A dispatcher over stand-in actors (``benchmarks/dispatch.py``'s): a model it cannot serve (its checkpoint
    inside the store folder) is a warning, each started actor an info line, all under ``trajaudit.dispatch``."""
    from backend.runtime.dispatch import Dispatcher

    root = tmp_path / "store"
    root.mkdir()
    build(root, actors=1, jobs=2)
    inside = root / "ckpt-inside"
    inside.mkdir()
    (inside / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(root, registry.ModelSpec("inside", "qwen2_5_vl", str(inside)))
    capsys.readouterr()
    fake = FakeRay(actors=1, delay=0.0)
    try:
        stats = Dispatcher(root, poll_s=0.05, ray=fake).run(once=True)
    finally:
        fake.pool.shutdown()
    assert stats.done == 2, stats
    assert parsed("dispatch", json.loads(json.dumps(to_json(stats)))) == stats  # dispatch --json's contract
    out, err = capsys.readouterr()
    assert out == ""
    said = lines(err)
    assert {name for _, name, _ in said} == {"trajaudit.dispatch"}
    assert any(level == "WARNING" and text.startswith("not serving model 'inside'") for level, _, text in said), said
    assert any(level == "INFO" and text.startswith("started actor") for level, _, text in said), said
