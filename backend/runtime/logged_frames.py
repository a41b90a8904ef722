"""Re-run with "the same frames as the logged answer": the ``logged`` sampling policy of a label.

``16f/logged`` asks the model to answer the item at ``16f`` from exactly the frame indices its logged
answer at ``16f`` stored (``responses.frame_indices`` of the ``main`` run that was not itself a
re-run), so a re-run at the logged configuration feeds the logged input and its answer is a protocol
check on the worker: it should agree with the logged one. The label keeps the re-run apart from the
logged cell (the store and the queue treat it as its own configuration).
"""

from __future__ import annotations

import numpy as np

from backend.videos import catalog
from store import samplers
from store.configs import LOGGED_SUFFIX, Config, base_label, is_logged, parse
from store.errors import UserError
from store.store import Store


def logged_label(config: str) -> str:
    """``16f`` -> ``16f/logged``; UserError for text-only or a label that already names a policy."""
    cfg = parse(config)
    if cfg.is_text:
        raise UserError("text-only has no frames to replay; --frames logged needs a visual config")
    if is_logged(cfg):
        return cfg.label
    if cfg.policy != "uniform" or cfg.tag is not None:
        raise UserError(
            f"--frames logged replays the logged answer's own frames; give its config without a policy (got {config!r})"
        )
    head, _, prune = cfg.label.partition("~")
    return parse(head + LOGGED_SUFFIX + (f"~{prune}" if prune else "")).label


def logged_indices(store: Store, model: str, benchmark: str, item_id: str, cfg: Config) -> np.ndarray:
    """The frame indices the logged answer at ``base_label(cfg)`` saw; UserError naming what is missing.

    Logged indices are replayed as stored; a response whose frames are ``reconstructed`` (its file
    logged none, the harness sampler was named at ingest) replays that sampler's set over the
    catalog's frame count, the frames the harness fed (docs/metrics.md "Frames seen")."""
    base = base_label(cfg)
    found = store.query(
        "SELECT frame_indices, frames_source, sampler FROM responses WHERE model = ? AND benchmark = ? "
        "AND item_id = ? AND config = ? AND run = 'main' AND origin IS DISTINCT FROM 'rerun' "
        "AND (frame_indices IS NOT NULL OR frames_source = 'reconstructed') ORDER BY frame_indices IS NULL LIMIT 1",
        [model, benchmark, item_id, base],
    )
    if found.empty:
        raise UserError(
            f"no logged frames to replay: {model}'s logged answer to {benchmark}/{item_id} at {base} "
            "stored no frame indices and names no harness sampler (or there is none)"
        )
    row = found.iloc[0]
    if row["frames_source"] != "reconstructed" or isinstance(row["frame_indices"], (list, np.ndarray)):
        return np.asarray(row["frame_indices"], dtype=np.int64)
    length = catalog.length(store, benchmark, item_id)
    if length is None:
        raise UserError(
            f"{benchmark}/{item_id}: its frames are reconstructed by the {row['sampler']} sampler from the linked "
            f"video's frame count, and no video is linked (run `trajaudit videos link --benchmark {benchmark} ...`)"
        )
    return samplers.indices(row["sampler"], *length, parse(base).frames)


def check_inside(indices: np.ndarray, n_frames: int, where: str) -> None:
    """Logged indices must name frames of the linked video (a mismatched video would replay others)."""
    bad = indices[(indices < 0) | (indices >= n_frames)]
    if len(bad):
        raise UserError(
            f"logged frame index {int(bad[0])} of {where} is outside its video ({n_frames} frames): "
            "is the right video linked? (`trajaudit videos check`)"
        )
