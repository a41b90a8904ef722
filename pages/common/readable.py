"""A report's rows as a table a reader reads: headers in plain words, a dash where a value is missing.

``st.dataframe`` draws a missing value as a grey "None" and a column under its key (``n_terminal``): both read
as leaks of the code. The words and the cells come from ``backend.present.tables`` (``header``, ``dashed``), so
every table of Audits, Policies, Compare and the "Why these items?" panel reads in one style; the page's own
column settings (formats, help, widths) are kept, and a label it gives explicitly (a model's name) stays as it is.
The CSV downloads keep the report's keys: they are read by programs.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from backend.present import tables

DRAWN = ("link", "checkbox", "progress", "image")  # column kinds that draw a missing value themselves (no dash)


def prepare(frame: pd.DataFrame, column_config: dict[str, Any] | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The frame with dashes (``tables.dashed``) and a column config labelling every column in plain words: a
    numeric setting on a column that became text is swapped for a text column (its numbers are written in the
    setting's format by ``tables.cell_text``)."""
    given = column_config or {}
    formats = {col: cfg["type_config"].get("format") for col, cfg in given.items() if _kind(cfg) == "number"}
    drawn = [col for col, cfg in given.items() if _kind(cfg) in DRAWN and col in frame]  # their own empty cell
    shown, texts = tables.dashed(frame.drop(columns=drawn), formats)
    shown = shown.assign(**{col: frame[col] for col in drawn})[list(frame.columns)]
    config: dict[str, Any] = {}
    for col in frame.columns:
        cfg = given.get(col)
        if cfg is None or isinstance(cfg, str):
            config[col] = cfg or tables.header(col)
            continue
        label = cfg.get("label") or tables.header(col)
        if col in texts and _kind(cfg) == "number":
            cfg = st.column_config.TextColumn(label, help=cfg.get("help"), width=cfg.get("width"))
        config[col] = {**cfg, "label": label}
    return shown, config


def table(frame: pd.DataFrame, column_config: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """``st.dataframe`` of ``frame`` read as ``prepare`` makes it (no index)."""
    shown, config = prepare(frame, column_config)
    st.dataframe(shown, hide_index=True, column_config=config, **kwargs)


def _kind(cfg: Any) -> str | None:
    """A column setting's type ("number", "text", ...), None for a plain label."""
    return cfg.get("type_config", {}).get("type") if isinstance(cfg, dict) else None
