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


PAGES = ("pages",)
# Imports of analysis functions the pages still make: table builders, which move to the presentation
# module that the pages, the CLI and the report share (issue 23, part 4).
KNOWN_ANALYSIS_CALLS = {
    "pages/overview.py": ["backend.analysis.compare.headline_table"],
    "pages/compare.py": ["backend.analysis.compare.headline_table"],
    "pages/flows.py": ["backend.analysis.flows.flow_table"],
    "pages/inspector.py": ["backend.analysis.ladders.ladders"],
}


def analysis_calls(path: Path) -> list[str]:
    """What ``path`` imports from ``backend.analysis`` beyond its vocabulary (constants and types: names
    in UPPER_CASE or CapWords): modules and functions, that is, computation a page would run itself."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("backend.analysis")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("backend.analysis"):
            out += [f"{node.module}.{a.name}" for a in node.names if not a.name[0].isupper()]
    return sorted(out)


def test_pages_draw_views_and_compute_nothing_from_the_analysis():
    """A page draws what a ``backend.views`` function returns (its CLI twin prints the same): it may name
    the analysis's vocabulary (``TAGS``, ``Target``) but calls none of its functions."""
    found = {str(p.relative_to(REPO)): analysis_calls(p) for p in files(*PAGES) + [REPO / "app.py"]}
    assert {p: calls for p, calls in found.items() if calls} == KNOWN_ANALYSIS_CALLS


def test_pages_reach_the_runtime_only_through_its_client():
    """Submitting, following and cancelling re-runs, and the models and workers behind them, go through
    ``backend.runtime.client``: no page imports the queue, the worker pool or the registry itself."""
    bad = {}
    for path in files(*PAGES) + [REPO / "app.py"]:
        hit = sorted(n for n in imports(path)
                     if n.startswith("backend.runtime.") and not n.startswith("backend.runtime.client"))  # fmt: skip
        if hit:
            bad[str(path.relative_to(REPO))] = hit
    assert bad == {}


def test_every_view_is_opened_by_one_loader():
    """The CLI and the pages build a ``View`` with ``open_view`` alone, and no page loads a matrix itself."""
    loaders = ("backend.scope.matrix.load_matrix", "backend.scope.matrix.narrow", "backend.scope.resolve.tag_subset")
    assert crossing(files(*PAGES) + [REPO / "app.py"], loaders) == {}
    calls = {str(p.relative_to(REPO)) for p in files("backend/cli", "pages") if "View(" in p.read_text()}
    assert calls == set(), calls  # a View is only ever built by backend.scope.view.open_view
