"""One cache story (issue 36): the page caches are in one module, and everything a process keeps between calls is
listed, with why, in docs/architecture.md's "Process-wide state".

The scan finds, in ``backend/``, ``store/``, ``pages/`` and ``app.py``: functions under ``functools.cache`` or
``lru_cache``, names a function declares ``global``, and module-level names bound to an empty container (``{}``,
``[]``, ``set()``, ``dict()``...) or to an instance of a class of the same module (``_SNAPSHOTS = _Snapshots()``).
Each must be named, beside its file, on one line of that section. A constant (a filled tuple, a frozen mapping) is
not state; a lock guarding listed state is not listed apart.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHES = {"cache", "lru_cache"}
EMPTY = {"dict", "set", "list", "OrderedDict", "defaultdict", "WeakValueDictionary", "WeakKeyDictionary"}
STREAMLIT_CACHE = re.compile(r"\bst\.(cache_data|cache_resource|cache)\b")
PAGE_CACHES = "pages/common/data.py"


def sources() -> list[Path]:
    return [
        *(p for folder in ("backend", "store", "pages") for p in sorted((REPO / folder).rglob("*.py"))),
        REPO / "app.py",
    ]


def held(tree: ast.Module) -> set[str]:
    """The names of what ``tree``'s module keeps between calls (the rules in this module's docstring)."""
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in node.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) in CACHES:
                    out.add(node.name)
        elif isinstance(node, ast.Global):
            out.update(node.names)
    for node in tree.body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        v = node.value
        empty = (isinstance(v, ast.Dict) and not v.keys) or (isinstance(v, ast.List | ast.Set) and not v.elts)
        if isinstance(v, ast.Call) and not v.args and not v.keywords:
            called = v.func.attr if isinstance(v.func, ast.Attribute) else getattr(v.func, "id", None)
            empty = called in EMPTY or called in classes
        if empty:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update(t.id for t in targets if isinstance(t, ast.Name))
    return out


def listed_lines() -> list[str]:
    doc = (REPO / "docs" / "architecture.md").read_text()
    section = doc.split("## Process-wide state", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_the_scan_finds_what_the_docs_list_and_misses_constants():
    tree = ast.parse(
        "import functools\nclass _S: ...\n_A = {}\n_B: list[int] = []\n_C = _S()\nK = (1, 2)\nM = {'a': 1}\n"
        "@functools.lru_cache(maxsize=2)\ndef f(): ...\ndef g():\n    global _D\n"
    )
    assert held(tree) == {"_A", "_B", "_C", "f", "_D"}


def test_every_process_wide_state_is_listed_with_its_file():
    rows = listed_lines()
    missing = []
    for path in sources():
        rel = path.relative_to(REPO).as_posix()
        for name in sorted(held(ast.parse(path.read_text()))):
            if not any(f"`{rel}`" in row and f"`{name}`" in row for row in rows):
                missing.append(f"{rel} {name}")
    assert not missing, f"add a line to docs/architecture.md's 'Process-wide state' for: {missing}"


def test_page_caching_goes_through_one_module():
    elsewhere = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sources()
        if path.relative_to(REPO).as_posix() != PAGE_CACHES
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if STREAMLIT_CACHE.search(line)
    ]
    assert not elsewhere, f"st.cache_* outside {PAGE_CACHES}: {elsewhere}"
    assert STREAMLIT_CACHE.search((REPO / PAGE_CACHES).read_text())
