"""``trajaudit ingest DIR``: the result files a harness's output folder holds.

Harnesses write their per-item files deep in trees of their own: lmms-eval puts them under a
model folder named from the checkpoint path with ``/`` as ``__`` (``..__LLaVA-NeXT-Video-7B-Qwen2``
for ``../LLaVA-NeXT-Video-7B-Qwen2``), a dot folder that shell globs skip, so the walk enters
every folder, dot folders included. A file is taken when it is one the readers recognise:

* lmms-eval ``<stamp>_samples_<task>.jsonl`` (its ``<stamp>_results.json`` is read beside it, never
  ingested on its own), and the older ``<task>.json`` log;
* VLMEvalKit ``<model>_<dataset>.xlsx`` / ``.tsv`` (the ``_score`` file where both exist: the same
  predictions, with the harness's verdict); its by-products (``_acc``, ``_rating``, ``_auxmatch``) are not
  per-item predictions;
* the official Video-MME result JSON, scale-grid CSVs and generic long tables, as ``detect`` names them.

Everything else (accuracy summaries, logs, videos) is skipped and counted. Symbolic links are not followed,
so a link cannot lead the walk out of the folder or round in a loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from store.errors import UserError
from store.ingest import vlmevalkit

_BY_PRODUCTS = ("_acc", "_rating", "_auxmatch", "_tmp")


def expand(paths: list[Path], detect: Callable[[Path], str]) -> tuple[list[Path], list[Path]]:
    """(files to ingest, files skipped): each folder in ``paths`` replaced by the result files under
    it, in path order; files named directly are kept as they are (``detect`` judges them later)."""
    taken: list[Path] = []
    skipped: list[Path] = []
    for path in paths:
        if not path.is_dir():
            taken.append(path)
            continue
        found = sorted(Path(folder) / name for folder, _, names in os.walk(path, followlinks=False) for name in names)
        names = set(found)
        for f in found:
            if f.name.endswith("_results.json"):  # lmms-eval's summary: read with its samples file, not on its own
                continue
            (taken if _recognised(f, names, detect) else skipped).append(f)
    if not taken:
        raise UserError(f"no result files found in {', '.join(map(str, paths))} ({len(skipped)} other files skipped)")
    return taken, skipped


def _recognised(path: Path, siblings: set[Path], detect: Callable[[Path], str]) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".tsv"):
        parsed = vlmevalkit.parse_name(path.stem)
        if not parsed or path.stem.removesuffix("_score").endswith(_BY_PRODUCTS):
            return suffix == ".tsv" and _detects(path, detect, "table")
        return parsed["scored"] or path.with_name(f"{path.stem}_score{path.suffix}") not in siblings
    return _detects(path, detect)


def _detects(path: Path, detect: Callable[[Path], str], only: str | None = None) -> bool:
    try:
        fmt = detect(path)
    except UserError:
        return False
    return only is None or fmt == only
