"""decord and PyAV read the same frames: the decoder-independence that makes macOS and ARM Linux supported.

decord has wheels only for x86-64 Linux and 64-bit Windows; elsewhere PyAV reads every frame
(backend/videos/decode.py). Generated clips (H.264 with and without B-frames, MPEG-4 Part 2) with
texture and motion are read at the same indices, in a shuffled order with repeats and one past the
end, through both. Measured on x86-64 Linux with the pinned decord 0.6.0 and av 18.1.0:

- full size: bit-identical (max abs diff 0). Both wrap FFmpeg's decoders, which are exact for
  these codecs, and convert YUV 4:2:0 to RGB with libswscale's defaults; the bound is that 0.
- resized (``size=``): each scales with its own libswscale filter, so pixels differ at sharp
  edges: max abs diff 14-31, mean 1.0-1.2 of 255. Bounds: max 40, mean 2.
"""

from __future__ import annotations

import av
import numpy as np
import pytest

import backend.videos.decode as video

pytestmark = pytest.mark.skipif(
    not video.decord_installed(), reason="decord is not installed here (no wheel for this platform): PyAV only"
)

N, W, H, FPS = 40, 128, 96, 25
INDICES = [37, 0, 5, 5, 19, 39, 12, N + 20]  # shuffled, a repeat, one past the end
FULL_MAX, RESIZED_MAX, RESIZED_MEAN = 0, 40, 2.0
CODECS = {
    "h264": ("libx264", {"crf": "18", "g": "12"}),
    "h264-bframes": ("libx264", {"crf": "30", "bf": "2"}),
    "mpeg4": ("mpeg4", {}),
}


def _write(path, codec: str, options: dict[str, str]) -> None:
    """A clip with a colour gradient that drifts and a white disc that moves: texture and motion."""
    yy, xx = np.mgrid[0:H, 0:W]
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt, stream.options = W, H, "yuv420p", options
        for i in range(N):
            img = np.stack([(xx * 2 + 7 * i) % 256, yy * 2 % 256, (xx + yy + 13 * i) * 2 % 256], -1).astype(np.uint8)
            img[(yy - 5 - i) ** 2 + (xx - 10 - 2 * i) ** 2 < 36] = 255
            out.mux(stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")))
        out.mux(stream.encode())


@pytest.fixture(params=sorted(CODECS))
def clip(request, tmp_path):
    path = tmp_path / f"{request.param}.mp4"
    _write(path, *CODECS[request.param])
    return path


def _both(path, monkeypatch, size=None) -> tuple[np.ndarray, np.ndarray]:
    """The same indices through decord, then through PyAV (as on a machine without decord)."""
    assert video.decoder(path) == video.DECORD
    by_decord = video.decode_frames(path, INDICES, size=size)
    monkeypatch.setattr(video, "decord_installed", lambda: False)
    assert video.decoder(path) == video.PYAV
    by_pyav = video.decode_frames(path, INDICES, size=size)
    assert by_decord.shape == by_pyav.shape == (len(INDICES), *by_decord.shape[1:])
    assert by_decord.dtype == by_pyav.dtype == np.uint8
    return by_decord.astype(np.int16), by_pyav.astype(np.int16)


def test_full_size_frames_are_identical(clip, monkeypatch):
    by_decord, by_pyav = _both(clip, monkeypatch)
    assert by_decord.shape[1:] == (H, W, 3)
    diff = np.abs(by_decord - by_pyav)
    assert diff.max() <= FULL_MAX, f"max abs diff {diff.max()}, mean {diff.mean():.3f}"
    np.testing.assert_array_equal(by_pyav[-1], by_pyav[INDICES.index(39)])  # past the end: the last frame


def test_resized_frames_agree_within_the_filters(clip, monkeypatch):
    by_decord, by_pyav = _both(clip, monkeypatch, size=48)  # 64x48: a width decord 0.6.0 can resize to
    assert by_decord.shape[1:] == (48, 64, 3)
    diff = np.abs(by_decord - by_pyav)
    assert diff.max() <= RESIZED_MAX and diff.mean() <= RESIZED_MEAN, f"max {diff.max()}, mean {diff.mean():.3f}"


def test_probe_agrees(clip, monkeypatch):
    by_decord = video.probe(clip)
    monkeypatch.setattr(video, "decord_installed", lambda: False)
    assert video.probe(clip) == by_decord
    assert by_decord.n_frames == N and by_decord.fps == pytest.approx(FPS)
