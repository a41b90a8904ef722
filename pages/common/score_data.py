"""Cached backend calls of the score sections (``pages.common.scores``), in the style of ``pages.common.data``.

Each reads the scope's score matrix (``data.score_matrix``: every matched item, the score cut-off
applied) and returns what the CLI twin prints: ``trajaudit flows --scores --json`` and the ``binary``
block of ``metrics --json``.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from backend import views
from backend.contracts.views import BinaryView, ScoreFlowsReport
from backend.scope.binary import binary_view
from pages.common import data
from pages.common.data import SCOPE_HASH, Scope


def has_scores(scope: Scope) -> bool:
    """Whether some matched cell of the scope carries a score (the score sections show only then)."""
    return bool(np.isfinite(data.score_matrix(scope).score).any())


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=SCOPE_HASH)
def binary(scope: Scope) -> BinaryView:
    """How the scope's scored items enter accuracy (``metrics --json``'s ``binary``)."""
    return binary_view(data.score_matrix(scope), scope.resolved.scope.score_cutoff)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=SCOPE_HASH)
def score_flows(scope: Scope, model: str, pair: tuple[str, str] | None, kind: str | None,
                tolerance: float) -> ScoreFlowsReport:  # fmt: skip
    """``trajaudit flows --scores --tolerance E --json`` for the view (every flow item when ``kind`` is given)."""
    return views.score_flows_view(scope.resolved, data.score_matrix(scope), model, pair, kind, tolerance, limit=None)
