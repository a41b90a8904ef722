"""One item, in full: its question and every stored response, and the exact frames each budget saw.

The inspector page and ``trajaudit inspect`` show the same record: item metadata, one row per
(model, config, run) with raw output and provenance (run source, protocol notes), and a frame
plan per budget/policy. Frame indices come from the response when it logged them (what the model
really saw), else from the harness sampler named at ingest over the linked video's length; without
either they are unknown, and the plan says so instead of guessing (``response_frames``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from backend.contracts.inspector import HistoryReport, InspectReport, ReplacedResponse, VideoProbe
from backend.scope.texts import item_texts
from backend.videos import catalog
from backend.videos.decode import VideoInfo, probe, resolve_video, timestamps
from store import configs, registry, samplers
from store.errors import UserError
from store.schema import order_key_sql
from store.store import Store

RESPONSE_COLUMNS = (
    "model", "config", "run", "origin", "run_id", "answer", "correct", "confidence", "score", "option_probs",
    "letter_mass", "raw_output", "frames", "pixels", "policy", "seed", "frame_indices", "frames_source", "sampler",
    "flags", "source_tag",
    "protocol_note", "provenance", "written_at", "seq",
)  # fmt: skip


def item_detail(store: Store, benchmark: str, item_id: str, models: list[str] | None = None) -> dict:
    """``{"item": {...}, "responses": DataFrame}`` for one item, responses in grid order per model.

    ``responses`` adds ``run_source`` and ``run_format`` from the runs table (where the row came
    from), ``live_rerun`` (the row is a worker's re-run, ``origin = "rerun"``: shown apart from the
    logged trajectory) and ``rerun_note`` (for those rows, the registry's note on the model, e.g.
    "random weights: pipeline demo"). ``models`` limits the responses; every model by default.
    """
    cols = ", ".join(f"r.{c}" for c in RESPONSE_COLUMNS)
    model_sql = "" if not models else "AND list_contains($models, r.model)"
    params = {"benchmark": benchmark, "item_id": item_id} | ({"models": list(models)} if models else {})
    with store.connect() as con:
        item = con.execute(  # the ``items`` view's latest-row rule, after the filter (not over every item)
            "SELECT * EXCLUDE (written_at, seq) FROM items_all WHERE benchmark = $benchmark AND item_id = $item_id "
            f"ORDER BY {order_key_sql()} DESC LIMIT 1",
            {"benchmark": benchmark, "item_id": item_id},
        ).df()
        responses = con.execute(
            f"""SELECT {cols}, ru.source AS run_source, ru.format AS run_format
            FROM responses r
            LEFT JOIN (SELECT run_id, any_value(source) AS source, any_value(format) AS format
                       FROM runs GROUP BY run_id) ru USING (run_id)
            WHERE r.benchmark = $benchmark AND r.item_id = $item_id {model_sql}""",
            params,
        ).df()
    if item.empty and responses.empty:
        raise UserError(f"item {item_id!r} not found in benchmark {benchmark!r}")
    notes = {name: spec.note or None for name, spec in registry.load(store.root).items()}
    live = responses["origin"].eq("rerun").fillna(False).astype(bool)
    responses = responses.assign(live_rerun=live, rerun_note=responses["model"].map(notes).where(live, None))
    if not responses.empty:
        rank = {label: k for k, label in enumerate(configs.order(responses["config"].unique().tolist()))}
        responses = (
            responses.assign(_c=responses["config"].map(rank), _main=responses["run"].ne("main"))
            .sort_values(["model", "_c", "_main", "run"], kind="stable")
            .drop(columns=["_c", "_main"])
            .reset_index(drop=True)
        )
    record = item.iloc[0].to_dict() if not item.empty else {"benchmark": benchmark, "item_id": item_id}
    record["options"] = _json_list(record.get("options"))
    return {"item": record, "responses": responses}


def _json_list(value) -> list:
    """``items.options`` is a JSON list in the store; anything else is shown as one entry."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return [str(value)]
    return parsed if isinstance(parsed, list) else [str(parsed)]


def locate_video(
    video_root: str | Path, rel: str | None, store: Store | None = None, benchmark: str = "", item_id: str = ""
) -> tuple[Path | None, VideoInfo | None, str | None]:
    """(path, info, problem): the item's video under the root, probed; ``problem`` says why not.

    With ``store``, the video catalog (``trajaudit videos link``) is asked first and ``rel``
    (``items.video``) is the fallback; a problem then names the item and the command that links it.
    """
    status = None
    if store is not None:
        rel, status = catalog.video_for(store, benchmark, item_id, rel)
    if rel is None or (isinstance(rel, float) and np.isnan(rel)) or not str(rel).strip():
        problem = "this item names no video"
    else:
        try:
            path = resolve_video(video_root, str(rel))
            return path, probe(path), None
        except UserError as exc:
            problem = str(exc)
    return None, None, problem if store is None else catalog.notice(benchmark, item_id, status, problem)


def response_frames(responses: pd.DataFrame, n_frames: int | None, fps: float | None) -> pd.DataFrame:
    """``responses`` with ``frames_source`` resolved and ``frame_indices`` filled where reconstructed.

    docs/metrics.md "Frames seen": a response's frames are ``logged`` (stored indices: ingested from its
    file, or recorded by our worker and sweeps; rows written before the column existed count as
    logged where they hold indices), ``reconstructed`` (the harness sampler named at ingest, over the
    video's ``n_frames`` from the catalog or the probed file; null while no video is linked) or
    ``unknown``. Text-only rows have no source. Nothing is ever recomputed by our own uniform policy:
    a harness's "16 frames" are not ours.
    """
    out = responses.copy()
    n = len(out)
    source = out["frames_source"] if "frames_source" in out else pd.Series([None] * n, index=out.index, dtype=object)
    sampler = out["sampler"] if "sampler" in out else pd.Series([None] * n, index=out.index, dtype=object)
    text = out["config"].map(lambda c: configs.parse(c).is_text).to_numpy(dtype=bool)
    has = out["frame_indices"].map(_listed).to_numpy(dtype=bool)
    out["frame_indices"] = out["frame_indices"].where(has, None)
    named = source.eq("reconstructed").to_numpy()
    resolved = np.where(named, "reconstructed", np.where(has, "logged", "unknown"))
    out["frames_source"] = np.where(text, None, resolved).astype(object)  # type: ignore[call-overload]  # numpy's stubs take no None scalar
    out["sampler"] = sampler.where(~text, None)
    rate = out["config"].map(lambda c: configs.parse(c).fps is not None).to_numpy(dtype=bool)  # no count to sample
    rebuilt = named & ~text & ~has & ~rate  # computed once: a second call keeps what the first filled in
    if rebuilt.any() and n_frames:
        budgets = out.loc[rebuilt, "config"].map(lambda c: configs.parse(c).frames)
        out.loc[rebuilt, "frame_indices"] = pd.Series(
            [
                samplers.indices(name, n_frames, fps or 0.0, budget).tolist()
                for name, budget in zip(out.loc[rebuilt, "sampler"], budgets, strict=True)
            ],
            index=out.index[rebuilt],
            dtype=object,
        )
    return out


def _listed(value: object) -> bool:
    """A stored index list (a list or an array), not a missing value."""
    return isinstance(value, (list, tuple, np.ndarray))


_NOTES = {
    "logged": "logged: the indices its source gave",
    "reconstructed": "reconstructed by the {sampler} sampler from the video's {n} frames",
    "unknown": "unknown: its source logs no frames and no sampler was named at ingest (ingest --sampler)",
}


def frame_plan(
    responses: pd.DataFrame, labels: list[str], info: VideoInfo | None, length: tuple[int, float] | None = None
) -> pd.DataFrame:
    """One row per visual configuration and distinct (source, index set): the frames it saw.

    ``length``: the video's (frames, fps) from the catalog, else ``info``'s. Columns: ``config``,
    ``models`` (whose frames these are), ``source`` (``logged`` | ``reconstructed`` | ``unknown``,
    ``response_frames``), ``sampler``, ``indices``, ``timestamps`` (seconds; None without the
    video's fps), ``added`` / ``dropped`` (indices new / gone relative to the previous row, so a
    strip shows what each budget changes) and ``note`` (how the indices are known, or why not).
    """
    n_frames, fps = length if length else (info.n_frames, info.fps) if info is not None else (None, None)
    resolved = response_frames(responses, n_frames, fps)
    # Each configuration's (model, source, sampler, indices), split in one pass: a boolean row filter per
    # configuration took 50-130 ms an item in pandas' overhead on a few dozen rows.
    by_config: dict[str, list[tuple]] = {}
    for config, *rest in zip(
        resolved["config"],
        resolved["model"],
        resolved["frames_source"],
        resolved["sampler"],
        resolved["frame_indices"],
        strict=True,
    ):
        by_config.setdefault(config, []).append(tuple(rest))
    rows = []
    for label in configs.order(labels):
        if configs.parse(label).is_text:
            continue
        variants: dict[tuple, list[str]] = {}
        for model, src, name, idx in by_config.get(label, []):
            key = (src, name if src == "reconstructed" else None, tuple(int(i) for i in idx) if _listed(idx) else None)
            owners = variants.setdefault(key, [])
            if model not in owners:
                owners.append(model)
        for (src, name, idx), models in variants.items():
            note = _NOTES[src].format(sampler=name, n=n_frames)
            if src == "reconstructed" and idx is None:
                note = f"reconstructed by the {name} sampler once its video is linked (trajaudit videos link)"
            rows.append((label, models, src, name, None if idx is None else np.array(idx, dtype=np.int64), note))
    out, previous = [], None
    for label, models, source, name, idx, note in rows:
        current = None if idx is None else set(idx.tolist())
        out.append(
            {
                "config": label,
                "models": models,
                "source": source,
                "sampler": name,
                "indices": None if idx is None else idx.tolist(),
                "timestamps": None if idx is None or not fps else timestamps(idx, fps).round(3).tolist(),
                "added": None if current is None or previous is None else sorted(current - previous),
                "dropped": None if current is None or previous is None else sorted(previous - current),
                "note": note,
            }
        )
        previous = current if current is not None else previous
    return pd.DataFrame(
        out, columns=["config", "models", "source", "sampler", "indices", "timestamps", "added", "dropped", "note"]
    )


def video_length(store: Store, benchmark: str, item_id: str, info: VideoInfo | None) -> tuple[int, float] | None:
    """(frames, fps) of the item's video: the catalog's probe where it is linked, else the file found."""
    row = catalog.lookup(store, benchmark, [item_id])
    row = row[row["status"].eq("linked") & row["n_frames"].notna()]
    if len(row):
        fps = row["fps"].iloc[0]
        return int(row["n_frames"].iloc[0]), float(fps) if pd.notna(fps) else 0.0
    return None if info is None else (info.n_frames, info.fps)


HISTORY_COLUMNS = (
    "model", "config", "run", "run_id", "answer", "correct", "confidence", "score", "option_probs", "raw_output",
    "seq", "replaced_seq", "replaced_by", "written_at",
)  # fmt: skip


def item_history(store: Store, benchmark: str, item_id: str, models: list[str] | None = None) -> HistoryReport:
    """``inspect --history``: the values an ingest with ``--replace`` took out of the item's responses, in the
    order they were replaced (the store's write sequence, never a clock)."""
    with store.connect() as con:
        rows = con.execute(
            f"SELECT {', '.join(HISTORY_COLUMNS)} FROM history WHERE benchmark = $b AND item_id = $i "
            "AND ($models IS NULL OR list_contains($models, model)) ORDER BY replaced_seq, model, config, run",
            {"b": benchmark, "i": item_id, "models": list(models) if models else None},
        ).df()
    rows["written_at"] = rows["written_at"].map(lambda t: None if pd.isna(t) else t.isoformat())
    records = rows.astype(object).where(rows.notna(), None).to_dict("records")
    return {"benchmark": benchmark, "item_id": item_id, "history": cast(list[ReplacedResponse], records)}


def inspect_record(
    store: Store, benchmark: str, item_id: str, video_root: str | Path, models: list[str] | None = None
) -> InspectReport:
    """The ``inspect --json`` contract: item, responses, video status, frame plan and (open-ended) the texts."""

    detail = item_detail(store, benchmark, item_id, models)
    path, info, problem = locate_video(video_root, detail["item"].get("video"), store, benchmark, item_id)
    length = video_length(store, benchmark, item_id, info)
    responses = response_frames(detail["responses"], *(length or (None, None)))
    plan = frame_plan(responses, responses["config"].unique().tolist() if len(responses) else [], info, length)
    return {
        "item": detail["item"],
        # One item's rows (tens): timestamps as ISO text, missing ones as null.
        "responses": responses.assign(
            written_at=responses["written_at"].map(lambda t: None if pd.isna(t) else t.isoformat())
        ).to_dict("records"),
        "video": {
            "path": None if path is None else str(path),
            "problem": problem,
            "info": None if info is None else cast(VideoProbe, asdict(info)),  # test_contracts compares the types
        },
        "frames": plan.to_dict("records"),
        "texts": item_texts(detail["item"], detail["responses"]),
    }
