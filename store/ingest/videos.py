"""Which video an item belongs to, where the benchmark's own question ids say it.

Video-MME numbers its 900 videos ``001``..``900`` and their three questions ``NNN-1``..``NNN-3``, so
``001-2`` is a question on video ``001``. Ingest fills ``items.video`` from this where a file gives
no video, and the predictor groups its folds by the same rule on stores ingested before it existed:
one rule, so three questions on one video never land in different folds.
"""

from __future__ import annotations

import pandas as pd

VIDEOMME_QUESTION = r"^(\d{3})-[1-3]$"


def implied_videos(benchmark: pd.Series, item_id: pd.Series) -> pd.Series:
    """``NNN`` for a Video-MME item ``NNN-k``; missing for every other item."""
    ids = item_id if isinstance(item_id.dtype, pd.CategoricalDtype) else item_id.astype("str")
    found = ids.str.extract(VIDEOMME_QUESTION, expand=False).astype("str")
    return found.where(benchmark.astype("str").eq("videomme").to_numpy())
