"""Video access: confined path resolution, probing, decoding exactly the frames asked for, thumbnails.

decord reads a random batch of frames quickly (``VideoReader.get_batch`` seeks to each index), so
only the frames a policy picked are decoded. PyAV is the fallback when decord cannot open a file.
Known decord trap: ``get_batch`` can hang when a container over-reports its frame count, so indices
are clamped to the length decord reports before asking. Nothing here imports torch (the dashboard
uses this module and must stay torch-free).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from store.errors import UserError
from store.paths import exclusive_temp

VIDEO_ROOT_ENV = "TRAJAUDIT_VIDEO_ROOT"


@dataclass(frozen=True)
class VideoInfo:
    n_frames: int
    fps: float
    duration_s: float
    width: int
    height: int


def default_video_root(store_root: str | os.PathLike) -> Path:
    """``$TRAJAUDIT_VIDEO_ROOT`` when set, else ``<store>/videos`` (where the demo store writes)."""
    env = os.environ.get(VIDEO_ROOT_ENV)
    return Path(env).expanduser().resolve() if env else Path(store_root).expanduser().resolve() / "videos"


def resolve_video(video_root: str | os.PathLike, rel: str) -> Path:
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


def _decord_reader(path: Path, width: int = -1, height: int = -1):
    """A decord reader, or None when decord cannot open the file (the caller falls back to PyAV)."""
    try:
        import decord

        return decord.VideoReader(str(path), ctx=decord.cpu(0), width=width, height=height)
    except Exception:  # decord raises its own DECORDError or RuntimeError on unreadable containers
        return None


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
    return VideoInfo(int(n), fps, n / fps if fps > 0 else 0.0, int(width), int(height))


def _resized_dims(width: int, height: int, size: int) -> tuple[int, int]:
    """(width, height) with the shorter side equal to ``size``, aspect kept."""
    scale = size / min(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def decode_frames(path: str | os.PathLike, indices, size: int | None = None) -> np.ndarray:
    """Frames ``indices`` of a video as ``[K, H, W, 3]`` uint8 RGB, in the order asked.

    ``size`` resizes so the shorter side is ``size`` pixels (aspect kept). Indices past the end
    are clamped to the last frame.
    """
    path = Path(path)
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    width, height = (-1, -1) if size is None else _resized_dims(*_av_size(path), size)
    vr = _decord_reader(path, width, height)
    if vr is None:
        return _decode_av(path, np.maximum(idx, 0), width, height)
    if len(idx) == 0:
        h, w = vr[0].shape[:2]
        return np.empty((0, h, w, 3), dtype=np.uint8)
    batch = vr.get_batch(np.clip(idx, 0, len(vr) - 1).tolist())
    return _as_numpy(batch).astype(np.uint8, copy=False)


def _decode_av(path: Path, idx: np.ndarray, width: int, height: int) -> np.ndarray:
    """PyAV fallback: decode sequentially up to the last index asked, keeping the wanted frames.

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
            img = img.resize((max(1, round(img.width * height / img.height)), height), Image.BILINEAR)
            target = folder / f"{i}_h{height}.jpg"
            with exclusive_temp(target) as (handle, tmp):  # sessions are threads: each its own temporary file
                img.save(handle, format="JPEG", quality=85)
            os.replace(tmp, target)
    return out
