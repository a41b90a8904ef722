"""A frame strip: one configuration's (or one re-run's) frames as thumbnails, each captioned where it is.

Every strip wraps onto rows at the page's width (a long one in smaller thumbnails), so the Inspector's
strips and a re-run's "Frames this run saw" read alike and none hides frames behind a scrollbar. Captions
are ``backend.present.series.frame_caption``'s: ``new #12 @0.38 s`` (a time stamp, never a duration).
Thumbnails are made at the size they are shown: ``st.image`` given a larger one decodes, resizes and
re-encodes it on every run (most of an Inspector "next" on the server, ``benchmarks/inspector_next.py``).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from backend.present.series import frame_caption
from pages.common import data

ROW = 16  # up to this many frames, large thumbnails numbered; a longer strip takes smaller ones, times only
HEIGHTS = (data.THUMB_HEIGHT, 54)  # pixels: a short strip's thumbnails, a long one's


def strip(video: Path, indices: list[int], seconds: list[float] | None, added: set[int], cache_dir: str) -> None:
    """Thumbnails of frames ``indices`` of ``video`` (at ``seconds``; None: unknown), ``added`` marked new;
    thumbnails are cached under ``cache_dir``."""
    short = len(indices) <= ROW
    files = data.thumbs(str(video), video.stat().st_mtime_ns, tuple(indices), cache_dir, HEIGHTS[0 if short else 1])
    times = seconds if seconds is not None else [None] * len(indices)
    captions = [frame_caption(i, t, i in added, number=short) for i, t in zip(indices, times, strict=True)]
    st.image(files, caption=captions)
