"""How a number reads wherever it is shown: rates as percentage points with one decimal and the 95% interval
in brackets (``68.3 [61.7, 75.6]``), a dash (``MISSING``) where a value is not available (never 0, which
would read as a measurement, nor "None", "nan" or "n/a": one mark on every page, table, CLI line and report), p-values to three significant digits; and the names the metrics and flows go by.

One definition, so the page, its CLI twin and the report show the same string for the same number; what each
metric is called and means: ``backend.present.metrics``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from backend.contracts.views import Story

MISSING = "—"  # a value not available, wherever it is shown

# A flow between two configurations, as a reader says it (Sankey links, item lists).
KIND_TEXT = {
    "rescued": "rescued (wrong → correct)",
    "harmed": "harmed (correct → wrong)",
    "stable-correct": "stayed correct",
    "stable-wrong": "stayed wrong",
}
RATE_UNITS = "% of items; 95% paired-bootstrap interval in brackets"


def number(x: object, scale: float = 1.0) -> float | None:
    """``x * scale`` as a float (a JSON number), or None where ``x`` is not there (None, NaN, pandas' NA, not a
    number): a NaN rate is "not measurable", and shows as a dash, never as a number."""
    try:
        value = float(x)  # type: ignore[arg-type]  # anything float() takes; the rest is missing
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else scale * value


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` things, the noun agreeing with the number: ``1 item``, ``0 items``, ``1,024 items`` (``plural``:
    a noun that does not take an ``s``). Why: "1 items" on a report reads as a bug in everything beside it."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def pp(x: object) -> str:
    """A fraction as percentage points, one decimal: ``0.683`` -> ``68.3``; a dash when missing."""
    v = number(x)
    return MISSING if v is None else f"{100 * v:.1f}"


def pct(x: object, digits: int = 1) -> str:
    """A fraction as a percentage with its sign, for a number shown alone: ``68.3%``; a dash when missing."""
    v = number(x)
    return MISSING if v is None else f"{100 * v:.{digits}f}%"


def signed_pp(x: object) -> str:
    """A change in percentage points with its sign: ``+1.5``, ``-0.7`` (a net flow); a dash when missing."""
    v = number(x)
    return MISSING if v is None else f"{100 * v:+.1f}"


def bounds(ci: Sequence[object] | None) -> tuple[float, float] | None:
    """An interval's two ends, or None where it has none (bootstrap off, a metric without an interval)."""
    if ci is None or len(ci) != 2:
        return None
    lo, hi = number(ci[0]), number(ci[1])
    return None if lo is None or hi is None else (lo, hi)


def interval(x: object, ci: Sequence[object] | None) -> str:
    """A rate with its 95% interval, ``68.3 [61.7, 75.6]``; the value alone without an interval, a dash when
    the value is missing."""
    ends = bounds(ci)
    return pp(x) if number(x) is None or ends is None else f"{pp(x)} [{pp(ends[0])}, {pp(ends[1])}]"


def interval_ends(ci: Sequence[object] | None) -> str:
    """An interval alone, in a table column whose header names it: ``[61.7, 75.6]``; a dash without one."""
    ends = bounds(ci)
    return MISSING if ends is None else f"[{pp(ends[0])}, {pp(ends[1])}]"


def ci_text(ci: Sequence[object] | None) -> str | None:
    """An interval on its own line under a value (a metric card): ``95% CI 61.7–75.6``; None without one."""
    ends = bounds(ci)
    return None if ends is None else f"95% CI {pp(ends[0])}–{pp(ends[1])}"


def p_value(p: object) -> str:
    """A p-value to three significant digits (``0.0312``, ``1e-05``); a dash where there is no test (a pair
    without flips has none)."""
    v = number(p)
    return MISSING if v is None else f"{v:.3g}"


def story(step: Story | None) -> str:
    """The step a curve is flattest against its churn (``backend.analysis.story``) as one sentence:
    ``64f → 128f: net −1.0 pt = 20 rescued − 23 harmed (p = 0.757); 14.3% of items changed state``."""
    if step is None:
        return "No item changes state at any step of the grid: the curve hides no flip."
    net = signed_pp(step.net).replace("-", "−")
    churn = pct(step.churn)
    text = (
        f"{step.from_} → {step.to}: net {net} pt = {step.rescued:,} rescued − {step.harmed:,} harmed "
        f"(p = {p_value(step.mcnemar_p)}); {churn} of items changed state"
    )
    return text if step.eligible else f"{text} (no step changes {pct(step.min_churn, 0)} of the items)"


def story_why(step: Story) -> str:
    """Why the story step is the one shown, in counts: ``of its 43 flips, 40 cancel out and 3 show in the curve``
    (the pairs of a rescued and a harmed item cancel; the rest is the net change)."""
    flips, shown = step.rescued + step.harmed, abs(step.rescued - step.harmed)
    return (
        f"The step where the curve is flattest against its churn: of its {count(flips, 'flip')}, "
        f"{flips - shown:,} cancel out and {shown:,} {'shows' if shown == 1 else 'show'} in the curve"
    )
