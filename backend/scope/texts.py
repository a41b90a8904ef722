"""The texts of one open-ended item side by side: the reference and each configuration's answer, diffed.

A generated answer is what a researcher reads across budgets; its score alone hides why it moved. Each
row pairs the stored text with its stored score and a word-level diff against the reference
(``backend.scope.textdiff``), and marks the model's best and worst logged configurations, so the
Inspector and ``trajaudit inspect --json`` show the same record (``texts``).
"""

from __future__ import annotations

import json
from typing import Literal

from backend.contracts.base import unset
from backend.contracts.inspector import InspectedItem, ItemTexts, TextRow
from backend.scope.textdiff import word_diff
from store.rows import Record


def number(x: object) -> float | None:
    """A stored number as a float; None where it is missing (None, or NaN: the only value unequal to itself)."""
    return None if x is None or x != x else float(x)  # type: ignore[arg-type]  # a missing cell or a number


def trajectory_rows(responses: list[Record]) -> tuple[list[Record], list[Record]]:
    """(logged, reruns) of ``item_detail``'s responses, drawn apart on the inspector's charts.

    ``logged``: one row per (model, config) without live re-runs, the run the matrix uses first
    (``main`` when present). ``reruns``: the newest live re-run per (model, config).
    """
    logged, seen = [], set()
    for r in responses:
        if not r["live_rerun"] and (r["model"], r["config"]) not in seen:
            seen.add((r["model"], r["config"]))
            logged.append(r)
    # Oldest first (rows without a write sequence first), then the last one of each cell kept, in that order.
    live = sorted((r for r in responses if r["live_rerun"]), key=lambda r: _written(number(r["seq"])))
    newest = {(r["model"], r["config"]): k for k, r in enumerate(live)}
    return logged, [r for k, r in enumerate(live) if newest[(r["model"], r["config"])] == k]


def _written(seq: float | None) -> tuple[bool, float]:
    return seq is not None, seq or 0.0


def is_open_ended(item: InspectedItem, responses: list[Record]) -> bool:
    """Open-ended by the item's ``answer_type``; where a store records none, an item without options whose
    responses carry scores."""
    kind = unset(item.answer_type)
    if isinstance(kind, str):
        return kind == "open"
    return not item.options and any(number(r.get("score")) is not None for r in responses)


def references(item: InspectedItem) -> list[str]:
    """The item's references: its stored JSON list, else its target (an open-ended target is the reference)."""
    raw = unset(item.references)
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw
        listed = parsed if isinstance(parsed, list) else [parsed]
        refs = [str(r) for r in listed if r is not None]
        if refs:
            return refs
    target = unset(item.target)
    return [target] if isinstance(target, str) and target else []


Rank = Literal["best", "worst"] | None


def ranks(logged: list[Record]) -> list[Rank]:
    """ "best" / "worst" for each model's logged rows at its highest / lowest stored score (every tied row);
    None elsewhere, and for a model whose scored configurations all score the same."""
    scores = [number(r["score"]) for r in logged]
    by: dict[str, list[float]] = {}
    for r, score in zip(logged, scores, strict=True):
        if score is not None:
            by.setdefault(r["model"], []).append(score)
    span = {model: (min(s), max(s)) for model, s in by.items() if max(s) > min(s)}  # (low, high) where they differ
    out: list[Rank] = []
    for r, score in zip(logged, scores, strict=True):
        low, high = span.get(r["model"], (None, None))
        out.append(
            "best" if score is not None and score == high else "worst" if score is not None and score == low else None
        )
    return out


def _text(value: object) -> str | None:
    return None if value is None or value != value else str(value)  # NaN: a DataFrame's missing cell


def item_texts(item: InspectedItem, responses: list[Record]) -> ItemTexts | None:
    """``inspect --json``'s ``texts`` from ``item_detail``'s record: None unless the item is open-ended.

    Rows: each model's logged trajectory (one run per configuration, the matrix's; ``trajectory_rows``)
    in grid order, ranked; then its newest live re-run per configuration (shown, never ranked).
    """
    if not is_open_ended(item, responses):  # before anything else: most items are multiple choice
        return None
    refs = references(item)
    logged, reruns = trajectory_rows(responses)
    rows: list[tuple[Record, Rank]] = [*zip(logged, ranks(logged), strict=True), *((r, None) for r in reruns)]
    out: list[TextRow] = []
    for r, rank in rows:
        text = _text(r["raw_output"])
        text = text if text is not None else _text(r["answer"])
        out.append(
            TextRow(
                model=str(r["model"]),
                config=str(r["config"]),
                run=str(r["run"]),
                live_rerun=bool(r["live_rerun"]),
                text=text,
                score=number(r["score"]),
                rank=rank,
                diff=word_diff(text, refs),
            )
        )
    return ItemTexts(references=refs, rows=out)
