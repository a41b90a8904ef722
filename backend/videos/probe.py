"""Open each linked file once, in parallel, and record what it holds (or that it is missing or unreadable).

Probing is I/O and container parsing (decord and PyAV release the GIL while they read), so a thread
pool is enough; a file several items share is probed once. A file that cannot be opened, or holds no
frame, is ``unreadable``: the catalog says so instead of failing the whole link.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from backend.videos.decode import probe

COLUMNS = ["status", "n_frames", "fps", "duration_s", "size_bytes", "width", "height"]


def probe_one(path: Path) -> dict:
    """The catalog fields of one file."""
    if not path.is_file():
        return {"status": "missing"}
    size = path.stat().st_size
    try:
        info = probe(path)
    except Exception:  # decord/PyAV raise their own error types for every broken container
        return {"status": "unreadable", "size_bytes": size}
    if info.n_frames <= 0:
        return {"status": "unreadable", "size_bytes": size}
    return {
        "status": "linked",
        "n_frames": info.n_frames,
        "fps": info.fps,
        "duration_s": info.duration_s,
        "size_bytes": size,
        "width": info.width,
        "height": info.height,
    }


def probe_files(paths: list[Path], progress: bool = True, workers: int | None = None) -> pd.DataFrame:
    """One row per distinct path (indexed by it) with ``COLUMNS``; a progress bar on stderr."""
    unique = list(dict.fromkeys(paths))
    workers = workers or min(8, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        found = list(
            tqdm(
                pool.map(probe_one, unique),
                total=len(unique),
                desc="probing videos",
                unit="file",
                file=sys.stderr,
                disable=not progress or len(unique) < 2,
            )
        )
    return pd.DataFrame.from_records(found, index=pd.Index(unique, name="resolved"), columns=COLUMNS)
