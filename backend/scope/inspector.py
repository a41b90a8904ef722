"""One item, in full: its question and every stored response, and the exact frames each budget saw.

The inspector page and ``trajaudit inspect`` show the same record: item metadata, one row per
(model, config, run) with raw output and provenance (run source, protocol notes), and a frame
plan per budget/policy. Frame indices come from the response when it logged them (what the model
really saw), else from the harness sampler named at ingest over the linked video's length; without
either they are unknown, and the plan says so instead of guessing (``response_frames``).

An item has tens of responses, so they are plain records (one dict per response, column -> value, None where
missing), read with DuckDB's ``fetchall`` and walked in Python: no DataFrame is built on the way, and
``trajaudit inspect`` imports no pandas. A page that shows a table converts at its own boundary.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np

from backend.contracts.base import from_rows, unset, validated
from backend.contracts.inspector import (
    FramePlanRow,
    HistoryReport,
    InspectedItem,
    InspectReport,
    ReplacedResponse,
    ResponseRow,
    VideoStatus,
)
from backend.scope.ladders import ladders
from backend.scope.runs import MAIN, RunChoice
from backend.scope.texts import item_texts, number
from backend.videos import catalog
from backend.videos.decode import VideoInfo, probe, resolve_video, timestamps
from store import configs, registry, samplers
from store.errors import UserError
from store.rows import Record, records
from store.schema import order_key_sql
from store.store import Store

RESPONSE_COLUMNS = (
    "model", "config", "run", "origin", "run_id", "answer", "correct", "confidence", "score", "option_probs",
    "letter_mass", "raw_output", "frames", "pixels", "policy", "seed", "frame_indices", "frames_source", "sampler",
    "flags", "source_tag",
    "protocol_note", "provenance", "written_at", "seq",
)  # fmt: skip


class ItemDetail(NamedTuple):
    """One item as the Inspector reads it: its metadata (``inspect --json``'s ``item``) and every stored response
    as a record (the page filters runs and draws charts from them; ``inspect_record`` turns them into rows)."""

    item: InspectedItem
    responses: list[Record]


def item_benchmark(store: Store, item_id: str) -> str:
    """The benchmark holding ``item_id``, for a command that names the item alone: the one benchmark whose items or
    responses have that id; where several have it, the user picks (ids like ``001-1`` repeat across benchmarks)."""
    with store.connect() as con:
        found = [
            row[0]
            for row in con.execute(
                "SELECT benchmark FROM items_all WHERE item_id = $i UNION SELECT benchmark FROM responses "
                "WHERE item_id = $i ORDER BY benchmark",
                {"i": item_id},
            ).fetchall()
        ]
    if not found:
        raise UserError(f"item {item_id!r} not found in any benchmark")
    if len(found) > 1:
        raise UserError(
            f"item {item_id!r} is in {len(found)} benchmarks ({', '.join(found)}): name one with --benchmark"
        )
    return str(found[0])


def item_detail(store: Store, benchmark: str, item_id: str, models: list[str] | None = None) -> ItemDetail:
    """The item and its responses, in grid order per model.

    ``responses`` adds ``run_source`` and ``run_format`` from the runs table (where the row came
    from), ``live_rerun`` (the row is a worker's re-run, ``origin = "rerun"``: shown apart from the
    logged trajectory) and ``rerun_note`` (for those rows, the registry's note on the model, e.g.
    "random weights: pipeline demo"). ``models`` limits the responses; every model by default.
    """
    cols = ", ".join(f"r.{c}" for c in RESPONSE_COLUMNS)
    model_sql = "" if not models else "AND list_contains($models, r.model)"
    params = {"benchmark": benchmark, "item_id": item_id} | ({"models": list(models)} if models else {})
    with store.connect() as con:
        item = records(
            con.execute(  # the ``items`` view's latest-row rule, after the filter (not over every item)
                "SELECT * EXCLUDE (written_at, seq) FROM items_all WHERE benchmark = $benchmark AND item_id = $item_id "
                f"ORDER BY {order_key_sql()} DESC LIMIT 1",
                {"benchmark": benchmark, "item_id": item_id},
            )
        )
        responses = records(
            con.execute(
                f"""SELECT {cols}, ru.source AS run_source, ru.format AS run_format
                FROM responses r
                LEFT JOIN (SELECT run_id, any_value(source) AS source, any_value(format) AS format
                           FROM runs GROUP BY run_id) ru USING (run_id)
                WHERE r.benchmark = $benchmark AND r.item_id = $item_id {model_sql}""",
                params,
            )
        )
    if not item and not responses:
        raise UserError(f"item {item_id!r} not found in benchmark {benchmark!r}")
    notes = {name: spec.note or None for name, spec in registry.load(store.root).items()}
    for r in responses:
        r["live_rerun"] = live = r["origin"] == "rerun"
        r["rerun_note"] = notes.get(r["model"]) if live else None
    rank = {label: k for k, label in enumerate(configs.order([r["config"] for r in responses]))}
    # Per model in grid order, run main first, then the other runs by name (a row without a run last); stable.
    responses.sort(key=lambda r: (r["model"], rank[r["config"]], r["run"] != MAIN, r["run"] is None, r["run"] or ""))
    record: Record = item[0] if item else {"benchmark": benchmark, "item_id": item_id}
    record["options"] = _json_list(record.get("options"))
    return ItemDetail(from_rows([record], InspectedItem)[0], responses)


def _json_list(value) -> list:
    """``items.options`` is a JSON list in the store; anything else is shown as one entry."""
    if value is None or value != value:  # missing: None, or NaN from a DataFrame's cell
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
    if rel is None or rel != rel or not str(rel).strip():  # NaN: a DataFrame's missing cell
        problem = "this item names no video"
    else:
        try:
            path = resolve_video(video_root, str(rel))
            return path, probe(path), None
        except UserError as exc:
            problem = str(exc)
    return None, None, problem if store is None else catalog.notice(benchmark, item_id, status, problem)


def response_frames(responses: list[Record], n_frames: int | None, fps: float | None) -> list[Record]:
    """``responses`` (new records) with ``frames_source`` resolved and ``frame_indices`` filled where reconstructed.

    docs/metrics.md "Frames seen": a response's frames are ``logged`` (stored indices: ingested from its
    file, or recorded by our worker and sweeps; rows written before the column existed count as
    logged where they hold indices), ``reconstructed`` (the harness sampler named at ingest, over the
    video's ``n_frames`` from the catalog or the probed file; null while no video is linked) or
    ``unknown``. Text-only rows have no source. Nothing is ever recomputed by our own uniform policy:
    a harness's "16 frames" are not ours.
    """
    out = []
    for r in responses:
        config = configs.parse(r["config"])
        indices = r["frame_indices"]
        has = _listed(indices)
        named = r.get("frames_source") == "reconstructed"
        text = config.is_text
        sampler = None if text else r.get("sampler")
        # Computed once (a second call keeps what the first filled in); a frame rate fixes no count to sample.
        if named and not text and not has and config.fps is None and n_frames:
            indices, has = samplers.indices(r["sampler"], n_frames, fps or 0.0, config.frames).tolist(), True
        source = None if text else "reconstructed" if named else "logged" if has else "unknown"
        out.append(r | {"frame_indices": indices if has else None, "frames_source": source, "sampler": sampler})
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
    responses: list[Record], labels: list[str], info: VideoInfo | None, length: tuple[int, float] | None = None
) -> list[Record]:
    """One record per visual configuration and distinct (source, index set): the frames it saw; then, under its
    configuration's rows, a row per live re-run (its frames as its worker logged them).

    ``length``: the video's (frames, fps) from the catalog, else ``info``'s. Keys: ``config``,
    ``models`` (whose frames these are), ``source`` (``logged`` | ``reconstructed`` | ``unknown``,
    ``response_frames``), ``sampler``, ``indices``, ``timestamps`` (seconds; None without the
    video's fps), ``added`` / ``dropped`` (indices new / gone relative to the previous logged row, so a
    strip shows what each budget changes; a re-run's against the logged row above it, and the next logged
    row never against a re-run), ``note`` (how the indices are known, or why not) and ``rerun`` (the
    re-run's run id; None for a logged row).
    """
    n_frames, fps = length if length else (info.n_frames, info.fps) if info is not None else (None, None)
    # Each configuration's (model, source, sampler, indices, re-run), split in one pass.
    by_config: dict[str, list[tuple]] = {}
    for r in response_frames(responses, n_frames, fps):
        rerun = r.get("run") if r.get("live_rerun") else None
        by_config.setdefault(r["config"], []).append(
            (r["model"], r["frames_source"], r["sampler"], r["frame_indices"], rerun)
        )
    rows = []
    for label in configs.order(labels):
        if configs.parse(label).is_text:
            continue
        variants: dict[tuple, list[str]] = {}
        for model, src, name, idx, rerun in sorted(by_config.get(label, []), key=lambda v: v[4] is not None):
            key = (
                src,
                name if src == "reconstructed" else None,
                tuple(int(i) for i in idx) if _listed(idx) else None,
                rerun,
            )
            owners = variants.setdefault(key, [])
            if model not in owners:
                owners.append(model)
        for (src, name, idx, rerun), models in variants.items():
            note = _NOTES[src].format(sampler=name, n=n_frames)
            if src == "reconstructed" and idx is None:
                note = f"reconstructed by the {name} sampler once its video is linked (trajaudit videos link)"
            if rerun is not None:
                note = f"live re-run {rerun}: the frames its worker decoded"
            index = None if idx is None else np.array(idx, dtype=np.int64)
            rows.append((label, models, src, name, index, note, rerun))
    out, previous = [], None
    for label, models, source, name, idx, note, rerun in rows:
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
                "rerun": rerun,
            }
        )
        if rerun is None:
            previous = current if current is not None else previous
    return out


def video_length(store: Store, benchmark: str, item_id: str, info: VideoInfo | None) -> tuple[int, float] | None:
    """(frames, fps) of the item's video: the catalog's probe where it is linked, else the file found."""
    linked = catalog.length(store, benchmark, item_id)
    if linked is not None:
        return linked
    return None if info is None else (info.n_frames, info.fps)


HISTORY_COLUMNS = (
    "model", "config", "run", "run_id", "answer", "correct", "confidence", "score", "option_probs", "raw_output",
    "seq", "replaced_seq", "replaced_by", "written_at",
)  # fmt: skip


def item_history(store: Store, benchmark: str, item_id: str, models: list[str] | None = None) -> HistoryReport:
    """``inspect --history``: the values an ingest with ``--replace`` took out of the item's responses, in the
    order they were replaced (the store's write sequence, never a clock)."""
    with store.connect() as con:
        rows = records(
            con.execute(
                f"SELECT {', '.join(HISTORY_COLUMNS)} FROM history WHERE benchmark = $b AND item_id = $i "
                "AND ($models IS NULL OR list_contains($models, model)) ORDER BY replaced_seq, model, config, run",
                {"b": benchmark, "i": item_id, "models": list(models) if models else None},
            )
        )
    shown = [r | {"written_at": _iso(r["written_at"])} for r in rows]
    return HistoryReport(benchmark=benchmark, item_id=item_id, history=from_rows(shown, ReplacedResponse))


def _iso(t: datetime | None) -> str | None:
    """A stored time as ISO-8601 text (the session's time zone, as DuckDB hands it over); None where missing."""
    return None if t is None else t.isoformat()


def inspect_record(
    store: Store, benchmark: str, item_id: str, video_root: str | Path, models: list[str] | None = None
) -> InspectReport:
    """The ``inspect --json`` contract: item, responses, video status, frame plan and (open-ended) the texts."""

    detail = item_detail(store, benchmark, item_id, models)
    path, info, problem = locate_video(video_root, unset(detail.item.video), store, benchmark, item_id)
    length = video_length(store, benchmark, item_id, info)
    responses = response_frames(detail.responses, *(length or (None, None)))
    plan = frame_plan(responses, list(dict.fromkeys(r["config"] for r in responses)), info, length)
    return validated(
        InspectReport(
            item=detail.item,
            # One item's rows (tens): timestamps as ISO text, missing ones as null.
            responses=from_rows([r | {"written_at": _iso(r["written_at"])} for r in responses], ResponseRow),
            video=VideoStatus(
                path=None if path is None else str(path),
                problem=problem,
                info=info,
            ),
            frames=from_rows(plan, FramePlanRow),
            texts=item_texts(detail.item, detail.responses),
        )
    )


# -- the Inspector's charts: answers per model and configuration, each model's trajectory ----------------

RERUN = "live re-run"


def rerun_name(model: str, note: str | None) -> str:
    """How a model's live re-runs are named on the answer grid's row and in tooltips (with the registry's note,
    e.g. random weights)."""
    return f"{model} · {RERUN}" + (f" ({note})" if isinstance(note, str) and note else "")


def value_column(rows: list[Record]) -> tuple[str, str]:
    """(column, axis title): confidence for MCQA; the continuous score for open-ended items (no confidence)."""
    if any(number(r["confidence"]) is not None for r in rows) or all(number(r["score"]) is None for r in rows):
        return "confidence", "confidence (probability of the answer)"
    return "score", "score (Token-F1)"


def _state(correct: object) -> str | None:
    return None if correct is None or correct != correct else ("correct" if correct == 1 else "wrong")


def _answer(r: dict) -> str:
    return "–" if r["answer"] is None or r["answer"] != r["answer"] else str(r["answer"])


def answer_cells(logged: list[Record], reruns: list[Record], models: list[str], labels: list[str]) -> dict:
    """The answer grid: ``{"cells": [...], "rows": [...], "order": labels, "value": column}``. A cell per scored answer
    (``model, config, state, value, text``: the answer letter for MCQA, the score for open-ended items); rows
    are the models, then each model's live re-runs on a row of their own (``rerun_name``), never merged into
    the logged answers (an overlay)."""
    value, _ = value_column(logged + reruns)
    named = [dict(r, model=rerun_name(r["model"], r["rerun_note"])) for r in reruns]
    answered = {r["model"] for r in logged}
    rows = [m for m in models if m in answered] + list(dict.fromkeys(r["model"] for r in named))
    shown, wanted = set(rows), set(labels)
    cells = []
    for r in logged + named:
        if _state(r["correct"]) is None or r["model"] not in shown or r["config"] not in wanted:
            continue
        score = number(r["score"])
        text = _answer(r) if value == "confidence" else ("–" if score is None else f"{score:.2f}")
        cells.append({"model": r["model"], "config": r["config"], "state": _state(r["correct"]),
                      "value": number(r[value]), "text": text})  # fmt: skip
    return {"cells": cells, "rows": rows, "order": list(labels), "value": value}


def trajectory_points(
    logged: list[Record], reruns: list[Record], models: list[str], labels: list[str], *, fill: bool = False
) -> dict:
    """Each model's confidence (or score) per configuration, with its live re-runs on its own line.

    Returns ``{"points", "order", "series", "value", "axis"}``. A point: ``series`` (the model; ``<model> ·
    other protocols`` for configurations on no ladder), ``config``, ``value``, ``state``, ``answer``, ``kind``
    (``ladder``, ``other``, ``rerun``, or ``joint``: a logged point repeated as the end of a dashed segment,
    never a marker of its own), ``line`` (the solid line it is joined along: a model's budget ladder,
    ``backend.scope.ladders``), ``dash`` (the dashed segment it belongs to) and ``run``.

    A re-run is its model's point (same series and colour, a star). It is an overlay (docs/metrics.md:
    re-runs are never counted unless ``--include-reruns``), so a dashed segment joins it to the model's line:
    to the logged answer at its own configuration (a repeat, another seed), else to the logged steps either
    side of it on its ladder (a budget not on the grid), else, for a configuration on no ladder (another
    policy or seed), to the logged step with its frame count, beside which it is placed on the axis. With
    ``fill`` (re-runs included) a re-run where its model logged nothing fills that step of the solid line.
    """
    value, axis = value_column(logged + reruns)
    lines, alone = ladders(labels)
    where = {c: k for k, ladder in enumerate(lines) for c in ladder}
    points: list[dict] = []
    series: list[str] = []

    def add(r: dict, name: str, kind: str, line: str | None = None, dash: str | None = None) -> bool:
        if _state(r["correct"]) is None or number(r[value]) is None:
            return False
        if name not in series:
            series.append(name)
        points.append({"series": name, "config": r["config"], "value": number(r[value]), "state": _state(r["correct"]),
                       "answer": _answer(r), "kind": kind, "line": line, "dash": dash, "run": r["run"]})  # fmt: skip
        return True

    # Split once per model (a filter per model over the rows is what pandas' version paid 80-150 ms an item for).
    mine: dict[str, dict[str, dict]] = {}
    for r in logged:
        mine.setdefault(r["model"], {}).setdefault(r["config"], r)
    live: dict[str, list[dict]] = {}
    for r in reruns:
        live.setdefault(r["model"], []).append(r)
    placed: dict[str, str] = {}  # a re-run's configuration on no ladder -> the step it is drawn beside
    for model in [m for m in models if m in mine or m in live]:
        own = mine.get(model, {})
        for config, r in own.items():
            if config in where:
                add(r, model, "ladder", f"{model}\x1f{where[config]}")
        for config, r in own.items():
            if config in alone:
                add(r, f"{model} · other protocols", "other")
        for r in live.get(model, []):
            config = r["config"]
            if fill and config not in own and config in where:
                add(r, model, "rerun", f"{model}\x1f{where[config]}")
                continue
            anchors = _anchors(config, own, lines, where)
            dash = f"{model}\x1f{RERUN}\x1f{config}\x1f{r['run']}"
            if add(r, model, "rerun", dash=dash if anchors else None):
                for anchor in anchors:
                    add(own[anchor], model, "joint", dash=dash)
                if config in alone and anchors:
                    placed.setdefault(config, anchors[0])
    order = [c for ladder in lines for c in ladder]  # a ladder's steps side by side, other protocols after
    for config in alone:
        if config in placed:
            order.insert(order.index(placed[config]) + 1, config)
        else:
            order.append(config)
    return {"points": points, "order": order, "series": series, "value": value, "axis": axis}


def _anchors(config: str, own: dict[str, dict], lines: list[list[str]], where: dict[str, int]) -> list[str]:
    """The logged configurations a re-run at ``config`` is joined to by a dashed segment (``trajectory_points``)."""
    if config in own:
        return [config]
    if config in where:
        ladder = lines[where[config]]
        k = ladder.index(config)
        before = [c for c in ladder[:k] if c in own]
        after = [c for c in ladder[k + 1 :] if c in own]
        return before[-1:] + after[:1]
    frames = configs.parse(config).frames
    return [c for c in own if c in where and configs.parse(c).frames == frames][:1]


def shown_runs(responses: list[Record], run: str | None) -> tuple[list[Record], tuple[RunChoice, ...]]:
    """(``responses`` less the logged rows of runs not shown, the cells of this item holding several runs).

    A cell (model, config) ingested under several ``--run`` names shows one run, as a matrix does
    (``backend.scope.runs``): ``run`` where the cell holds it, else ``main``, else the run written first.
    Live re-runs are kept: they are drawn apart from the logged answers."""
    cells: dict[tuple[str, str], list[int]] = {}  # each logged cell's rows, first written first (the store's order)
    logged = [k for k, r in enumerate(responses) if not r["live_rerun"]]
    for k in sorted(logged, key=lambda k: _written(responses[k])):
        cells.setdefault((responses[k]["model"], responses[k]["config"]), []).append(k)
    if all(len(rows) < 2 for rows in cells.values()):
        return responses, ()
    choices: list[RunChoice] = []
    hidden: set[int] = set()
    for (model, config), rows in cells.items():
        names = tuple(dict.fromkeys(_run(responses[k]) for k in rows))
        if len(names) < 2:
            continue
        shown = run if run is not None and run in names else MAIN if MAIN in names else names[0]
        choices.append(RunChoice(str(model), str(config), names, shown))
        hidden.update(k for k in rows if _run(responses[k]) != shown)
    rank = {c: k for k, c in enumerate(configs.order(list({c.config for c in choices})))}
    choices.sort(key=lambda c: (c.model, rank[c.config]))
    return [r for k, r in enumerate(responses) if k not in hidden], tuple(choices)


def _run(r: Record) -> str:
    """A row's run name; a row written without one is ``main``'s, as in a matrix."""
    return MAIN if r["run"] is None else str(r["run"])


def _written(r: Record) -> tuple:
    """When a row was written, for sorting: its write sequence (rows without one first), then its time (rows
    without one last)."""
    seq, at = number(r["seq"]), r["written_at"]
    return (-1.0 if seq is None else seq, at is None, at or 0)
