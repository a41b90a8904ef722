"""Re-run with "the same frames as the logged answer": the ``logged`` sampling policy of a label.

``16f/logged`` asks the model to answer the item at ``16f`` from exactly the frame indices its logged
answer at ``16f`` stored (``responses.frame_indices`` of the ``main`` run that was not itself a
re-run), so a re-run at the logged configuration feeds the logged input and its answer is a protocol
check on the worker: it should agree with the logged one. The label keeps the re-run apart from the
logged cell (the store and the queue treat it as its own configuration).
"""

from __future__ import annotations

import numpy as np

from store.configs import Config, parse
from store.errors import UserError
from store.store import Store

LOGGED = "logged"
SUFFIX = f"/{LOGGED}"


def is_logged(cfg: Config) -> bool:
    return cfg.policy == LOGGED


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
    return parse(head + SUFFIX + (f"~{prune}" if prune else "")).label


def base_label(cfg: Config) -> str:
    """The logged configuration a ``logged`` label replays (``16f/logged`` -> ``16f``)."""
    return parse(cfg.label.replace(SUFFIX, "", 1)).label


def logged_indices(store: Store, model: str, benchmark: str, item_id: str, cfg: Config) -> np.ndarray:
    """The frame indices the logged answer at ``base_label(cfg)`` saw; UserError naming what is missing."""
    base = base_label(cfg)
    found = store.query(
        "SELECT frame_indices FROM responses WHERE model = ? AND benchmark = ? AND item_id = ? AND config = ? "
        "AND run = 'main' AND origin IS DISTINCT FROM 'rerun' AND frame_indices IS NOT NULL LIMIT 1",
        [model, benchmark, item_id, base],
    )
    if found.empty:
        raise UserError(
            f"no logged frames to replay: {model}'s logged answer to {benchmark}/{item_id} at {base} "
            "stored no frame indices (or there is none)"
        )
    return np.asarray(found["frame_indices"].iloc[0], dtype=np.int64)


def check_inside(indices: np.ndarray, n_frames: int, where: str) -> None:
    """Logged indices must name frames of the linked video (a mismatched video would replay others)."""
    bad = indices[(indices < 0) | (indices >= n_frames)]
    if len(bad):
        raise UserError(
            f"logged frame index {int(bad[0])} of {where} is outside its video ({n_frames} frames): "
            "is the right video linked? (`trajaudit videos check`)"
        )
