"""Cached backend calls of the score sections (``pages.common.scores``), in the style of ``pages.common.data``.

Each reads the view's score matrix (``View.scores``: every matched item, the score cut-off applied)
and returns what the CLI twin prints: ``trajaudit flows --scores --json`` and the ``binary`` block of
``metrics --json``.
"""

from __future__ import annotations

import streamlit as st

from backend import views
from backend.contracts.views import BinaryView, ScoreFlowsReport
from backend.scope.binary import binary_view
from backend.scope.view import View
from pages.common.data import HASH


def has_scores(v: View) -> bool:
    """Whether some matched cell of the view carries a score (the score sections show only then)."""
    return v.scores.has_scores


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=HASH)
def binary(v: View) -> BinaryView:
    """How the view's scored items enter accuracy (``metrics --json``'s ``binary``)."""
    return binary_view(v.scores, v.scope.score_cutoff)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH)
def score_flows(
    v: View, model: str, pair: tuple[str, str] | None, kind: str | None, tolerance: float
) -> ScoreFlowsReport:
    """``trajaudit flows --scores --tolerance E --json`` for the view (every flow item when ``kind`` is given)."""
    return views.score_flows_view(v, model, pair, kind, tolerance, limit=None)
