"""The core install (no torch, no transformers) browses, and says in one line what inference needs.

Each check runs in a fresh interpreter where every import of the worker extra's packages fails, as on a machine
where only ``pip install trajaudit`` ran (the torch-free tier in tests/run.sh runs the whole suite in such an
environment as well; these checks run in both tiers).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from backend import extras

REPO = Path(__file__).resolve().parents[1]
# Every import of the worker extra fails, as where it is not installed: a finder ahead of the others says "no module".
# (Not ``sys.modules[name] = None``: scipy, which sklearn imports, looks ``torch`` up in ``sys.modules`` and fails on
# the None it finds, where on a torch-free machine it finds no entry.)
BLOCK = f"""import importlib.abc, sys
class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {extras.WORKER_EXTRA!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, _Absent())
"""
# The worker side: answering items needs torch, so these packages are allowed to (and do) import it.
INFERENCE_PACKAGES = ("backend.runtime.inference.", "backend.runtime.sweep.")


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + code, *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def _is_module(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _page_imports() -> list[str]:
    """The project modules the dashboard's entry point and page scripts import (scripts, not modules:
    running them needs Streamlit's runtime, which tests/test_app_smoke.py drives)."""
    names = set()
    for script in [REPO / "app.py", *sorted((REPO / "pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
    return sorted(n for n in names if _is_module(n))


@pytest.mark.slow
def test_every_core_module_imports_without_the_worker_extra():
    code = """
import importlib, json, pkgutil
import backend, pages.common, store
packages = (backend, store, pages.common)
names = [i.name for p in packages for i in pkgutil.walk_packages(p.__path__, p.__name__ + ".")]
failed = {}
for name in dict.fromkeys(names + json.loads(sys.argv[1])):
    try:
        importlib.import_module(name)
    except ImportError as exc:
        failed[name] = str(exc)
print(json.dumps(failed))
"""
    pages = _page_imports()
    assert "pages.common.rerun_panel" in pages and "backend.runtime.client" in pages
    out = _run(code, json.dumps(pages))
    assert out.returncode == 0, out.stderr[-2000:]
    failed = json.loads(out.stdout.strip().splitlines()[-1])
    core = {name: why for name, why in failed.items() if not name.startswith(INFERENCE_PACKAGES)}
    assert core == {}, f"core modules that need the worker extra: {core}"
    assert "backend.runtime.inference.hf" in failed, "the block did not take effect"


@pytest.mark.slow
def test_every_cli_command_registers_without_the_worker_extra():
    out = _run("from backend.cli import build_parser\nbuild_parser()\nprint('ok')")  # imports every command module
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--model", "m"],
        ["sweep", "--model", "m", "--benchmark", "b", "--grid", "8f"],
        ["models", "demo", "tiny"],
    ],
)
@pytest.mark.slow
def test_inference_commands_say_what_to_install(command, tmp_path):
    out = _run("from backend.cli import main\nsys.exit(main(sys.argv[1:]))", *command, "--store", str(tmp_path))
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-2000:]
    assert lines[0].startswith(f"trajaudit {command[0]}: error: ") and "needs the inference extra" in lines[0]
    assert lines[0].endswith(extras.WORKER_INSTALL) and "torch" in lines[0]
    assert not (tmp_path / "models").exists()  # nothing half-built


@pytest.mark.slow
def test_a_local_worker_says_what_to_install(tmp_path):
    """The re-run panel starts a local worker through this call: its UserError is the panel's one line
    ("Job N is queued, but no worker can be started here: ..."); the queued job waits for a worker elsewhere."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    code = """
from backend.runtime import registry
from backend.runtime.worker_pool import ensure_local_worker
registry.add(sys.argv[1], registry.ModelSpec("m", "qwen2_5_vl", sys.argv[2]))
ensure_local_worker(sys.argv[1], "m")
"""
    out = _run(code, str(tmp_path / "store"), str(ckpt))
    assert out.returncode == 1 and out.stderr.strip().splitlines()[-1] == (
        "store.errors.UserError: a local worker needs the inference extra "
        f"({', '.join(extras.WORKER_EXTRA)} not installed): {extras.WORKER_INSTALL}"
    )
    assert not list((tmp_path / "store").glob("logs/*.pid"))  # nothing was started


@pytest.mark.slow
def test_the_demo_store_builds_without_the_worker_extra(tmp_path):
    code = "from backend.cli import main\nsys.exit(main(sys.argv[1:]))"
    out = _run(code, "demo", "--store", str(tmp_path / "s"), "--items", "8", "--no-videos", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads(out.stdout)
    assert summary["items"] == 8 and summary["demo_model"] is None
    assert not (tmp_path / "s" / "models").exists()


@pytest.mark.slow
def test_the_rerun_panel_says_what_to_install(monkeypatch, tmp_path):
    """Without the extra the panel still queues the job (a worker elsewhere serves it) and says, in one
    line, why none starts here and what to install."""
    from backend.demo.synthetic import build_demo
    from store.queue import JobQueue
    from tests.test_rerun_ui import _click, _panel, _register_fake

    root = tmp_path / "store"
    build_demo(root, n_items=8, seed=0)
    monkeypatch.setattr(extras, "missing_worker_extra", lambda: ["torch"])
    _register_fake(root)
    at = _panel(root)
    next(n for n in at.number_input if n.label == "Frames").set_value(24).run()
    _click(at, "Run")
    (job,) = JobQueue(root).list_jobs(state="queued")
    (warning,) = [w.value for w in at.warning]
    assert warning.startswith(f"Job {job.id} is queued, but no worker can be started here: a local worker needs")
    assert "torch not installed" in warning and "pip install" in warning and "\n" not in warning
