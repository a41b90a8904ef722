"""PyAV's seeking decode returns the frames of decoding in order from frame 0, which it replaced.

Clips of test_decoders (H.264 with a 12-frame keyframe interval, H.264 with B-frames, MPEG-4 Part 2),
made longer here so that seeks skip whole groups of pictures. Needs no decord.
"""

from __future__ import annotations

import numpy as np
import pytest

import backend.videos.decode as video
from tests.test_decoders import CODECS, _write

N = 40  # test_decoders' clip length
INDICES = np.array([37, 0, 5, 5, 19, 39, 12, 13, 25, N + 20])  # shuffled, a repeat, neighbours, past the end


@pytest.fixture(params=sorted(CODECS))
def clip(request, tmp_path):
    path = tmp_path / f"{request.param}.mp4"
    _write(path, *CODECS[request.param])
    return path


@pytest.mark.parametrize("size", [None, (64, 48)])
def test_seeking_returns_the_frames_of_the_decode_from_frame_0(clip, monkeypatch, size):
    seeks = []
    index = video._av_index(video._video_key(clip), clip)
    assert index is not None and len(index.pts) == N
    width, height = size or (-1, -1)
    in_order = video._decode_av_in_order(clip, INDICES, width, height)
    monkeypatch.setattr(video, "_decode_av_in_order", lambda *a: pytest.fail("fell back to the decode in order"))
    real_open = video._open_av

    class Counting:
        """The container, with its seeks counted (its own attributes are read-only)."""

        def __init__(self, path):
            self.container = real_open(path)

        def __getattr__(self, name):
            return getattr(self.container, name)

        def seek(self, offset, **kwargs):
            seeks.append(offset)
            return self.container.seek(offset, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.container.__exit__(*exc)

    monkeypatch.setattr(video, "_open_av", Counting)
    by_seek = video._decode_av(clip, INDICES, width, height)
    np.testing.assert_array_equal(by_seek, in_order)
    np.testing.assert_array_equal(by_seek[-1], by_seek[INDICES.tolist().index(39)])  # past the end: the last frame
    # one seek per keyframe that starts a wanted frame's group of pictures: within a group it decodes on
    wanted_pts = index.pts[np.unique(np.minimum(INDICES, N - 1))]
    groups = index.keyframes[np.searchsorted(index.keyframes, wanted_pts, side="right") - 1]
    assert seeks == sorted(set(groups.tolist()))


def test_a_file_without_packet_timestamps_is_decoded_in_order(clip, monkeypatch):
    monkeypatch.setattr(video, "_av_index", lambda key, path: None)
    calls = []
    real = video._decode_av_in_order
    monkeypatch.setattr(video, "_decode_av_in_order", lambda *a: calls.append(a) or real(*a))
    assert video._decode_av(clip, INDICES, -1, -1).shape == (len(INDICES), 96, 128, 3)
    assert len(calls) == 1
