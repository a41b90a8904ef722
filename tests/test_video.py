"""Decoding exact frames, thumbnails cached on disk, and confinement of video paths to the root."""

from __future__ import annotations

import os

import av
import numpy as np
import pytest

import backend.videos.decode as video
from store.errors import UserError

N_FRAMES, FPS, W, H = 24, 12, 64, 48


def _level(i: int) -> int:
    return 8 + 10 * i  # a flat grey level per frame survives H.264 within a few units


@pytest.fixture
def clip(tmp_path):
    """A 2 s H.264 clip whose frame i is a flat grey of level 8 + 10 i."""
    path = tmp_path / "videos" / "clip.mp4"
    path.parent.mkdir()
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.options = {"crf": "10", "g": "6"}
        for i in range(N_FRAMES):
            img = np.full((H, W, 3), _level(i), dtype=np.uint8)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")))
        out.mux(stream.encode())
    return path


def _levels(frames: np.ndarray) -> np.ndarray:
    return frames.reshape(len(frames), -1).mean(axis=1)


def test_probe(clip):
    info = video.probe(clip)
    assert (info.n_frames, info.width, info.height) == (N_FRAMES, W, H)
    assert info.fps == pytest.approx(FPS)
    assert info.duration_s == pytest.approx(N_FRAMES / FPS)


def test_decode_exact_indices_in_order(clip):
    idx = [17, 3, 0, 9]
    frames = video.decode_frames(clip, idx)
    assert frames.shape == (4, H, W, 3) and frames.dtype == np.uint8
    np.testing.assert_allclose(_levels(frames), [_level(i) for i in idx], atol=4)


def test_decode_clamps_past_the_end_and_resizes(clip):
    frames = video.decode_frames(clip, [N_FRAMES - 1, N_FRAMES + 50], size=24)
    assert frames.shape == (2, 24, 32, 3)  # shorter side 24, aspect 4:3 kept
    np.testing.assert_allclose(_levels(frames), [_level(N_FRAMES - 1)] * 2, atol=4)


def test_pyav_fallback_matches_decord(clip, monkeypatch):
    expected = video.decode_frames(clip, [2, 11, 40])
    monkeypatch.setattr(video, "_decord_reader", lambda *a, **k: None)
    frames = video.decode_frames(clip, [2, 11, 40])
    assert frames.shape == expected.shape
    np.testing.assert_allclose(_levels(frames), _levels(expected), atol=2)
    assert video.probe(clip).n_frames == N_FRAMES


def test_thumbnails_are_cached(clip, tmp_path, monkeypatch):
    calls = []
    real = video.decode_frames
    monkeypatch.setattr(video, "decode_frames", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    cache = tmp_path / "thumbs"
    first = video.thumbnails(clip, [0, 12, 23], cache, height=24)
    assert all(p.is_file() and p.suffix == ".jpg" for p in first)
    from PIL import Image

    assert Image.open(first[0]).size == (32, 24)
    mtimes = [p.stat().st_mtime_ns for p in first]
    again = video.thumbnails(clip, [0, 12, 23], cache, height=24)
    assert again == first and [p.stat().st_mtime_ns for p in again] == mtimes
    assert calls == [[0, 12, 23]]  # the second call decoded nothing
    video.thumbnails(clip, [12, 5], cache, height=24)
    assert calls[-1] == [5]  # only the missing frame is decoded


def test_thumbnail_cache_follows_file_identity(clip, tmp_path):
    cache = tmp_path / "thumbs"
    before = video.thumbnails(clip, [1], cache)
    os.utime(clip, ns=(1, 1))  # same path, new mtime: a different video as far as the cache knows
    after = video.thumbnails(clip, [1], cache)
    assert before[0].parent != after[0].parent and after[0].is_file()


def test_resolve_video_inside_root(clip):
    root = clip.parent
    assert video.resolve_video(root, "clip.mp4") == clip.resolve()
    (root / "sub").mkdir()
    assert video.resolve_video(root, "sub/../clip.mp4") == clip.resolve()


@pytest.mark.parametrize("rel", ["../x.mp4", "/etc/passwd", "sub/../../clip.mp4", ""])
def test_resolve_video_refuses_escapes(clip, rel):
    (clip.parent / "sub").mkdir(exist_ok=True)
    with pytest.raises(UserError) as err:
        video.resolve_video(clip.parent, rel)
    if rel:
        assert rel in str(err.value)


def test_resolve_video_refuses_symlink_out_of_root(clip, tmp_path):
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(clip.read_bytes())
    (clip.parent / "link.mp4").symlink_to(outside)
    with pytest.raises(UserError, match="outside the video root"):
        video.resolve_video(clip.parent, "link.mp4")


def test_resolve_video_missing_file_names_it(clip):
    with pytest.raises(UserError, match="nope.mp4"):
        video.resolve_video(clip.parent, "nope.mp4")


def test_default_video_root(tmp_path, monkeypatch):
    monkeypatch.delenv(video.VIDEO_ROOT_ENV, raising=False)
    assert video.default_video_root(tmp_path) == tmp_path.resolve() / "videos"
    monkeypatch.setenv(video.VIDEO_ROOT_ENV, str(tmp_path / "elsewhere"))
    assert video.default_video_root(tmp_path) == (tmp_path / "elsewhere").resolve()


def test_video_module_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, backend.videos.decode, backend.runtime.sampling; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
