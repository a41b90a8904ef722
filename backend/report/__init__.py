"""Shareable audit reports: one self-contained HTML file, paper-ready tables or the JSON they draw.

``build`` is the one entry point, used by ``trajaudit report`` and the Overview's "Download
report" button alike, so both produce the same bytes for the same store version, scope and seed
(``meta.generated_at`` aside, which ``SOURCE_DATE_EPOCH`` fixes).
"""

from __future__ import annotations

from pathlib import Path

from backend.contracts.report import ReportData
from backend.report import html, tables
from backend.report.data import report_data
from backend.scope.resolve import Resolved
from store.errors import UserError
from store.store import Store

FORMATS = ("html", "json", "latex", "markdown")
MIME = {"html": "text/html", "json": "application/json", "latex": "application/x-tex", "markdown": "text/markdown"}
SUFFIX = {"html": "html", "json": "json", "latex": "tex", "markdown": "md"}


def render(data: ReportData, fmt: str) -> bytes:
    """The report's data in one of ``FORMATS``, as UTF-8 bytes."""
    if fmt not in FORMATS:
        raise UserError(f"unknown report format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "html":
        text = html.render(data)
    elif fmt == "json":
        text = tables.as_json(data)
    elif fmt == "latex":
        text = tables.latex(tables.paper_tables(data))
    else:
        text = tables.markdown(tables.paper_tables(data))
    return text.encode("utf-8")


def build(
    store: Store,
    resolved: Resolved,
    fmt: str = "html",
    *,
    gallery_items: int = 24,
    seed: int = 0,
    bootstrap: int = 1000,
    video_root: str | Path | None = None,
) -> bytes:
    """The report of ``resolved`` on ``store`` in format ``fmt``."""
    if fmt not in FORMATS:
        raise UserError(f"unknown report format {fmt!r}: expected one of {', '.join(FORMATS)}")
    items = gallery_items if fmt in ("html", "json") else 0  # the tables show no gallery: skip decoding frames
    data = report_data(store, resolved, gallery_items=items, seed=seed, bootstrap=bootstrap, video_root=video_root)
    return render(data, fmt)
