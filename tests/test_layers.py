"""The layers point one way (docs/architecture.md): checked on the source, so a new import that crosses
a layer fails here rather than in review.

The import graph is read from every ``import`` statement (module level, inside functions and under
``TYPE_CHECKING`` alike: a type-only arrow is still an arrow) and folded into *units*: ``store/``, ``pages/``,
``app.py``, and each folder or top-level module of ``backend/``. ``DIAGRAM`` is docs/architecture.md's
diagram as data; the tests assert that the unit graph is exactly that (no arrow the diagram lacks, no
arrow it draws that the code does not use) and acyclic, that no two modules import each other, and the
rules a folder graph cannot say (analysis reads no store, pages reach the runtime through its client).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("store", "backend", "pages")

# unit -> the units it imports. Bottom to top: store < contracts (the store's records are contracts), extras, export (leaves) < videos < scope
# (matrix, tags, selection, repeats) < analysis | runtime < views, present < report, cli, pages. ``runtime`` sits
# beside ``analysis``: neither imports the other.
DIAGRAM: dict[str, set[str]] = {
    "store": set(),
    "backend.contracts": {"store"},
    "backend.extras": {"store"},
    "backend.export": set(),
    "backend.videos": {"store", "backend.contracts", "backend.extras"},
    "backend.scope": {"store", "backend.contracts", "backend.export", "backend.videos"},
    "backend.analysis": {"store", "backend.contracts", "backend.scope"},
    "backend.runtime": {"store", "backend.contracts", "backend.extras", "backend.videos"},
    "backend.views": {
        "store", "backend.contracts", "backend.videos", "backend.scope", "backend.analysis", "backend.runtime",
    },
    "backend.serverconfig": {"store", "backend.videos"},
    "backend.demo": {"store", "backend.contracts", "backend.extras", "backend.runtime"},
    "backend.present": {"backend.contracts", "backend.analysis"},
    "backend.report": {
        "store", "backend.contracts", "backend.videos", "backend.scope", "backend.analysis", "backend.views",
        "backend.present",
    },
    "backend.cli": {
        "store", "backend.contracts", "backend.extras", "backend.export", "backend.videos", "backend.scope",
        "backend.analysis", "backend.runtime", "backend.views", "backend.present", "backend.report", "backend.demo",
    },
    "pages": {
        "store", "backend.contracts", "backend.export", "backend.videos", "backend.scope", "backend.runtime", "backend.views",
        "backend.present", "backend.report", "backend.demo", "backend.serverconfig",
    },
    "app": {"pages"},
}  # fmt: skip
# The one runtime module pages may import (submit, progress, cancel): everything else of the runtime is the
# worker's. Pages reach analyses only through backend/views.py.
RUNTIME_CLIENT = "backend.runtime.client"
# What a store query needs; analysis takes the data a scope loader read (backend.scope.matrix, .repeats, ...).
STORE_ACCESS = ("store.store", "store.queue", "store.registry", "store.paths", "duckdb")


def sources() -> list[Path]:
    found = [p for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))] + [REPO / "app.py"]
    assert len(found) > 100, "the tree was not found"
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sources()}


@cache
def imports(name: str) -> frozenset[str]:
    """The project modules ``name`` imports (``from a import b`` counts as ``a.b`` where that is a module, else ``a``;
    relative imports resolved)."""
    path = modules()[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules()]
            found.update(subs if len(subs) == len(node.names) else [base, *subs])
    return frozenset(m for m in found if m in modules() and m != name and m not in ROOTS)


def unit(name: str) -> str:
    """``store``, ``pages``, ``app``, or ``backend.<folder or module>``."""
    parts = name.split(".")
    return parts[0] if parts[0] != "backend" else ".".join(parts[:2])


def unit_graph() -> dict[str, dict[str, list[str]]]:
    """unit -> imported unit -> the module arrows behind it (``a -> b``)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for name in modules():
        for target in sorted(imports(name)):
            a, b = unit(name), unit(target)
            if a != b:
                graph.setdefault(a, {}).setdefault(b, []).append(f"{name} -> {target}")
    return graph


def test_every_unit_is_in_the_diagram():
    assert {unit(name) for name in modules()} - {"backend"} == set(DIAGRAM)


def test_the_unit_graph_draws_no_arrow_the_diagram_lacks():
    extra = {
        f"{a} -> {b}": arrows[:3]
        for a, targets in unit_graph().items()
        for b, arrows in targets.items()
        if b not in DIAGRAM.get(a, set()) and a != "pages"
    }
    assert extra == {}


def test_pages_import_only_what_the_diagram_gives_them():
    """Pages draw what ``backend.views`` returns (no analysis of their own) and reach the runtime only through
    its client (submit, progress, cancel)."""
    graph = unit_graph()
    extra = {
        b: arrows[:3]
        for b, arrows in graph.get("pages", {}).items()
        if b not in DIAGRAM["pages"] and b != "backend.analysis"  # its vocabulary only: the next test
    }
    runtime = [
        arrow for arrow in graph.get("pages", {}).get("backend.runtime", []) if arrow.split()[-1] != RUNTIME_CLIENT
    ]
    assert (extra, runtime) == ({}, [])


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
    the analysis's vocabulary (``TAGS``, ``Target``, ``FLOW_KINDS``) but calls none of its functions."""
    found = {n: analysis_calls(modules()[n]) for n in modules() if unit(n) in ("pages", "app")}
    assert {n: calls for n, calls in found.items() if calls} == {}


def test_every_arrow_of_the_diagram_is_used():
    graph = unit_graph()
    unused = {f"{a} -> {b}" for a, targets in DIAGRAM.items() for b in targets if b not in graph.get(a, {})}
    assert unused == set()


def test_the_diagram_is_acyclic():
    try:
        TopologicalSorter(DIAGRAM).prepare()
    except CycleError as exc:
        pytest.fail(f"the diagram has a cycle: {' -> '.join(exc.args[1])}")


def test_no_two_modules_import_each_other():
    """Module-level cycles (``hf`` <-> ``pruned`` was one); a package's ``__init__`` re-exporting its own
    submodules is not counted."""
    graph = {
        name: {t for t in imports(name) if modules()[t].name != "__init__.py"}
        for name, path in modules().items()
        if path.name != "__init__.py"
    }
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_analysis_reads_no_store():
    """Analyses are pure functions of a matrix, a scope and the data a scope loader read: no store, queue,
    registry or DuckDB import, no scope loader called, no ``.query``/``.connect`` call."""
    bad: dict[str, list[str]] = {}
    for name, path in modules().items():
        if unit(name) != "backend.analysis":
            continue
        tree = ast.parse(path.read_text())
        hits = [m for m in imports(name) if m.startswith(STORE_ACCESS)]
        hits += [
            f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("backend.scope")
            for alias in node.names
            if alias.name.startswith("load")
        ]
        hits += [
            f".{node.func.attr}()"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("query", "connect")
        ]
        if hits:
            bad[name] = sorted(hits)
    assert bad == {}


def test_only_the_runtime_uses_the_job_queue():
    users = sorted(n for n in modules() if "store.queue" in imports(n) and unit(n) not in ("backend.runtime", "store"))
    assert users == []


def test_the_cli_is_imported_by_no_one_but_itself():
    users = sorted(
        n for n in modules() if unit(n) != "backend.cli" and any(unit(t) == "backend.cli" for t in imports(n))
    )
    assert users == []


def test_backend_never_imports_pages():
    users = sorted(
        n for n in modules() if unit(n) not in ("pages", "app") and any(unit(t) == "pages" for t in imports(n))
    )
    assert users == []


def imported_names(path: Path) -> set[str]:
    """Every ``module.name`` that ``path`` imports with ``from module import name`` (functions included)."""
    return {
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def page_modules() -> list[str]:
    return [n for n in modules() if unit(n) in ("pages", "app")]


def test_every_view_is_opened_by_one_loader():
    """The CLI and the pages build a ``View`` with ``open_view`` alone, and no page loads a matrix itself."""
    loaders = {"backend.scope.loader.load_matrix", "backend.scope.matrix.narrow", "backend.scope.resolve.tag_subset"}
    loading = {n: sorted(imported_names(modules()[n]) & loaders) for n in page_modules()}
    assert {n: hit for n, hit in loading.items() if hit} == {}
    builders = sorted(
        n for n in modules() if unit(n) in ("backend.cli", "pages") and "View(" in modules()[n].read_text()
    )
    assert builders == []  # a View is only ever built by backend.scope.view.open_view


def test_the_architecture_page_draws_the_same_diagram():
    """docs/architecture.md's mermaid drawing is ``DIAGRAM`` less the arrows to ``store`` and the contracts."""
    page = (REPO / "docs" / "architecture.md").read_text()
    block = page.split("```mermaid", 1)[1].split("```", 1)[0]
    node = r"(\w+)(?:\[[^\]]*\])?"
    drawn = {(a, b) for a, b in re.findall(rf"^\s*{node}\s*(?:--\s*\"[^\"]*\"\s*)?-->\s*{node}", block, flags=re.M)}
    as_unit = {"store": "store", "pages": "pages", "app": "app", "views": "backend.views"}
    drawn_units = {(as_unit.get(a, f"backend.{a}"), as_unit.get(b, f"backend.{b}")) for a, b in drawn}
    expected = {(a, b) for a, targets in DIAGRAM.items() for b in targets if b not in ("store", "backend.contracts")}
    assert drawn_units == expected
