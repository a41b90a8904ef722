"""One item, in full: its question and every stored response, and the exact frames each budget saw.

The inspector page and ``trajaudit inspect`` show the same record: item metadata, one row per
(model, config, run) with raw output and provenance (run source, protocol notes), and a frame
plan per budget/policy. Frame indices come from the response when it stored them (what the model
really saw); otherwise the named sampling policy recomputes them from the video's length, and
without the video they cannot be known (the plan says so instead of guessing).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from backend.contracts.inspector import InspectReport
from backend.runtime import registry
from backend.runtime.sampling import config_indices, takes_seed, timestamps
from backend.runtime.video import VideoInfo, probe, resolve_video
from backend.videos import catalog
from store import configs
from store.errors import UserError
from store.store import Store

RESPONSE_COLUMNS = (
    "model", "config", "run", "origin", "run_id", "answer", "correct", "confidence", "score", "option_probs",
    "letter_mass", "raw_output", "frames", "pixels", "policy", "seed", "frame_indices", "flags", "source_tag",
    "protocol_note", "provenance", "written_at",
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
            "SELECT * EXCLUDE (written_at) FROM items_all WHERE benchmark = $benchmark AND item_id = $item_id "
            "ORDER BY written_at DESC LIMIT 1",
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


def trajectory_rows(responses: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(logged, reruns) of ``item_detail``'s responses, drawn apart on the inspector's charts.

    ``logged``: one row per (model, config) without live re-runs, the run the matrix uses first
    (``main`` when present). ``reruns``: the newest live re-run per (model, config).
    """
    live = responses["live_rerun"].to_numpy(dtype=bool)
    logged = responses.loc[~live].drop_duplicates(["model", "config"], keep="first")
    reruns = (
        responses.loc[live].sort_values("written_at", kind="stable").drop_duplicates(["model", "config"], keep="last")
    )
    return logged.reset_index(drop=True), reruns.reset_index(drop=True)


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


def frame_plan(responses: pd.DataFrame, labels: list[str], info: VideoInfo | None) -> pd.DataFrame:
    """One row per visual configuration (and per distinct stored index set): the frames it saw.

    Columns: ``config``, ``models`` (whose stored indices these are; empty when computed),
    ``source`` (``stored`` | ``policy`` | ``unknown``), ``indices``, ``timestamps`` (seconds; None
    without the video's fps), ``added`` / ``dropped`` (indices new / gone relative to the previous
    row, so a strip shows what each budget changes) and ``note``.
    """
    rows = []
    for label in configs.order(labels):
        if configs.parse(label).is_text:
            continue
        have = responses.loc[(responses["config"] == label) & responses["frame_indices"].notna()]
        variants: dict[tuple, list[str]] = {}
        for model, idx in zip(have["model"], have["frame_indices"], strict=True):
            owners = variants.setdefault(tuple(int(i) for i in idx), [])
            if model not in owners:
                owners.append(model)
        if variants:
            rows += [(label, models, "stored", np.array(idx, dtype=np.int64), "") for idx, models in variants.items()]
        elif info is not None:
            seeds = responses.loc[responses["config"] == label, "seed"].dropna()
            seed = int(seeds.iloc[0]) if len(seeds) and takes_seed(configs.parse(label).policy) else None
            rows.append(
                (
                    label,
                    [],
                    "policy",
                    config_indices(label, info.n_frames, info.fps, seed),
                    "recomputed by the sampling policy",
                )
            )
        else:
            rows.append((label, [], "unknown", None, "no stored indices and no video to compute them from"))
    out, previous = [], None
    for label, models, source, idx, note in rows:
        current = None if idx is None else set(idx.tolist())
        out.append(
            {
                "config": label,
                "models": models,
                "source": source,
                "indices": None if idx is None else idx.tolist(),
                "timestamps": None if idx is None or info is None else timestamps(idx, info.fps).round(3).tolist(),
                "added": None if current is None or previous is None else sorted(current - previous),
                "dropped": None if current is None or previous is None else sorted(previous - current),
                "note": note,
            }
        )
        previous = current if current is not None else previous
    return pd.DataFrame(
        out, columns=["config", "models", "source", "indices", "timestamps", "added", "dropped", "note"]
    )


def inspect_record(
    store: Store, benchmark: str, item_id: str, video_root: str | Path, models: list[str] | None = None
) -> InspectReport:
    """The ``inspect --json`` contract: item, responses, video status and frame plan."""
    detail = item_detail(store, benchmark, item_id, models)
    responses = detail["responses"]
    path, info, problem = locate_video(video_root, detail["item"].get("video"), store, benchmark, item_id)
    plan = frame_plan(responses, responses["config"].unique().tolist() if len(responses) else [], info)
    return {
        "item": detail["item"],
        # One item's rows (tens): timestamps as ISO text, missing ones as null.
        "responses": responses.assign(
            written_at=responses["written_at"].map(lambda t: None if pd.isna(t) else t.isoformat())
        ).to_dict("records"),
        "video": {
            "path": None if path is None else str(path),
            "problem": problem,
            "info": None if info is None else asdict(info),
        },
        "frames": plan.to_dict("records"),
    }
