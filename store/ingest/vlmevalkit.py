"""VLMEvalKit predictions (FORMATS.md): ``<model>_<dataset>.xlsx`` / ``.tsv`` / ``.json``, and the
scored ``<model>_<dataset>_score.xlsx`` whose ``score`` is 1, 0 or -1 (-1: the harness could not
parse the prediction; such rows are flagged ``unparseable``).

The dataset name carries the budget: ``Video-MME_8frame`` -> ``8f``. ``_1fps`` datasets sample one
frame per second, so the frame count varies with the video and no label describes it: those need
``--config``. ``_subs`` (subtitles) is recorded in provenance and in the run's settings.

Video-MME rows carry ``index`` (0..2699) but no question id. Video-MME has 900 videos (001..900)
with 3 questions each, and VLMEvalKit keeps the dataset order, so
``question_id = f"{index // 3 + 1:03d}-{index % 3 + 1}"`` (index 0 -> ``001-1``, 5 -> ``002-3``).
Where the ``video`` column is the numeric video id, every row is checked against that mapping.
Other datasets use a ``question_id`` / ``id`` column when present, else ``index``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from store.ingest import gate, workbook
from store.ingest.common import (
    Batch,
    IngestOptions,
    budget_hint,
    fail,
    given_config,
    json_rows,
    load_json,
    make_batch,
    read_text_bytes,
    require_columns,
)

FORMAT = "vlmevalkit"
DATASETS = {"Video-MME": "videomme", "MVBench": "mvbench", "MLVU": "mlvu", "LongVideoBench": "longvideobench"}
_NAME = re.compile(r"^(?P<model>.+?)_(?P<family>" + "|".join(map(re.escape, DATASETS)) + r")(?P<tail>(?:_.*)?)$")
_FRAMES = re.compile(r"_(\d+)frame(?=_|$)")
_FPS = re.compile(r"_(\d+(?:\.\d+)?)fps(?=_|$)")
_SUBS = re.compile(r"_subs(?=_|$)")
ITEM_FIELDS = ["question", "task_type", "video", "duration", "domain", "sub_category"]
SCALAR_FIELDS = ["index", "prediction", "answer", "score", "question_id", "id"]  # one value each (a JSON row)


def parse_name(stem: str) -> dict:
    """``Qwen2-VL-7B_Video-MME_8frame_subs_score`` -> model, dataset, family, frames, fps, subs, scored.

    Empty when the name holds no known dataset.
    """
    scored = stem.endswith("_score")
    m = _NAME.match(stem.removesuffix("_score"))
    if not m:
        return {}
    tail = m["tail"]
    frames, fps = _FRAMES.search(tail), _FPS.search(tail)
    return {
        "model": m["model"],
        "family": m["family"],
        "dataset": m["family"] + tail,
        "frames": int(frames[1]) if frames else None,
        "fps": fps[1] if fps else None,
        "subs": bool(_SUBS.search(tail)),
        "scored": scored,
    }


def read(path: Path, opts: IngestOptions) -> Batch:
    df = _load(path)
    require_columns(path, df.columns, ["index", "prediction", "answer"], "VLMEvalKit predictions")
    name = parse_name(path.stem)
    if not name and not (opts.benchmark and opts.model):
        raise fail(
            path,
            "cannot read model and dataset from the file name (expected <model>_<dataset>.xlsx with dataset "
            f"{', '.join(DATASETS)}); pass --model and --benchmark (and --config)",
        )
    benchmark = opts.benchmark or DATASETS[name["family"]]
    lines = np.arange(len(df)) + 2
    gate.scalars(path, df, [*SCALAR_FIELDS, *ITEM_FIELDS], lines, "row")
    index = pd.Series(gate.numbers(path, df["index"], pd.Series(lines), "index", "row"), index=df.index)
    bad = index.isna() | (index != index.round())
    if bad.any():
        raise fail(path, f"`index` must be an integer, got {df['index'][bad].iloc[0]!r}", lines[bad.argmax()], "row")
    rows = pd.DataFrame({c: df[c].astype("str") for c in ITEM_FIELDS if c in df})
    rows["_line"] = lines
    rows["raw_output"] = df["prediction"].astype("str")
    rows["target"] = df["answer"].astype("str")
    rows["item_id"], key_note = _item_ids(path, df, index.astype("int64"), benchmark, lines)
    if benchmark == "videomme" and "video" in rows and rows["video"].str.fullmatch(r"\d{1,3}").all():
        rows["video"] = rows["video"].str.zfill(3)  # the id other formats give (question 001-2 is on video 001)
    if "candidates" in df:
        options = _options(path, df["candidates"], lines)
        rows["options"] = options
    if "score" in df:
        score = pd.Series(gate.numbers(path, df["score"], pd.Series(lines), "score", "row"), index=df.index)
        rows["harness_correct"] = score.where(score.isin([0, 1]))
        rows["harness_unparseable"] = score == -1
    prov = pd.DataFrame({"index": index.astype("int64"), "subtitles": name.get("subs", False)}, index=df.index)
    if "score" in df:
        prov["harness_score"] = score
    rows["provenance"] = json_rows(prov)
    rows["benchmark"] = benchmark
    rows["model"] = opts.model or name.get("model")
    if opts.config:
        logged = f"{name['frames']}f" if name.get("frames") else None
        config, hint = given_config(path, opts, logged, f"the dataset name {name.get('dataset')}")
    else:
        config, hint = _config(path, name)
    rows["config"] = config
    settings = {
        "dataset": name.get("dataset"),
        "subtitles": name.get("subs", False),
        "scored": name.get("scored", False),
        "item_key": key_note,
        "config_hint": hint,
    }
    return make_batch(path, FORMAT, rows, opts, settings, line_word="row")


def _load(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        workbook.check_workbook(path)  # sizes bounded before openpyxl inflates anything
        try:
            df = pd.read_excel(path, dtype=object)
        except FileNotFoundError:
            raise fail(path, "no such file") from None
        except Exception as exc:  # openpyxl raises several unrelated types for a broken workbook
            raise fail(path, f"not a readable .xlsx workbook ({type(exc).__name__}: {exc})") from None
    elif suffix == ".tsv":
        df = gate.read_csv(path, read_text_bytes(path), delimiter="\t", null_values=[""]).to_pandas()
    else:
        text = read_text_bytes(path).decode("utf-8")
        df = _json_frame(path, load_json(path, text))
    if df.empty:
        raise fail(path, "empty table (no rows)")
    return df


def _json_frame(path: Path, obj: object) -> pd.DataFrame:
    """A list of records, a dict of columns ({col: {row: value}}) or a dict of records ({row: {...}})."""
    if isinstance(obj, list):
        return pd.DataFrame.from_records(obj)
    if isinstance(obj, dict) and obj:
        first = next(iter(obj.values()))
        if isinstance(first, dict) and "prediction" in obj:
            return pd.DataFrame(obj)
        if isinstance(first, dict):
            return pd.DataFrame.from_dict(obj, orient="index")
    raise fail(path, "expected VLMEvalKit predictions: a JSON list of rows or a dict of columns")


def _item_ids(
    path: Path, df: pd.DataFrame, index: pd.Series, benchmark: str, lines: np.ndarray
) -> tuple[pd.Series, str]:
    for col in ("question_id", "id"):
        if col in df and df[col].notna().all():
            return df[col].astype("str"), f"the file's {col} column"
    if benchmark != "videomme":
        return index.astype("str"), "VLMEvalKit index (the file carries no question id)"
    bad = (index < 0) | (index > 2699)
    if bad.any():
        raise fail(path, f"Video-MME index {int(index[bad].iloc[0])} is outside 0..2699", lines[bad.argmax()], "row")
    video = (index // 3 + 1).map("{:03d}".format)
    if "video" in df and df["video"].astype("str").str.fullmatch(r"\d{1,3}").all():
        given = df["video"].astype("str").str.zfill(3)
        off = given != video
        if off.any():
            i = off.argmax()
            raise fail(
                path,
                f"index {int(index.iloc[i])} maps to Video-MME video {video.iloc[i]} but the row's video is "
                f"{given.iloc[i]}: the file is not in Video-MME dataset order",
                lines[i],
                "row",
            )
    ids = video + "-" + (index % 3 + 1).astype("str")
    return ids, "Video-MME: question_id = f'{index//3+1:03d}-{index%3+1}' (dataset order, 3 questions per video)"


def _options(path: Path, candidates: pd.Series, lines: np.ndarray) -> pd.Series:
    """``candidates`` (a list, or its Python repr) -> JSON list, parsed once per distinct value."""
    out = {}
    for value in candidates.dropna().map(str).unique():
        try:
            parsed = ast.literal_eval(value) if value.strip()[:1] in "[(" else None
        except (ValueError, SyntaxError, MemoryError, RecursionError):  # the parser on deep nesting
            parsed = None
        if not isinstance(parsed, (list, tuple)):
            line = lines[(candidates.map(str) == value).to_numpy().argmax()]
            raise fail(path, f"`candidates` is not a list: {value[:80]!r}", line, "row")
        out[value] = json.dumps([str(o) for o in parsed], ensure_ascii=False)
    return candidates.astype("str").map(out).astype("str")


def _config(path: Path, name: dict) -> tuple[str, str | None]:
    """(label, how it was inferred when not from the dataset name): the dataset's ``_8frame``,
    else a budget the file's or folder's name states unambiguously."""
    if name.get("frames"):
        return f"{name['frames']}f", None
    if name.get("fps"):
        raise fail(
            path,
            f"dataset {name['dataset']} samples {name['fps']} frame(s) per second, so the frame count varies with "
            "the video and no label describes it; pass --config, e.g. --config 64f/fps-1",
        )
    hint = budget_hint(path)
    if hint is None:
        raise fail(
            path,
            "neither the dataset name (like _8frame) nor the file or folder name states a single frame budget; pass --config",
        )
    return hint[0], f"config {hint[0]} from {hint[1]}"
