"""Video access: confined path resolution, probing, decoding exactly the frames asked for, thumbnails.

Two decoders read the same frames, and :func:`decoder` says which one reads a given file:

- **decord** where it installs (x86-64 Linux, 64-bit Windows: decord 0.6.0, its last release, has
  wheels nowhere else). It reads a random batch of frames quickly (``VideoReader.get_batch`` seeks
  to each index), so only the frames a policy picked are decoded.
- **PyAV** everywhere else (macOS arm64, Linux aarch64), and for a file decord cannot open. It
  indexes the packets once per file (timestamps and keyframes, no decoding), then seeks to the
  keyframe before each wanted frame and decodes from there (``benchmarks/decode_seek.py`` measures
  it against decoding from frame 0). A file whose packets carry no timestamps is decoded in order.

Frame ``i`` is the ``i``-th frame in presentation order for both; on a constant-frame-rate file
they return the same frames, pixels within the codec's rounding (``tests/test_decoders.py``
measures it). Where they can differ:

- **a container that over-reports its length** (``nb_frames`` in the header past the real end):
  decord's ``len`` believes the header, so an index past the real end is clamped to a frame that
  may not exist (``get_batch`` can hang there: indices are clamped to decord's length first); PyAV
  counts the frames it actually decodes and gives the last real frame for any later index. A
  probe through PyAV trusts the header's count too when it has one.
- **variable frame rate**: both index frames by position, not by time, and both report the
  average rate, so a timestamp computed as ``index / fps`` is approximate on a VFR file whichever
  decoder read it.
- **resizing** (``size=``): each uses its own libswscale filter, so resized pixels differ more
  than full-size ones (the test bounds both).

The provenance of a re-run or sweep answer names the decoder that read its frames. Nothing here
imports torch (the dashboard uses this module and must stay torch-free).
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from backend.contracts.inspector import VideoProbe
from backend.extras import importable
from store.errors import UserError
from store.paths import exclusive_temp

VIDEO_ROOT_ENV = "TRAJAUDIT_VIDEO_ROOT"
DECORD, PYAV = "decord", "pyav"


VideoInfo = VideoProbe
"""What a video file says about itself: the Inspector's ``video.info`` as it is (one definition, the contract's)."""


def default_video_root(store_root: str | os.PathLike) -> Path:
    """``$TRAJAUDIT_VIDEO_ROOT`` when set, else ``<store>/videos`` (where the demo store writes)."""
    env = os.environ.get(VIDEO_ROOT_ENV)
    return Path(env).expanduser().resolve() if env else Path(store_root).expanduser().resolve() / "videos"


def resolve_video(video_root: str | os.PathLike, rel: str | None) -> Path:
    """The file ``rel`` names under ``video_root``, refusing anything that would leave the root.

    ``items.video`` comes from ingested files, so it is untrusted: absolute paths, ``..`` escapes
    and symlinks pointing out of the root are refused (the check is on the fully resolved path).
    """
    if not rel or not str(rel).strip():
        raise UserError("no video path given for this item")
    if "\x00" in str(rel):
        raise UserError(f"video path {rel!r} holds a NUL byte")
    if Path(rel).is_absolute():
        raise UserError(f"video path {rel!r} is absolute; items.video must be relative to the video root")
    root = Path(video_root).expanduser().resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise UserError(f"video path {rel!r} resolves to {path}, outside the video root {root}")
    if not path.is_file():
        raise UserError(f"video {rel!r} not found under the video root {root}")
    return path


def timestamps(indices: np.ndarray, fps: float) -> np.ndarray:
    """Frame times in seconds (``index / fps``), as Qwen3-VL's per-frame timestamps are computed."""
    if fps <= 0:
        raise UserError(f"cannot compute timestamps at {fps} fps")
    return np.asarray(indices, dtype=np.float64) / float(fps)


def _decord_reader(path: Path, width: int = -1, height: int = -1):
    """A decord reader, or None when decord is not installed or cannot open the file (PyAV reads it)."""
    if not decord_installed():
        return None
    try:
        import decord

        return decord.VideoReader(str(path), ctx=decord.cpu(0), width=width, height=height)
    except Exception:  # decord raises its own DECORDError or RuntimeError on unreadable containers
        return None


@functools.cache
def decord_installed() -> bool:
    """Whether decord is importable here (it has no wheel for macOS arm64 or Linux aarch64)."""
    return importable("decord")


def decoder(path: str | os.PathLike) -> str:
    """``"decord"`` or ``"pyav"``: the decoder :func:`decode_frames` reads this file with (for provenance)."""
    path = Path(path)
    return _decoder_of(_video_key(path), path) if decord_installed() else PYAV


@functools.lru_cache(maxsize=4096)
def _decoder_of(key: str, path: Path) -> str:
    """Cached per file identity (``key``): a sweep asks once per cell, decord opens each file once."""
    return DECORD if _decord_reader(path) is not None else PYAV


def _as_numpy(batch) -> np.ndarray:
    """decord's native NDArray (or whatever bridge another module set) as a NumPy array."""
    return np.asarray(batch.asnumpy() if hasattr(batch, "asnumpy") else batch)


def _open_av(path: Path):
    import av

    try:
        return av.open(str(path))
    except Exception as exc:  # av.error.* for every container/codec problem
        raise UserError(f"cannot open video {path}: {exc}") from exc


def _av_size(path: Path) -> tuple[int, int]:
    """(width, height) from the container header (no frame is decoded)."""
    with _open_av(path) as container:
        stream = container.streams.video[0]
        return stream.width, stream.height


def probe(path: str | os.PathLike) -> VideoInfo:
    """Frame count, frame rate, duration and size of a video."""
    path = Path(path)
    vr = _decord_reader(path)
    if vr is not None:
        n, fps = len(vr), float(vr.get_avg_fps())
        width, height = _av_size(path)
    else:
        with _open_av(path) as container:
            stream = container.streams.video[0]
            fps, width, height = float(stream.average_rate or 0), stream.width, stream.height
            n = stream.frames or sum(1 for _ in container.decode(stream))
    return VideoInfo(
        n_frames=int(n), fps=fps, duration_s=n / fps if fps > 0 else 0.0, width=int(width), height=int(height)
    )


def _resized_dims(width: int, height: int, size: int) -> tuple[int, int]:
    """(width, height) with the shorter side equal to ``size``, aspect kept."""
    scale = size / min(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def decode_frames(path: str | os.PathLike, indices, size: int | None = None) -> np.ndarray:
    """Frames ``indices`` of a video as ``[K, H, W, 3]`` uint8 RGB, in the order asked.

    ``size`` resizes so the shorter side is ``size`` pixels (aspect kept). Indices past the end
    are clamped to the last frame. Read by :func:`decoder`'s choice for the file; a resize decord
    0.6.0 cannot do (some target widths fail its buffer-size check, e.g. 48 or 72 pixels) is done
    by PyAV instead.
    """
    path = Path(path)
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    width, height = (-1, -1) if size is None else _resized_dims(*_av_size(path), size)
    vr = _decord_reader(path, width, height) if decoder(path) == DECORD else None
    if vr is not None:
        try:
            return _decode_decord(vr, idx)
        except Exception:  # decord's DECORDError; only a resize falls back (full-size errors are real)
            if size is None:
                raise
    return _decode_av(path, np.maximum(idx, 0), width, height)


def _decode_decord(vr, idx: np.ndarray) -> np.ndarray:
    """decord: one seek per index, clamped to decord's length first (``get_batch`` can hang past it)."""
    if len(idx) == 0:
        h, w = vr[0].shape[:2]
        return np.empty((0, h, w, 3), dtype=np.uint8)
    batch = vr.get_batch(np.clip(idx, 0, len(vr) - 1).tolist())
    return _as_numpy(batch).astype(np.uint8, copy=False)


@dataclass(frozen=True)
class _AvIndex:
    """A video stream's frames in presentation order, from its packets (demuxed, not decoded)."""

    pts: np.ndarray  # frame i's presentation timestamp, in the stream's time base
    keyframes: np.ndarray  # the keyframes' timestamps, ascending


@functools.lru_cache(maxsize=64)
def _av_index(key: str, path: Path) -> _AvIndex | None:
    """The frame index of ``path`` (cached per file identity ``key``), or None where packets cannot be
    trusted to be frames (a packet without a timestamp, two with the same one): those are decoded in order.

    Reading every packet's header is cheap next to decoding (about 50 ms for ten minutes of 320x240 H.264).
    """
    pts, keys = [], []
    with _open_av(path) as container:
        for packet in container.demux(video=0):
            if packet.size == 0:  # the demuxer's closing flush packet
                continue
            if packet.pts is None:
                return None
            pts.append(packet.pts)
            if packet.is_keyframe:
                keys.append(packet.pts)
    order = np.sort(np.asarray(pts, dtype=np.int64))
    if not keys or len(np.unique(order)) != len(order):
        return None
    return _AvIndex(order, np.sort(np.asarray(keys, dtype=np.int64)))


def _decode_av(path: Path, idx: np.ndarray, width: int, height: int) -> np.ndarray:
    """PyAV: each wanted frame decoded from the keyframe before it (seeking there), or by continuing
    when the decoder already stands between that keyframe and the frame.

    Frame ``i`` is the one with the ``i``-th smallest packet timestamp, which is the ``i``-th frame
    decoded in order (what :func:`_decode_av_in_order` counts). Indices past the real end get the last
    frame (the same clamping as the decord path). A file whose packets do not index its frames, or whose
    decoded timestamps do not meet the index, is decoded in order instead.
    """
    index = _av_index(_video_key(path), path)
    if index is None or len(index.pts) == 0:
        return _decode_av_in_order(path, idx, width, height)
    resize = {} if width < 0 else {"width": width, "height": height}
    clamped = np.minimum(idx, len(index.pts) - 1)
    wanted = np.unique(clamped)
    kept: dict[int, np.ndarray] = {}
    with _open_av(path) as container:
        stream = container.streams.video[0]
        frames, at = None, None  # the decoding under way, and the timestamp it last gave
        for i in wanted.tolist():
            target = int(index.pts[i])
            key = int(index.keyframes[max(0, int(np.searchsorted(index.keyframes, target, side="right")) - 1)])
            if frames is None or at is None or at < key:
                container.seek(key, stream=stream, backward=True, any_frame=False)
                frames, at = container.decode(stream), None
            for frame in frames:
                at = frame.pts
                if at is None or at >= target:
                    break
            if at != target:
                return _decode_av_in_order(path, idx, width, height)
            kept[i] = frame.to_ndarray(format="rgb24", **resize)
    if not kept:  # no index asked: the shape of a frame is still owed
        return _decode_av_in_order(path, idx, width, height)
    return np.stack([kept[i] for i in clamped.tolist()])


def _decode_av_in_order(path: Path, idx: np.ndarray, width: int, height: int) -> np.ndarray:
    """PyAV without an index: decode in order up to the last index asked, keeping the wanted frames.

    Indices past the real end get the last frame (the same clamping as the decord path).
    """
    resize = {} if width < 0 else {"width": width, "height": height}
    wanted = set(idx.tolist())
    last = max(wanted, default=0)
    kept: dict[int, np.ndarray] = {}
    latest = None
    with _open_av(path) as container:
        for i, frame in enumerate(container.decode(video=0)):
            latest = frame
            if i in wanted:
                kept[i] = frame.to_ndarray(format="rgb24", **resize)
            if i >= last:
                break
    if latest is None:
        raise UserError(f"video {path} has no decodable frames")
    final = latest.to_ndarray(format="rgb24", **resize)
    frames = [kept.get(i, final) for i in idx.tolist()]
    return np.stack(frames) if frames else np.empty((0, *final.shape), dtype=np.uint8)


def _video_key(path: Path) -> str:
    """Cache key of a video file's identity: resolved path, modification time and size."""
    st = path.stat()
    return hashlib.sha1(f"{path.resolve()}|{st.st_mtime_ns}|{st.st_size}".encode()).hexdigest()[:20]


def thumbnails(path: str | os.PathLike, indices, cache_dir: str | os.PathLike, height: int = 72) -> list[Path]:
    """One JPEG per frame index, ``height`` pixels tall, cached on disk.

    The cache is keyed by the file's identity (path, mtime, size) and the index, so a second call
    decodes nothing, and replacing the video invalidates its thumbnails. Only missing frames are
    decoded, in one batch.
    """
    path = Path(path)
    folder = Path(cache_dir) / _video_key(path)
    idx = [int(i) for i in np.asarray(indices, dtype=np.int64).reshape(-1)]
    out = [folder / f"{i}_h{height}.jpg" for i in idx]
    missing = sorted({i for i, p in zip(idx, out) if not p.exists()})
    if missing:
        folder.mkdir(parents=True, exist_ok=True)
        for i, frame in zip(missing, decode_frames(path, missing)):
            img = Image.fromarray(frame)
            img = img.resize((max(1, round(img.width * height / img.height)), height), Image.Resampling.BILINEAR)
            target = folder / f"{i}_h{height}.jpg"
            with exclusive_temp(target) as (handle, tmp):  # sessions are threads: each its own temporary file
                img.save(handle, format="JPEG", quality=85)
            os.replace(tmp, target)
    return out
