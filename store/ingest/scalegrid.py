"""The "Stable Curves, Unstable Items" release (FORMATS.md).

* ``labels/per_item.csv`` (long): ``sample_id, model, split, config, frame_count, pixel_count,
  predicted_option, ground_truth_option, correct, source_tag, protocol_note``. ``correct`` is the
  release's verdict and is used as given; ``source_tag`` / ``protocol_note`` are kept (a non-empty
  note flags the row ``protocol-note``). ``pixel_count`` is per frame.
* ``<Model>_<Split>_predictions_wide.csv``: ``sample_id`` plus one column per config holding the
  predicted letter, empty = no answer = wrong (flagged ``no-answer``). No ground truth inside: the
  answers file (``--answers``: ``question_id, answer`` and optionally ``duration, task_type,
  domain, sub_category``) supplies targets and item metadata, and must cover every item.

Config names go through ``store.configs.from_scalegrid``; the benchmark follows the split
(``V1_*`` / ``V2_*`` -> ``videomme``, ``MLVU`` -> ``mlvu``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from store import configs
from store.answers import LETTERS
from store.ingest import gate
from store.ingest.common import Batch, IngestOptions, fail, json_rows, make_batch, read_text_bytes, require_columns

FORMAT = "scalegrid"
PER_ITEM_COLUMNS = ["sample_id", "model", "split", "config", "predicted_option", "ground_truth_option", "correct"]
_WIDE_NAME = re.compile(r"^(?P<model>.+)_(?P<split>V\d+_[A-Za-z]+|MLVU)_predictions_wide$")
ANSWER_METADATA = ["duration", "task_type", "domain", "sub_category"]
N_LETTERS = len(LETTERS)  # the release's predictions are letters A-H


def benchmark_of_split(split: pd.Series) -> pd.Series:
    """V1_short / V2_medium -> videomme; MLVU -> mlvu; anything else -> missing."""
    s = split.astype("str")
    out = pd.Series(
        np.where(s.str.match(r"^V\d+_"), "videomme", np.where(s.str.upper() == "MLVU", "mlvu", None)),  # type: ignore[call-overload]  # numpy's stubs take no None scalar
        index=split.index,
    )
    return out.astype("str")


def is_wide_header(columns: list[str]) -> bool:
    """``sample_id`` then only scale-grid config names."""
    if len(columns) < 2 or columns[0] != "sample_id":
        return False
    try:
        for c in columns[1:]:
            configs.from_scalegrid(c)
    except configs.ConfigLabelError:
        return False
    return True


def _csv(path: Path) -> pd.DataFrame:
    """Every cell as text, empty = missing; a row cut short or too long is refused with its line."""
    table = gate.read_csv(path, read_text_bytes(path), null_values=[""])
    if table.num_rows == 0:
        raise fail(path, "empty table (a header and no rows)")
    return table.to_pandas()


def read(path: Path, opts: IngestOptions) -> Batch:
    if _WIDE_NAME.match(path.stem) or path.name.endswith("_predictions_wide.csv"):
        return read_wide(path, opts)
    return read_per_item(path, opts)


def read_per_item(path: Path, opts: IngestOptions) -> Batch:
    df = _csv(path)
    require_columns(path, df.columns, PER_ITEM_COLUMNS, "the scale-grid per_item.csv")
    lines = np.arange(len(df)) + 2
    correct = pd.Series(gate.numbers(path, df["correct"], pd.Series(lines), "correct"))
    bad = ~correct.isin([0, 1])
    if bad.any():
        raise fail(
            path, f"`correct` must be 0 or 1, got {df['correct'][bad].iloc[0]!r}", lines[bad.to_numpy().argmax()]
        )
    rows = pd.DataFrame(
        {
            "_line": lines,
            "model": df["model"],
            "split": df["split"],
            "item_id": df["sample_id"],
            "config": df["config"],
            "raw_output": df["predicted_option"],
            "target": df["ground_truth_option"],
            "correct": correct.astype("int8"),
            "n_options": N_LETTERS,
            "frames": df["frame_count"] if "frame_count" in df else np.nan,  # checked by the gate
            "pixels": df["pixel_count"] if "pixel_count" in df else np.nan,
            "source_tag": df.get("source_tag"),
            "protocol_note": df.get("protocol_note"),
        }
    )
    rows["benchmark"] = opts.benchmark or benchmark_of_split(rows["split"])
    _require_benchmark(path, rows)
    prov = df[[c for c in ("frame_count", "pixel_count") if c in df]]
    if not prov.empty:
        rows["provenance"] = json_rows(prov)
    return make_batch(path, FORMAT, rows, opts, {"layout": "per_item"})


def read_wide(path: Path, opts: IngestOptions) -> Batch:
    df = _csv(path)
    if not is_wide_header(list(df.columns)):
        raise fail(path, f"expected `sample_id` then scale-grid config columns, got: {', '.join(df.columns)}")
    if opts.answers is None:
        raise fail(
            path, "the wide scale-grid CSV has no ground truth; pass --answers FILE (columns question_id, answer)"
        )
    name = _WIDE_NAME.match(path.stem)
    model = opts.model or (name["model"] if name else None)
    split = opts.split or (name["split"] if name else None)
    if not model or not split:
        raise fail(
            path,
            "cannot read model and split from the file name (<Model>_<Split>_predictions_wide.csv); pass --model and --split",
        )
    answers = _answers(Path(opts.answers))
    lines = pd.Series(np.arange(len(df)) + 2, index=df["sample_id"])
    missing = df.loc[~df["sample_id"].isin(answers.index), "sample_id"]
    if len(missing):
        raise fail(
            path,
            f"{len(missing)} item(s) are not in the answers file {opts.answers}, e.g. {', '.join(missing.head(5))}",
        )
    long = df.melt(id_vars="sample_id", var_name="config", value_name="raw_output")
    long = long.join(answers, on="sample_id")
    rows = long.rename(columns={"sample_id": "item_id", "answer": "target"})
    rows["_line"] = rows["item_id"].map(lines).to_numpy()
    rows["model"], rows["split"], rows["n_options"] = model, split, N_LETTERS
    bench = opts.benchmark or benchmark_of_split(pd.Series([split])).iloc[0]
    rows["benchmark"] = bench
    _require_benchmark(path, rows)
    settings = {"layout": "wide", "answers": str(opts.answers), "configs": list(df.columns[1:])}
    return make_batch(path, FORMAT, rows.sort_values("_line", kind="stable"), opts, settings)


def _answers(path: Path) -> pd.DataFrame:
    """The answers file, indexed by question id, with the item metadata it carries."""
    df = _csv(path)
    require_columns(path, df.columns, ["question_id", "answer"], "an answers file")
    dup = df["question_id"].duplicated(keep=False)
    conflicting = df[dup].groupby("question_id")["answer"].nunique() > 1
    if conflicting.any():
        raise fail(path, f"question(s) with two different answers: {', '.join(conflicting[conflicting].index[:5])}")
    keep = ["question_id", "answer"] + [c for c in ANSWER_METADATA if c in df]
    return df[keep].drop_duplicates("question_id").set_index("question_id")


def _require_benchmark(path: Path, rows: pd.DataFrame) -> None:
    bad = rows["benchmark"].isna()
    if bad.any():
        split = rows.loc[bad, "split"].iloc[0]
        raise fail(
            path,
            f"split {split!r} names no known benchmark (V1_*/V2_* = videomme, MLVU = mlvu); pass --benchmark",
            rows.loc[bad, "_line"].iloc[0],
        )
