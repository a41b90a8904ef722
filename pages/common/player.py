"""The Inspector's clip: the item's video with each configuration's frames marked on its timeline.

The video is drawn by ``st.video`` from the path the catalog resolved under the video root
(``backend.scope.inspector.locate_video``: a path that leaves the root is refused there), so the browser
fetches it from Streamlit's media endpoint by an id the server made (range requests, so seeking needs no
full download); no URL names a file or a folder. The media manager holds a file's bytes in the server's
memory while a session shows it, and ``st.video`` given a path reads the whole file on every run (0.22 s
for 64 MB on this machine, loaded), so the bytes of the last few videos are kept (``data.video_bytes``, the object the
manager holds too) and a video above ``MAX_BYTES`` is not played: the strips show its frames.

Under it, a small component (``assets/player/index.html``, Streamlit's component messages by hand, no
script library, nothing fetched) draws one row of marks per frame strip, on the video's time axis; a click
on a mark seeks the video to that frame (the component's frame is same-origin with the page and finds the
video in the container keyed ``VIDEO_KEY``). Seeking is the browser's business: no script rerun.
"""

from __future__ import annotations

import mimetypes
from functools import cache
from pathlib import Path

import streamlit as st
import streamlit.components.v1 as components

from backend.present.series import DROPPED
from pages.common import data

FOLDER = Path(__file__).resolve().parents[2] / "assets" / "player"
VIDEO_KEY = "player-video"
WIDTH_PX = 760  # the clip and its marks, one above the other on the same time scale's width
MAX_BYTES = 128 * 2**20  # held in the server's memory while shown (Streamlit's media file manager)


@cache
def _component():
    """Declare the component once per process."""
    return components.declare_component("trajaudit_player", path=str(FOLDER))


def player(path: Path, duration_s: float, marks: list[dict], rows: list[str], colours: dict[str, str]) -> bool:
    """Draw the video at ``path`` and its frame marks; False (nothing drawn) when it is over ``MAX_BYTES``.

    ``marks``: ``backend.present.series.frame_marks`` (``row, frame, x`` in seconds, ``status``) of the rows
    ``rows``; ``colours``: status -> colour. Dropped frames are not marks (the frames were not seen)."""
    stat = path.stat()
    size = stat.st_size
    if size > MAX_BYTES:
        st.caption(
            f"The video is {size / 2**20:,.0f} MB, over the player's {MAX_BYTES / 2**20:,.0f} MB: "
            "the strips below show the frames."
        )
        return False
    box = st.container(width=WIDTH_PX)
    with box.container(key=VIDEO_KEY):
        st.video(
            data.video_bytes(str(path), stat.st_mtime_ns, size),
            format=mimetypes.guess_type(path.name)[0] or "video/mp4",
        )
    seen = [{"row": m["row"], "frame": m["frame"], "t": m["x"], "status": m["status"]} for m in marks
            if m["status"] != DROPPED]  # fmt: skip
    with box:
        _component()(
            rows=rows,
            marks=seen,
            duration=float(duration_s),
            colours=colours,
            video=VIDEO_KEY,
            key="player-marks",
            default=None,
        )
    return True
