"""Scores and verdicts in the forms evaluation tools write them (docs/formats.md, "Scores").

Open-ended results rarely arrive as a [0, 1] score beside a 0/1 ``correct``: an LLM judge writes a
verdict word (``"Correct"``, ``"no"``) and a rating on its own scale (1-5), and many harnesses write
only the generated text and the reference. So, at ingest:

* a verdict word is read as ``correct`` (:data:`VERDICTS`, any case);
* a ``score`` on a declared scale (``--score-scale MIN:MAX``) is mapped linearly onto [0, 1]; a value
  outside the scale is refused, never clipped;
* an open-ended response with a prediction and a reference but no score gets its Token-F1
  (``store.token_f1``, the best over its references);
* each score's origin is stored per row in ``score_source`` (:data:`SOURCES`): ``file`` (the file's
  [0, 1] score as given), ``judge`` (a rating mapped from its declared scale), ``token_f1``
  (computed here). Rows stored before the column existed read as null (unknown).

Work is done once per distinct value (verdict spellings, (prediction, reference) pairs).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from store.errors import UserError
from store.ingest.gate import fail, numbers
from store.token_f1 import token_f1

SOURCES = ("file", "judge", "token_f1")
# Verdict spellings read as ``correct`` (after trimming and lower-casing); 1.0/0.0 are how a
# spreadsheet writes an integer column with gaps.
VERDICTS = {
    "1": 1, "0": 0, "1.0": 1, "0.0": 0, "true": 1, "false": 0,
    "correct": 1, "incorrect": 0, "yes": 1, "no": 0,
}  # fmt: skip
_SHOWN = "true/false, correct/incorrect, yes/no"

Scale = tuple[float, float]


def parse_scale(text: str | None) -> Scale | None:
    """``"1:5"`` -> (1.0, 5.0); None for none; one line (UserError) for anything else."""
    if text is None:
        return None
    low, colon, high = str(text).partition(":")
    try:
        scale = (float(low), float(high)) if colon else None
    except ValueError:
        scale = None
    if scale is None or not all(map(math.isfinite, scale)) or scale[0] >= scale[1]:
        raise UserError(f"--score-scale {text!r}: expected MIN:MAX, two finite numbers with MIN < MAX (e.g. 1:5)")
    return scale


def verdicts(path: Path, values: pd.Series, lines: pd.Series, word: str) -> pd.Series:
    """A ``correct`` column (bool, 0/1 or a verdict word) as Int8; an unknown word is refused with
    its line; an empty one (``""``, null) is no verdict and stays missing (docs/metrics.md, "Empty verdicts": counted at ingest). The spelling is checked once per distinct value (factorize), not once per row."""
    if values.dtype == bool:
        return values.astype("int8")
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    spelled = pd.Series(uniques, dtype="object").astype("str").str.strip().str.lower()
    mapped = spelled.map(VERDICTS)
    blank = (spelled == "").to_numpy()  # a judge that wrote "" gave no verdict, as an empty CSV cell: missing
    codes = np.where(np.isin(codes, np.flatnonzero(blank)), -1, codes)
    bad = np.flatnonzero(mapped.isna().to_numpy() & ~blank)
    if bad.size:
        i = int(np.flatnonzero(np.isin(codes, bad))[0])
        shown = str(values.iloc[i])
        raise fail(path, f"`correct` must be 0 or 1, got {shown!r} ({_SHOWN} also read)", lines.iloc[i], word)
    out = np.where(codes >= 0, mapped.to_numpy(dtype="float64")[np.maximum(codes, 0)], np.nan)
    return pd.Series(out, index=values.index).astype("Int8")


def declared(path: Path, rows: pd.DataFrame, scale: Scale | None, word: str) -> None:
    """The file's ``score`` as a fraction, with its ``score_source`` (in place): mapped from ``scale``
    (``judge``) or as given (``file``; the gate then checks it lies in [0, 1])."""
    if "score" not in rows:
        if scale is not None:
            raise fail(path, f"--score-scale {scale[0]:g}:{scale[1]:g} is given but the file has no `score`")
        return
    v = numbers(path, rows["score"], rows["_line"], "score", word)
    low, high = scale or (0.0, 1.0)
    outside = ~np.isnan(v) & ~((v >= low) & (v <= high))  # inf and 1e308 fail the range too
    if outside.any():
        row = int(np.argmax(outside))
        shown = rows["score"].iloc[row]
        problem = (
            f"`score` {shown!r} is outside the declared --score-scale {low:g}:{high:g}"
            if scale
            else f"`score` must be a number in [0, 1] or empty, got {shown!r} (declare another scale: --score-scale MIN:MAX)"
        )
        raise fail(path, problem, rows["_line"].iloc[row], word)
    rows["score"] = (v - low) / (high - low)
    source = np.full(len(v), "judge" if scale else "file", dtype=object)
    source[np.isnan(v)] = None
    rows["score_source"] = source


def fill_token_f1(rows: pd.DataFrame, open_ended: np.ndarray) -> None:
    """Token-F1 of ``raw_output`` against ``target`` (the reference) where ``open_ended`` rows have
    both and no score (in place); computed once per distinct (prediction, reference) pair."""
    score = rows["score"].to_numpy(dtype="float64", copy=True) if "score" in rows else np.full(len(rows), np.nan)
    todo = open_ended & np.isnan(score) & rows["raw_output"].notna().to_numpy() & rows["target"].notna().to_numpy()
    if not todo.any():
        return
    pairs = pd.MultiIndex.from_arrays([rows["raw_output"][todo].astype("str"), rows["target"][todo].astype("str")])
    codes, uniq = pd.factorize(pairs)
    score[todo] = np.asarray([token_f1(pred, ref) for pred, ref in uniq], dtype="float64")[codes]
    source = (
        rows["score_source"].to_numpy(dtype=object, copy=True) if "score_source" in rows else np.full(len(rows), None)
    )
    source[todo] = "token_f1"
    rows["score"], rows["score_source"] = score, source
