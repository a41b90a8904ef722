"""The texts of one open-ended item side by side: the reference and each configuration's answer, diffed.

A generated answer is what a researcher reads across budgets; its score alone hides why it moved. Each
row pairs the stored text with its stored score and a word-level diff against the reference
(``backend.scope.textdiff``), and marks the model's best and worst logged configurations, so the
Inspector and ``trajaudit inspect --json`` show the same record (``texts``).
"""

from __future__ import annotations

import json

import pandas as pd

from backend.contracts.base import unset
from backend.contracts.inspector import InspectedItem, ItemTexts, TextRow
from backend.scope.textdiff import word_diff


def trajectory_rows(responses: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(logged, reruns) of ``item_detail``'s responses, drawn apart on the inspector's charts.

    ``logged``: one row per (model, config) without live re-runs, the run the matrix uses first
    (``main`` when present). ``reruns``: the newest live re-run per (model, config).
    """
    live = responses["live_rerun"].to_numpy(dtype=bool)
    logged = responses.loc[~live].drop_duplicates(["model", "config"], keep="first")
    reruns = (
        responses.loc[live]
        .sort_values("seq", kind="stable", na_position="first")
        .drop_duplicates(["model", "config"], keep="last")
    )
    return logged.reset_index(drop=True), reruns.reset_index(drop=True)


def is_open_ended(item: InspectedItem, responses: pd.DataFrame) -> bool:
    """Open-ended by the item's ``answer_type``; where a store records none, an item without options whose
    responses carry scores."""
    kind = unset(item.answer_type)
    if isinstance(kind, str):
        return kind == "open"
    return not item.options and "score" in responses and bool(responses["score"].notna().any())


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


def ranks(logged: pd.DataFrame) -> pd.Series:
    """ "best" / "worst" for each model's logged rows at its highest / lowest stored score (every tied row);
    None elsewhere, and for a model whose scored configurations all score the same."""
    score = pd.to_numeric(logged["score"], errors="coerce")
    by = score.groupby(logged["model"])
    high, low = by.transform("max"), by.transform("min")
    spread = high > low
    rank = pd.Series([None] * len(logged), index=logged.index, dtype=object)
    rank[spread & score.eq(low)] = "worst"
    rank[spread & score.eq(high)] = "best"
    return rank


def item_texts(item: InspectedItem, responses: pd.DataFrame) -> ItemTexts | None:
    """``inspect --json``'s ``texts`` from ``item_detail``'s record: None unless the item is open-ended.

    Rows: each model's logged trajectory (one run per configuration, the matrix's; ``trajectory_rows``)
    in grid order, ranked; then its newest live re-run per configuration (shown, never ranked).
    """
    if not is_open_ended(item, responses):  # before anything else: most items are multiple choice
        return None
    refs = references(item)
    logged, reruns = trajectory_rows(responses)
    logged = logged.assign(rank=ranks(logged))
    rows = pd.concat([logged, reruns.assign(rank=None)], ignore_index=True)
    text = rows["raw_output"].where(rows["raw_output"].notna(), rows["answer"])
    out: list[TextRow] = [
        TextRow(
            model=str(model),
            config=str(config),
            run=str(run),
            live_rerun=bool(live),
            text=None if pd.isna(answer) else str(answer),
            score=None if pd.isna(score) else float(score),
            rank=rank,
            diff=word_diff(None if pd.isna(answer) else str(answer), refs),
        )
        for model, config, run, live, answer, score, rank in zip(
            rows["model"],
            rows["config"],
            rows["run"],
            rows["live_rerun"],
            text,
            rows["score"],
            rows["rank"],
            strict=True,
        )
    ]
    return ItemTexts(references=refs, rows=out)
