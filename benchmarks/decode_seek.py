"""PyAV's seeking decode against decoding from frame 0, on a long clip (issue 36).

``backend.videos.decode._decode_av`` seeks to the keyframe before each wanted frame (after one pass over the
packet headers, cached per file); the decode it replaced, kept as ``_decode_av_in_order`` for files whose
packets carry no timestamps, decodes every frame up to the last index asked. Both are timed on the same
indices (a 16-frame uniform sample, as a policy picks, and 4 frames late in the clip) and must return the
same frames. The clip (H.264, x264's default 250-frame keyframe interval) is generated once at ``--clip``
and reused. Usage: ``python benchmarks/decode_seek.py [--minutes 10] [--clip /tmp/trajaudit_long_10min.mp4]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import av
import numpy as np

from backend.videos import decode

W, H, FPS = 320, 240, 25


def generate(path: Path, n_frames: int) -> None:
    """A moving gradient with a moving disc: texture and motion, so frames differ and encode like video."""
    yy, xx = np.mgrid[0:H, 0:W]
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.options = {"preset": "veryfast", "crf": "23"}
        for i in range(n_frames):
            img = np.stack([(xx * 2 + 7 * i) % 256, yy * 2 % 256, (xx + yy + 13 * i) * 2 % 256], -1).astype(np.uint8)
            img[(yy - 120 - (i % 100)) ** 2 + (xx - 10 - (2 * i) % 300) ** 2 < 100] = 255
            out.mux(stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")))
        out.mux(stream.encode())


def timed(fn, *args) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clip", type=Path, default=Path("/tmp/trajaudit_long_10min.mp4"))
    args = parser.parse_args()
    n_frames = int(args.minutes * 60 * FPS)
    if not args.clip.is_file():
        print(f"generating {args.clip} ({n_frames} frames, {W}x{H}) ...", flush=True)
        generate(args.clip, n_frames)
    n_frames = decode.probe(args.clip).n_frames
    seconds, _ = timed(decode._av_index, decode._video_key(args.clip), args.clip)
    print(
        f"{args.clip}: {n_frames} frames, {args.clip.stat().st_size / 1e6:.1f} MB; packet index {seconds * 1000:.0f} ms"
    )
    cases = {
        "16 uniform": np.linspace(0, n_frames - 1, 16).round().astype(np.int64),
        "4 late": np.arange(n_frames - 4 * 97, n_frames, 97),
    }
    for name, idx in cases.items():
        seek_s, by_seek = timed(decode._decode_av, args.clip, idx, -1, -1)
        order_s, in_order = timed(decode._decode_av_in_order, args.clip, idx, -1, -1)
        same = np.array_equal(by_seek, in_order)
        print(
            f"{name:>10}: seek {seek_s:6.2f} s, from frame 0 {order_s:6.2f} s ({order_s / seek_s:4.1f}x), same frames: {same}"
        )
        if not same:
            raise SystemExit("the two decodes returned different frames")


if __name__ == "__main__":
    main()
