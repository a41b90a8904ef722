"""``trajaudit videos link``: map a benchmark's items to files under the video root, probe them, store the catalog.

Everything is checked before anything is written: the dataset folder must lie under the video root
(paths are stored relative to it, and ``resolve_video`` refuses anything outside), every mapped path
must stay inside it, and a link whose ids match none of the items the store holds for the benchmark
is refused (it would cover nothing). A file that is a symlink loop, or a link that cannot be resolved,
is skipped and counted (``skipped_links``): its item stays unlinked. Then one write replaces the
benchmark's catalog.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from backend.contracts.base import built
from backend.contracts.store import VideoLinkReport
from backend.videos import catalog, layouts
from backend.videos.decode import VIDEO_ROOT_ENV, default_video_root
from backend.videos.probe import probe_files
from store.errors import UserError
from store.store import Store

EXAMPLES = 3


def confined_dataset(store: Store, dataset: str | os.PathLike) -> tuple[Path, Path]:
    """(video root, dataset folder), both resolved; UserError unless the folder is under the root."""
    root = default_video_root(store.root)
    folder = resolved(Path(dataset).expanduser())
    if folder is None:
        raise UserError(f"--dataset {dataset}: a symlink loop, or a link that cannot be resolved")
    if not folder.is_dir():
        raise UserError(f"--dataset {dataset}: not a folder")
    if not folder.is_relative_to(root):
        raise UserError(
            f"--dataset {folder} is outside the video root {root}; move or link it under the root, "
            f"or set {VIDEO_ROOT_ENV} to a folder that holds it"
        )
    return root, folder


def stored_items(store: Store, benchmark: str) -> pd.DataFrame:
    """The benchmark's items as the store holds them (the fields a template may name)."""
    return store.query("SELECT * FROM items WHERE benchmark = ? ORDER BY item_id", [benchmark])


def mapping(
    store: Store, benchmark: str, folder: Path, layout: str | None, template: str | None, paths: str | None
) -> tuple[str, pd.DataFrame]:
    """(layout name, frame of item_id and file relative to ``folder``) from the one source asked for."""
    if template is not None:
        return "template", layouts.from_template(stored_items(store, benchmark), template)
    if paths is not None:
        return "paths", layouts.from_paths(Path(paths).expanduser())
    layout = layout or (benchmark if benchmark in layouts.LAYOUTS else None)
    if layout is None:
        raise UserError(
            f"no published layout is known for benchmark {benchmark!r}; pass --layout "
            f"({'|'.join(layouts.LAYOUTS)}), --template or --paths"
        )
    return layout, layouts.LAYOUTS[layout](folder)


def resolved(path: Path) -> Path | None:
    """``path`` with every link followed; None for a symlink loop or a link that cannot be resolved (Python
    3.11 raises ``RuntimeError("Symlink loop ...")`` there, later versions ``OSError``)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def relative_paths(root: Path, folder: Path, files: pd.Series) -> pd.Series:
    """Each file as a path relative to the video root (None: a link that cannot be resolved, skipped);
    UserError for one that would leave the root."""
    absolute = files[files.map(lambda f: Path(f).is_absolute())]
    if len(absolute):
        raise UserError(f"video path {absolute.iloc[0]!r} is absolute; give paths relative to --dataset")
    found = files.map(lambda f: resolved(folder / f))
    outside = found[found.map(lambda p: p is not None and not p.is_relative_to(root))]
    if len(outside):
        raise UserError(
            f"video path {files[outside.index[0]]!r} resolves to {outside.iloc[0]}, outside the video root {root}"
        )
    return found.map(lambda p: None if p is None else str(p.relative_to(root)))


def choose_ids(mapped: pd.DataFrame, stored: pd.Series) -> pd.DataFrame:
    """Where a layout offers a second id scheme (``layouts.ALT_ID``), the one matching more stored items."""
    if layouts.ALT_ID not in mapped:
        return mapped
    alt = mapped.pop(layouts.ALT_ID)
    if alt.isin(stored).sum() > mapped["item_id"].isin(stored).sum():
        mapped["item_id"] = alt
    return mapped


def _refuse_mismatch(stored: pd.Series, linked: pd.Series, benchmark: str) -> int:
    """Stored items the link covers; UserError when the store holds items and the link covers none."""
    matched = int(stored.isin(linked).sum())
    if len(stored) and not matched:
        raise UserError(
            f"none of the {len(stored)} {benchmark} items in the store match the annotation's ids "
            f"(store: {stored.iloc[0]!r}, annotations: {linked.iloc[0] if len(linked) else None!r}); "
            "check --benchmark, or link with --paths"
        )
    return matched


def _examples(rows: pd.DataFrame, status: str) -> list[dict]:
    """The first ``EXAMPLES`` items of ``status`` (item id and path: ``VideoExample`` rows)."""
    return rows.loc[rows["status"] == status, ["item_id", "path"]].head(EXAMPLES).to_dict("records")


def link(
    store: Store,
    benchmark: str,
    dataset: str | os.PathLike,
    *,
    layout: str | None = None,
    template: str | None = None,
    paths: str | None = None,
    progress: bool = True,
) -> VideoLinkReport:
    """Link ``benchmark``'s items to their videos (module docstring); returns the ``videos link`` report."""
    if template is not None and paths is not None:
        raise UserError("pass --template or --paths, not both")
    if layout is not None and (template is not None or paths is not None):
        raise UserError("--layout reads a published layout; --template and --paths replace it: pass one of them")
    root, folder = confined_dataset(store, dataset)
    name, mapped = mapping(store, benchmark, folder, layout, template, paths)
    rel = relative_paths(root, folder, mapped["file"])
    stored = stored_items(store, benchmark)["item_id"].astype("str")
    mapped = choose_ids(mapped, stored)
    loops = rel.isna().to_numpy()
    skipped = pd.DataFrame(
        {
            "item_id": mapped["item_id"].to_numpy()[loops],
            "path": [str((folder / f).relative_to(root)) for f in mapped["file"].to_numpy()[loops]],
            "status": "skipped",
        }
    )
    mapped, rel = mapped[~loops].reset_index(drop=True), rel[~loops].reset_index(drop=True)
    matched = _refuse_mismatch(stored, mapped["item_id"], benchmark)
    probed = probe_files([root / r for r in rel], progress=progress)
    rows = probed.loc[[root / r for r in rel]].reset_index(drop=True)
    rows.insert(0, "item_id", mapped["item_id"].to_numpy())
    rows.insert(1, "path", rel.to_numpy())
    rows["layout"] = name
    rows["linked_at"] = pd.Timestamp.now(tz="UTC")
    version = catalog.replace(store, benchmark, rows)
    counts = rows["status"].value_counts()
    report = {
        "benchmark": benchmark,
        "layout": name,
        "dataset": str(folder),
        "video_root": str(root),
        "items": len(rows),
        "files": int(rows["path"].nunique()),
        "linked": int(counts.get("linked", 0)),  # catalog.STATUSES, one key each
        "missing": int(counts.get("missing", 0)),
        "unreadable": int(counts.get("unreadable", 0)),
        "stored_items": len(stored),
        "matched_items": matched,
        "skipped_links": len(skipped),
        "skipped_examples": _examples(skipped, "skipped"),
        "examples": {"missing": _examples(rows, "missing"), "unreadable": _examples(rows, "unreadable")},
        "store_version": version,
    }
    return built(report, VideoLinkReport)
