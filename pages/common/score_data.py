"""The score sections' cached backend calls (``pages.common.scores``), by the names they use; the caches
themselves are in ``pages.common.data`` with every other page cache.

Each reads the view's score matrix (``View.scores``: every matched item, the score cut-off applied)
and returns what the CLI twin prints: ``trajaudit flows --scores --json`` and the ``binary`` block of
``metrics --json``.
"""

from __future__ import annotations

from backend.scope.view import View
from pages.common.data import score_binary as binary  # noqa: F401  (re-exported: score_data.binary)
from pages.common.data import score_flows  # noqa: F401  (re-exported)


def has_scores(v: View) -> bool:
    """Whether some matched cell of the view carries a score (the score sections show only then)."""
    return v.scores.has_scores
