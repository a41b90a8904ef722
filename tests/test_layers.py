"""The layers point one way (docs/architecture.md): checked on the source, so a new import that crosses
a layer fails here rather than in review."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, as dotted names (``from a import b`` counts as ``a`` and ``a.b``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def files(*folders: str) -> list[Path]:
    found = [p for folder in folders for p in sorted((REPO / folder).rglob("*.py"))]
    assert found, folders
    return found


def crossing(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for path in paths:
        hit = sorted(
            n for n in imports(path) if n.startswith(forbidden) and n.split(".")[0] in {"backend", "store", "pages"}
        )
        if hit:
            bad[str(path.relative_to(REPO))] = hit
    return bad


def test_store_imports_nothing_from_backend_or_pages():
    assert crossing(files("store"), ("backend", "pages")) == {}


def test_pages_import_neither_the_cli_nor_the_queue():
    assert crossing(files("pages") + [REPO / "app.py"], ("backend.cli", "store.queue")) == {}


def test_only_the_runtime_uses_the_job_queue():
    outside = [p for p in files("backend", "pages") if "runtime" not in p.relative_to(REPO).parts]
    assert crossing(outside, ("store.queue",)) == {}


def test_analysis_and_scope_never_submit_jobs_or_call_the_cli():
    submitters = ("backend.runtime.rerun", "backend.runtime.selection", "backend.runtime.worker", "backend.cli")
    assert crossing(files("backend/analysis", "backend/scope") + [REPO / "backend/views.py"], submitters) == {}


def test_backend_never_imports_pages():
    assert crossing(files("backend"), ("pages",)) == {}
