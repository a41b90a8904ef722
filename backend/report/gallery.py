"""The report's gallery: the N most informative items, each with its trajectory per model and the frames each budget fed.

"Most informative" is read off the matched matrix, in three rankings taken in turn so each kind of
item shows up: terminal regressions (correct cheaper, wrong at the top budget; most models first),
visually confused items (most models confused first, then the most flips) and the items the models
disagree on most (``backend.analysis.compare.disagreement``). Ties are broken by a permutation drawn from
the report's seed, so the gallery is fixed for a given store version, scope and seed.

Frames come from ``backend.scope.inspector.frame_plan`` (logged, reconstructed by the harness sampler
named at ingest, or unknown: never our own policy standing in for a harness's); each
budget's strip shows at most ``THUMBS_PER_BUDGET`` of them, evenly spread, as small JPEGs inlined
in the file. Without the video the strip says why (``locate_video``'s reason) and shows no image.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pandas as pd
from PIL import Image

from backend.analysis import compare
from backend.contracts.report import FrameStrip, GalleryItem, GalleryNote, GalleryTrajectory
from backend.scope.annotations import annotations_for
from backend.scope.inspector import _json_list as option_list  # items.options as the inspector reads it
from backend.scope.inspector import frame_plan, locate_video
from backend.scope.matrix import Matrix, main_only
from backend.scope.tags import changes, tag_masks
from backend.videos import catalog
from backend.videos.decode import decode_frames
from store.rows import Record, records
from store.store import Store

THUMBS_PER_BUDGET = 8
THUMB_HEIGHT = 40  # pixels: a strip of 8 stays narrower than a printed page
JPEG_QUALITY = 70
KINDS = ("terminal regression", "confused", "disagreement")


def rankings(matrix: Matrix, seed: int) -> tuple[dict[str, np.ndarray], pd.DataFrame]:
    """Item positions per kind (best first, only items of that kind) and the per-item evidence behind them."""
    y = matrix.correct.astype(bool)  # [M, I, C]
    masks = tag_masks(y, matrix.grid, matrix.lower)
    n_models = len(matrix.models)
    evidence = pd.DataFrame(
        {
            "terminal": masks["terminal-regression"].sum(axis=0),
            "confused": masks["confused"].sum(axis=0),
            "flips": changes(y).sum(axis=0),
            "disagreement": np.zeros(matrix.n_items),
        }
    )
    if n_models > 1:
        evidence["disagreement"] = compare.disagreement_scores(matrix)[0]
    tie = np.random.default_rng(seed).permutation(matrix.n_items)
    t, c, f, d = (evidence[k].to_numpy() for k in ("terminal", "confused", "flips", "disagreement"))
    order = {
        "terminal regression": np.lexsort((tie, -d, -t)),
        "confused": np.lexsort((tie, -f, -c)),
        "disagreement": np.lexsort((tie, -c, -d)),
    }
    keep = {"terminal regression": t > 0, "confused": c > 0, "disagreement": d > 0}
    return {kind: idx[keep[kind][idx]] for kind, idx in order.items()}, evidence


def pick(matrix: Matrix, n: int, seed: int) -> list[tuple[int, list[str]]]:
    """Up to ``n`` item positions, taken from the rankings in turn, each with why it was picked."""
    ranked, evidence = rankings(matrix, seed)
    n_models = len(matrix.models)
    chosen: dict[int, None] = {}
    cursors = {kind: 0 for kind in KINDS}
    while len(chosen) < n and any(cursors[k] < len(ranked[k]) for k in KINDS):
        for kind in KINDS:
            lst = ranked[kind]
            while cursors[kind] < len(lst) and int(lst[cursors[kind]]) in chosen:
                cursors[kind] += 1
            if cursors[kind] < len(lst) and len(chosen) < n:
                chosen[int(lst[cursors[kind]])] = None
                cursors[kind] += 1
    return [(i, _reasons(evidence.iloc[i], n_models)) for i in chosen]


def _reasons(row: pd.Series, n_models: int) -> list[str]:
    def share(k: int) -> str:
        return "" if n_models == 1 else f" for {k} of {n_models} models"

    out = []
    if row["terminal"]:
        out.append(f"terminal regression{share(int(row['terminal']))}")
    if row["confused"]:
        out.append(f"visually confused{share(int(row['confused']))}")
    if row["disagreement"]:
        out.append(f"disagreement {row['disagreement']:.2f}")
    return out


def jpeg_base64(frame: np.ndarray) -> str:
    """One frame as a small baseline JPEG, base64 (PIL's encoder is deterministic for the same pixels)."""
    img = Image.fromarray(frame)
    img = img.resize((max(1, round(img.width * THUMB_HEIGHT / img.height)), THUMB_HEIGHT), Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def spread(indices: list[int], k: int = THUMBS_PER_BUDGET) -> list[int]:
    """At most ``k`` of ``indices``, evenly spread (first and last kept)."""
    if len(indices) <= k:
        return list(indices)
    return [indices[j] for j in np.linspace(0, len(indices) - 1, k).round().astype(int)]


def frame_strips(responses: list[Record], grid: list[str], video_root, rel) -> tuple[str | None, list[FrameStrip]]:
    """(why no video or None, one strip per visual budget of the grid) for one item."""
    path, info, problem = locate_video(video_root, rel)
    plan = frame_plan(responses, grid, info)
    shown = [spread(row["indices"]) if row["indices"] is not None else [] for row in plan]
    wanted = sorted({i for s in shown for i in s})
    images = {}
    if path is not None and wanted:
        images = {
            i: jpeg_base64(f) for i, f in zip(wanted, decode_frames(path, wanted, size=THUMB_HEIGHT), strict=True)
        }
    strips: list[FrameStrip] = [
        FrameStrip(
            config=row["config"],
            models=list(row["models"]),
            source=row["source"],
            n_frames=None if row["indices"] is None else len(row["indices"]),
            shown=idx,
            timestamps=None if row["timestamps"] is None else [row["timestamps"][row["indices"].index(i)] for i in idx],
            jpeg_base64=[images[i] for i in idx] if images else [],
            note=row["note"],
        )
        for row, idx in zip(plan, shown, strict=True)
    ]
    return problem, strips


def frame_rows(store: Store, matrix: Matrix, positions: list[int]) -> dict[tuple[str, str], list[Record]]:
    """Stored frame indices, their source and sampler, and seeds of the picked items' main-run responses on the grid,
    in one query: records per (benchmark, item_id)."""
    wanted = matrix.items.iloc[positions][["benchmark", "item_id"]].reset_index(drop=True)
    sql = f"""SELECT r.benchmark, r.item_id, r.model, r.config, r.frame_indices, r.frames_source, r.sampler, r.seed
              FROM responses r JOIN wanted w ON r.benchmark = w.benchmark AND r.item_id = w.item_id
              WHERE list_contains($models, r.model) AND list_contains($grid, r.config) AND {main_only("r.")}
              ORDER BY r.benchmark, r.item_id, r.model, r.config, r.run"""
    with store.connect() as con:
        con.register("wanted", wanted)
        rows = records(con.execute(sql, {"models": list(matrix.models), "grid": list(matrix.grid)}))
    by_item: dict[tuple[str, str], list[Record]] = {}
    for r in rows:
        by_item.setdefault((r["benchmark"], r["item_id"]), []).append(r)
    return by_item


def entry(
    matrix: Matrix,
    position: int,
    reasons: list[str],
    responses: list[Record],
    video_root,
    notes: pd.DataFrame,
    video: str | None,
) -> GalleryItem:
    """One gallery item: metadata, per-model trajectory over the grid (correct, answer, confidence), frames,
    annotations; ``video``: its file under the video root (the catalog's link, else ``items.video``)."""
    item = matrix.items.iloc[position]
    if matrix.answer is None:
        raise ValueError("a gallery entry needs a matrix loaded with include_answers=True")
    trajectories: dict[str, GalleryTrajectory] = {
        model: GalleryTrajectory(
            correct=matrix.correct[m, position].astype(int).tolist(),
            answer=[_text(a) for a in matrix.answer[m, position]],
            confidence=[None if np.isnan(v) else round(float(v), 3) for v in matrix.confidence[m, position]],
        )
        for m, model in enumerate(matrix.models)
    }
    problem, strips = frame_strips(responses, matrix.grid, video_root, video)
    mine = notes[(notes["benchmark"] == item["benchmark"]) & (notes["item_id"] == item["item_id"])]
    return GalleryItem(
        benchmark=item["benchmark"],
        item_id=item["item_id"],
        task_type=_text(item.get("task_type")),
        duration=_text(item.get("duration")),
        question=_text(item.get("question")),
        options=option_list(item.get("options")),
        target=_text(item.get("target")),
        reasons=reasons,
        trajectories=trajectories,
        video_problem=problem,
        frames=strips,
        annotations=[
            GalleryNote(author=_text(r["author"]), tag=_text(r["tag"]), model=_text(r["model"]), note=_text(r["note"]))
            for r in mine.sort_values("annotation_id").to_dict("records")
        ],
    )


def _text(value) -> str | None:
    """A cell as text for the report; missing values as None."""
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def gallery(store: Store, matrix: Matrix, n: int, seed: int, video_root) -> list[GalleryItem]:
    """The ``n`` most informative items of the matched matrix (loaded with its answers), ready to draw."""
    picks = pick(matrix, n, seed) if n > 0 and matrix.n_items else []
    if not picks:
        return []
    positions = [p for p, _ in picks]
    by_item = frame_rows(store, matrix, positions)
    notes = pd.concat(
        [annotations_for(store, b) for b in sorted(set(matrix.items["benchmark"].iloc[positions]))], ignore_index=True
    )
    picked = matrix.items.iloc[positions]
    videos = pd.concat(
        [catalog.with_videos(store, b, g) for b, g in picked.groupby("benchmark", sort=False, observed=True)]
    )["video"].loc[picked.index]
    return [
        entry(
            matrix,
            p,
            reasons,
            by_item.get(tuple(matrix.items.iloc[p][["benchmark", "item_id"]]), []),
            video_root,
            notes,
            None if pd.isna(videos.iloc[k]) else str(videos.iloc[k]),
        )
        for k, (p, reasons) in enumerate(picks)
    ]
