"""A frame strip: one configuration's (or one re-run's) frames as thumbnails, each captioned where it is.

Every strip wraps onto rows at the page's width (a long one in smaller thumbnails), so the Inspector's
strips and a re-run's "Frames this run saw" read alike and none hides frames behind a scrollbar. Captions
are ``backend.present.series.frame_caption``'s: ``new #12 @0.38 s`` (a time stamp, never a duration).
"""

from __future__ import annotations

import streamlit as st

from backend.present.series import frame_caption

ROW = 16  # up to this many frames, large thumbnails numbered; a longer strip takes smaller ones, times only


def strip(files: list[str], indices: list[int], seconds: list[float] | None, added: set[int]) -> None:
    """Thumbnails ``files`` of frames ``indices`` (at ``seconds``; None: unknown), ``added`` marked new."""
    short = len(files) <= ROW
    times = seconds if seconds is not None else [None] * len(indices)
    captions = [frame_caption(i, t, i in added, number=short) for i, t in zip(indices, times, strict=True)]
    st.image(files, caption=captions, width=96 if short else 72)
