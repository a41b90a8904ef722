"""A confidence sparkline per table row that shows a missing value as a gap, not as an error cell.

Streamlit's ``LineChartColumn`` draws ",,,," with "cannot be interpreted as a numeric array" as
soon as one value of a row is missing (an open-ended cell has no confidence); this SVG breaks the
line at missing values and marks each known point, on a fixed 0..1 scale.
"""

from __future__ import annotations

import base64

import numpy as np

from backend.present.palette import ACCENT

WIDTH, HEIGHT, PAD = 120, 30, 3


def confidence_svg(values: list[float | None]) -> str | None:
    """A data URI of the row's confidences along the grid; None when the row has none at all."""
    y = np.array([np.nan if v is None else v for v in values], dtype=float)
    known = np.isfinite(y)
    if not known.any():
        return None
    xs = PAD + np.arange(len(y)) * (WIDTH - 2 * PAD) / max(len(y) - 1, 1)
    ys = HEIGHT - PAD - np.clip(np.nan_to_num(y), 0, 1) * (HEIGHT - 2 * PAD)
    runs = np.split(np.arange(len(y)), np.flatnonzero(np.diff(known.astype(int))) + 1)  # runs of known / missing
    lines = "".join(
        f'<polyline fill="none" stroke="{ACCENT}" stroke-width="1.5" points="{" ".join(f"{xs[i]:.1f},{ys[i]:.1f}" for i in run)}"/>'
        for run in runs
        if known[run[0]] and len(run) > 1
    )
    dots = "".join(
        f'<circle cx="{xs[i]:.1f}" cy="{ys[i]:.1f}" r="1.8" fill="{ACCENT}"/>' for i in np.flatnonzero(known)
    )
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}">{lines}{dots}</svg>'
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def column_width(row_height: int) -> int:
    """The column width that shows the whole sparkline: a cell scales its image to the row's height."""
    return int((row_height - 8) * WIDTH / HEIGHT) + 24
