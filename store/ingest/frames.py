"""Where each ingested response's frames come from (docs/metrics.md "Frames seen"; ``store.samplers``).

A reader hands over ``frame_indices`` where its file logs them (lmms-eval's ``<task>_score.frame_idx``,
the generic table's ``--map frames=KEY``), as lists, JSON list text or nothing. Here they become:

* ``frame_indices``: whole, non-negative frame numbers (``29.0`` is frame 29; ``29.5`` is refused with
  its line), stored as given (a harness's order and repeats kept);
* ``frames_source``: ``logged`` where the file gave indices, else ``reconstructed`` where the user
  named the harness's sampler (``--sampler``; the indices are computed at read time from the linked
  video), else ``unknown``; null for text-only rows, which see no frames;
* ``sampler``: the named sampler on every visual row;
* ``frames``: a logged set's own length (a short video gives fewer than the nominal budget).

A configuration whose logged sets are not all a uniform sampler's set for its budget
(``store.samplers.uniform_mask``) is another policy: its label gets the ``adaptive`` policy
(``32f`` -> ``32f/adaptive``), so it is never a step of a uniform budget ladder, and each row whose
set no uniform sampler gives is flagged ``adaptive-frames``. A label that already names a policy (``--config 32f/topk``) is kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from store import configs, samplers
from store.errors import UserError
from store.ingest.gate import fail
from store.store import Store

ADAPTIVE = "adaptive"
MAX_INDEX = 2**31 - 1  # responses.frame_indices is int32


def prepare(path: Path, rows: pd.DataFrame, sampler: str | None, word: str) -> None:
    """Parse ``frame_indices`` and set ``frames_source``, ``sampler`` and logged ``frames`` (in place)."""
    n = len(rows)
    if "frame_indices" in rows:
        parsed = [_indices(path, v, line, word) for v, line in zip(rows["frame_indices"], rows["_line"])]
    else:
        parsed = [None] * n
    logged = np.fromiter((p is not None for p in parsed), dtype=bool, count=n)
    rows["frame_indices"] = pd.Series(parsed, index=rows.index, dtype=object)
    source = np.where(logged, "logged", "reconstructed" if sampler else "unknown").astype(object)
    rows["frames_source"] = source
    rows["sampler"] = sampler
    if logged.any():
        counts = np.fromiter((np.nan if p is None else len(p) for p in parsed), dtype="float64", count=n)
        before = rows["frames"].to_numpy(dtype="float64", na_value=np.nan) if "frames" in rows else np.full(n, np.nan)
        rows["frames"] = np.where(logged, counts, before)


def _indices(path: Path, value: object, line: float | None, word: str) -> list[int] | None:
    """One row's logged indices as ints; None where the row logs none (an empty list included)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise fail(path, f"frame indices {text[:40]!r} are not a JSON list of frame numbers", line, word) from None
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise fail(path, f"frame indices must be a list of frame numbers, got {str(value)[:40]!r}", line, word)
    if len(value) == 0:
        return None
    try:
        arr = np.asarray(value, dtype="float64")
    except (TypeError, ValueError):
        raise fail(path, f"frame indices must be numbers, got {str(value)[:60]!r}", line, word) from None
    if arr.ndim != 1 or not np.isfinite(arr).all() or (arr != np.round(arr)).any():
        raise fail(path, f"frame indices must be whole frame numbers, got {str(value)[:60]!r}", line, word)
    if (arr < 0).any() or (arr > MAX_INDEX).any():
        raise fail(
            path, f"frame index {int(arr.min() if (arr < 0).any() else arr.max())} is not a frame number", line, word
        )
    return arr.astype(np.int64).tolist()


def relabel(rows: pd.DataFrame) -> dict[str, dict]:
    """Flag logged sets that match no uniform sampler and move their configurations to the
    ``adaptive`` policy (module docstring); returns, per relabelled config, what was found."""
    rows["_adaptive"] = False
    text = rows["config"].astype("str").eq("text").to_numpy()
    if text.any():  # text-only sees no frames: no source to name
        rows["frames_source"] = np.where(text, None, rows["frames_source"].to_numpy(dtype=object))
        rows["sampler"] = np.where(text, None, rows["sampler"].to_numpy(dtype=object))
    logged = rows["frames_source"].eq("logged").to_numpy()
    if not logged.any():
        return {}
    codes, uniq = pd.factorize(rows["config"].astype("str"))  # per distinct label, never per row
    parsed = [configs.parse(label) for label in uniq]
    eligible = np.asarray([c.policy == configs.DEFAULT_POLICY and c.tag is None and c.fps is None for c in parsed])
    checked = logged & eligible[codes]
    if not checked.any():
        return {}
    budgets = np.asarray([c.frames for c in parsed])[codes[checked]]
    uniform = samplers.uniform_mask(list(rows["frame_indices"][checked]), budgets)
    adaptive = np.zeros(len(rows), dtype=bool)
    adaptive[np.flatnonzero(checked)[~uniform]] = True
    rows["_adaptive"] = adaptive
    per_label = np.bincount(codes, minlength=len(uniq))
    flagged = np.bincount(codes[adaptive], minlength=len(uniq))
    found = {}
    for k in np.flatnonzero(flagged):
        new = configs.with_policy(uniq[k], ADAPTIVE)  # before a prompting or approximate-protocol suffix
        found[uniq[k]] = {"config": new, "rows": int(per_label[k]), "non_uniform": int(flagged[k])}
    if found:
        renamed = [found[u]["config"] if u in found else u for u in uniq]
        rows["config"] = pd.Categorical(np.asarray(renamed, dtype=object)[codes])
        rows["policy"] = np.asarray([configs.parse(u).policy for u in renamed], dtype=object)[codes]
    return found


def describe(found: dict[str, dict]) -> str | None:
    """The summary line's note on relabelled configurations."""
    if not found:
        return None
    return "; ".join(
        f"config {old} -> {f['config']}: {f['non_uniform']} of {f['rows']} logged frame sets match no uniform sampler"
        for old, f in found.items()
    )


def check_catalog(store: Store, path: Path, rows: pd.DataFrame, word: str) -> None:
    """Refuse logged indices beyond the end of a linked video (the catalog's probed frame count):
    they cannot be the frames the model saw, and a strip or re-run would read past the file."""
    logged = rows["frames_source"].eq("logged").to_numpy() if "frames_source" in rows else np.zeros(0, bool)
    if not logged.any():
        return
    sub = rows.loc[logged, ["benchmark", "item_id", "_line"]].astype({"benchmark": "str", "item_id": "str"})
    lists = pa.array(list(rows["frame_indices"][logged]), type=pa.list_(pa.int64()))
    # the largest index per row: one reduceat over the flattened lists (every logged list is non-empty)
    sub["_last"] = np.maximum.reduceat(pc.list_flatten(lists).to_numpy(), np.asarray(lists.offsets)[:-1])
    with store.connect() as con:
        con.register("logged_rows", pa.Table.from_pandas(sub, preserve_index=False))
        bad = con.sql(
            """SELECT l.item_id, l._line, l._last, v.n_frames, v.path FROM logged_rows l
               JOIN videos v ON v.benchmark = l.benchmark AND v.item_id = l.item_id
               WHERE v.status = 'linked' AND v.n_frames IS NOT NULL AND l._last >= v.n_frames
               ORDER BY l._line LIMIT 1"""
        ).fetchall()
    if bad:
        item, line, last, n_frames, video = bad[0]
        raise UserError(
            f"{path} {word} {line}: item {item} logs frame {last}, but its linked video {video} has {n_frames} "
            f"frames (0..{n_frames - 1}); nothing was written"
        )
