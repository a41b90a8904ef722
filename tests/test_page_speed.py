"""Guards on what a dashboard click costs on the server, and the clock that measures it.

The figures themselves live in ``benchmarks/dashboard_browser.py``; these tests keep the causes it
found from coming back and check the run clock it reads.
"""

from __future__ import annotations

import ast
import pstats
from pathlib import Path

from pages.common import runlog

REPO = Path(__file__).resolve().parents[1]


def test_alerts_use_material_icons_not_emoji():
    """An emoji icon makes Streamlit import its emoji table, a 0.5 s regular expression compiled on the
    first page that shows one (measured on Flows); material icons cost nothing."""
    offenders = []
    for path in [REPO / "app.py", *sorted((REPO / "pages").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "icon" and isinstance(node.value, ast.Constant):
                icon = node.value.value
                if isinstance(icon, str) and not icon.startswith(":material/"):
                    offenders.append(f"{path.relative_to(REPO)}:{node.value.lineno} {icon!r}")
    assert not offenders, offenders


def test_run_clock_is_off_by_default(monkeypatch, capsys):
    monkeypatch.delenv(runlog.ENV, raising=False)
    timer = runlog.start("overview")
    timer.stop()
    assert not timer.enabled and capsys.readouterr().err == ""


def test_run_clock_logs_each_run(monkeypatch, capsys):
    monkeypatch.setenv(runlog.ENV, "1")
    runlog.start("flows").stop()
    line = capsys.readouterr().err.strip()
    assert line.startswith("trajaudit run: flows ") and line.endswith(" s")
    assert float(line.split()[3]) >= 0


def test_run_clock_profiles_into_a_folder(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(runlog.ENV, str(tmp_path / "prof"))
    timer = runlog.start("items")
    sum(range(1000))
    timer.stop()
    (profile,) = (tmp_path / "prof").glob("*-items.prof")
    assert pstats.Stats(str(profile)).total_calls > 0
    assert "trajaudit run: items" in capsys.readouterr().err


def test_cache_key_of_a_view_tells_every_scope_apart():
    """Cached page results are keyed by ``view_key`` (cheap), which must separate what the deep hash did."""
    import dataclasses

    from backend.scope.filters import ItemFilter
    from backend.scope.resolve import Resolved, Scope
    from backend.scope.view import view_key

    base = Scope(benchmark="b", models=("m1", "m2"), grid=("8f", "16f"))
    resolved = Resolved(base, "default", {"4f": {"n_items": 2, "why": "coverage"}})
    view = ("/s", 3, resolved)
    variants = [
        ("/s", 4, resolved),
        ("/t", 3, resolved),
        ("/s", 3, Resolved(base, "given", resolved.grid_excluded)),
        ("/s", 3, Resolved(base, "default", {})),
        *(
            ("/s", 3, Resolved(dataclasses.replace(base, **change), "default", {}))
            for change in (
                {"grid": ("8f", "32f")},
                {"models": ("m2", "m1")},
                {"item_filter": ItemFilter(task_types=("x",))},
                {"tag": "confused"},
                {"beyond_noise": True},
                {"include_reruns": True},
            )
        ),
    ]
    keys = [view_key(*v) for v in [view, *variants]]
    assert len(set(keys)) == len(keys)
    assert view_key("/s", 3, Resolved(base, "default", {"4f": {"n_items": 2, "why": "x"}})) == keys[0]
