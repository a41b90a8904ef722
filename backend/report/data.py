"""Everything a shareable report shows, as one report object (``ReportData``; ``trajaudit report --format json``).

The HTML, LaTeX and Markdown renderers draw only from this object, so ``--format json`` is exactly
the data the file draws. The numbers come from the same functions the pages and their CLI twins
use (``backend.views``). Nothing here depends on
the clock except ``meta.generated_at``, which honours ``SOURCE_DATE_EPOCH`` (reproducible builds).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import numpy as np

from backend import views
from backend.analysis import predictor
from backend.contracts.base import Contract, to_json, unset
from backend.contracts.explain import ExplainReport
from backend.contracts.policies import CascadeSweep
from backend.contracts.report import PolicySection, ReportData, ReportMeta, ReportTaskTypes
from backend.contracts.views import FlowsSummary, OverviewNumbers
from backend.present.palette import model_colours
from backend.report.gallery import gallery
from backend.scope.matrix import available
from backend.scope.resolve import Resolved, command_line
from backend.scope.view import View, open_view
from backend.videos.decode import default_video_root
from store.errors import UserError
from store.store import Store

C = TypeVar("C", bound=Contract)
LIBRARIES = ("trajaudit", "numpy", "pandas", "duckdb", "plotly", "scipy", "pillow")


def versions() -> dict[str, str]:
    """Installed versions of trajaudit and the libraries its numbers depend on."""
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def generated_at() -> str:
    """Now in UTC (seconds), or ``$SOURCE_DATE_EPOCH`` when set, so a build can be byte-identical."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    try:
        now = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    except ValueError:
        raise UserError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970 (got {epoch!r})") from None
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _clean(value: Any) -> Any:
    """NaN -> None, NumPy scalars -> Python: the dict is JSON as it stands."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _part(report: Contract, cls: type[C]) -> C:
    """The fields of ``cls`` out of a wider ``report`` (the report states its scope once, at the top)."""
    return cls(**{name: getattr(report, name) for name in cls.__struct_fields__})


def policy_section(store: Store, resolved: Resolved, bootstrap: int, seed: int) -> PolicySection:
    """The focus model's cascade frontier with fixed budgets and the oracle, or why it is not available."""
    try:
        ladder = views.load_ladder(store, resolved)
        sweep = views.cascade_view(ladder, resolved, bootstrap=bootstrap, seed=seed)
    except UserError as exc:
        return PolicySection(available=False, why=str(exc))
    return PolicySection(
        available=True,
        model=resolved.scope.focus,
        reference=predictor.reference_rows(ladder),
        sweep=_part(sweep, CascadeSweep),  # cascade_view without a threshold sweeps
    )


def explain_section(view: View) -> ExplainReport | None:
    """The focus model's largest harmed flow between consecutive configurations, explained (None: nothing harmed)."""
    from backend.analysis.metrics import flow_mask
    from backend.analysis.target import Target

    matrix = view.matrix
    focus, grid = view.scope.focus, matrix.grid
    pairs = list(zip(grid, grid[1:], strict=False))
    harmed = [int(flow_mask(matrix, focus, a, b, "harmed").sum()) for a, b in pairs]
    if not pairs or max(harmed) == 0:
        return None
    a, b = pairs[int(np.argmax(harmed))]
    return views.explain_view(view, focus, Target("flow", (a, b, "harmed")), top=10)


def report_data(
    store: Store,
    resolved: Resolved,
    *,
    gallery_items: int = 24,
    seed: int = 0,
    bootstrap: int = 1000,
    video_root: str | Path | None = None,
) -> ReportData:
    """The report of ``resolved`` on ``store``: scope, headline numbers, flows, overlap, frontier, gallery."""
    if gallery_items < 0:
        raise UserError("--gallery must be >= 0")
    scope = resolved.scope
    view = open_view(store, resolved, include_answers=True)  # the gallery shows the answers
    matrix = view.matrix
    if matrix.n_items == 0:
        raise UserError(
            f"no matched item for this scope ({matrix.n_excluded} excluded): widen the filters or drop a model"
        )
    overview = views.overview(view, bootstrap=bootstrap, seed=seed)
    task_types = overview.task_types[scope.focus]  # the Overview's table: the focus model's, Wilson intervals
    flows = views.flows_view(view, scope.focus) if len(matrix.grid) > 1 else None  # a flow joins two configurations
    overlap = None
    if len(matrix.models) > 1:
        overlap = unset(views.compare_view(view, top=1, bootstrap=0).overlap)
    extra = ["--seed", str(seed), "--bootstrap", str(bootstrap)]
    root = Path(video_root) if video_root is not None else default_video_root(store.root)
    out = ReportData(
        meta=ReportMeta(
            store=str(store.root),
            store_version=store.version(),
            command=command_line(["report"], resolved, store, *extra, "--gallery", str(gallery_items)),
            metrics_command=command_line(["metrics"], resolved, store, *extra, "--json"),
            versions=versions(),
            generated_at=generated_at(),
        ),
        scope=resolved.header(matrix),
        colours={m: c for m, c in model_colours(available(store).models).items() if m in scope.models},
        overview=_part(overview, OverviewNumbers),  # the scope is stated once
        task_types=ReportTaskTypes(model=scope.focus, rows=task_types),
        flows=None if flows is None else _part(flows, FlowsSummary),
        overlap=overlap,
        policy=policy_section(store, resolved, bootstrap, seed),
        explain=explain_section(view),
        gallery=gallery(store, matrix, gallery_items, seed, root),
    )
    # validated once, as its JSON: NaN as null, NumPy scalars as Python (the parts typed as dicts hold them)
    return msgspec.convert(_clean(to_json(out)), ReportData)
