"""Too few items for a chart: the sidebar's minimum n (URL ``chartn``) and the notice drawn in a chart's place.

A rate on 2 items has a Wilson interval from 0% to 66%: drawn as a bar it reads as a finding. Every chart of
Audits, Policies, Compare and the "Why these items?" panel that rests on a count of items asks ``too_few``
first; its table (every number, with its n) stays on the page either way.
"""

from __future__ import annotations

import streamlit as st

from backend.present.text import count
from pages.common import state

KEY = "chartn"
DEFAULT = 10
LABEL = "Minimum items for a chart"


def control(sidebar) -> int:
    """The sidebar's number input (bound to the URL like the other sidebar widgets)."""
    return int(
        state.bind(
            sidebar.number_input,
            KEY,
            LABEL,
            default=DEFAULT,
            min_value=1,
            max_value=100_000,
            step=1,
            help="A chart that rests on fewer items (a rate's denominator, a group's size) is replaced by a notice; "
            "its table still lists every number.",
        )
    )


def minimum() -> int:
    """The sidebar's minimum (its default before the sidebar drew)."""
    value = state.get(KEY, DEFAULT)
    return value if isinstance(value, int) and value >= 1 else DEFAULT


def notice(n: int, what: str = "item") -> str:
    """The sentence drawn instead of a chart on ``n`` items."""
    return f"Only {count(n, what)}: too few for a chart (minimum {minimum():,}, set under the sidebar's Options)."


def too_few(n: int, what: str = "item", where=st) -> bool:
    """True, with the notice drawn in ``where``, when a chart would rest on fewer than the minimum ``n``."""
    if n >= minimum():
        return False
    where.info(notice(n, what), icon=":material/bar_chart_off:")
    return True
