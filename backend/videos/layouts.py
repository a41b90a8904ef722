"""Each benchmark's published annotation files -> (item id, video file relative to the dataset folder).

The item ids are the ones the store's ingesters give the same items (``store/ingest``), so a link
covers the responses already stored:

* Video-MME: ``question_id`` (``001-1``); the file is named by the YouTube ``videoID``, never by
  ``video_id`` (lmms-eval ``tasks/videomme/utils.py``: ``data/<videoID>.mp4``, then ``.MP4``, ``.mkv``).
* MLVU: lmms-eval logs ``question_id = doc["question"]`` (``tasks/mlvu/utils.py``), so the question
  text, unless the entry carries a ``question_id``; the file is ``video/<n>_<task>/<video_name>``
  (the published JSON spells the field ``video``).
* MVBench: lmms-eval logs no id, so ingest composes ``<task>/<video>#<sha1(question)[:8]>`` with
  the task ``mvbench_<sub_task>`` from the line's doc, or ``<task>/<doc_id>`` (the row of the task's
  JSON) from a line without it; the link takes whichever matches the stored items; the file is
  ``video/<DATA_LIST[sub_task]>/<video>``.
* LongVideoBench: ``id``; the file is ``videos/<video_path>``.

Every reader refuses a folder that is not its layout, annotation files lacking a column, and two
rows for one item id, with one line naming the file (``UserError``).
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from store.errors import UserError

# lmms-eval ``tasks/mvbench/utils.py``: sub-task -> folder of its videos under MVBench's ``video/``.
MVBENCH_FOLDERS = {
    "object_interaction": "star/Charades_segment",
    "action_sequence": "star/Charades_segment",
    "action_prediction": "star/Charades_segment",
    "action_localization": "sta/sta_video_segment",
    "moving_count": "clevrer/video_validation",
    "fine_grained_pose": "nturgbd_convert",
    "character_order": "perception/videos",
    "object_shuffle": "perception/videos",
    "egocentric_navigation": "vlnqa",
    "moving_direction": "clevrer/video_validation",
    "episodic_reasoning": "tvqa/video_fps3_hq_segment",
    "fine_grained_action": "Moments_in_Time_Raw/videos",
    "scene_transition": "scene_qa/video",
    "state_change": "perception/videos",
    "moving_attribute": "clevrer/video_validation",
    "action_antonym": "ssv2_video_mp4",
    "unexpected_action": "FunQA_test/test",
    "counterfactual_inference": "clevrer/video_validation",
    "object_existence": "clevrer/video_validation",
    "action_count": "perception/videos",
}
ALT_ID = "item_id_by_doc"  # the id ingest composes from a log line without its doc: <task>/<doc_id>
VIDEOMME_PARQUET = "videomme/test-00000-of-00001.parquet"
VIDEOMME_SUFFIXES = (".mp4", ".MP4", ".mkv")
LVB_JSON = "lvb_val.json"


def _require(path: Path, columns, needed: list[str]) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)} (it has: {', '.join(map(str, columns))})")


def _unique(path: Path, ids: pd.Series, what: str, hint: str = "each item must appear once") -> None:
    dup = ids[ids.duplicated()]
    if len(dup):
        raise UserError(f"{path}: {len(dup)} duplicate {what}(s), e.g. {dup.iloc[0]!r}; {hint}")


def _annotation(dataset: Path, rel: str, layout: str) -> Path:
    path = dataset / rel
    if not path.is_file():
        raise UserError(f"{dataset} is not a {layout} layout: {rel} not found")
    return path


def _json_list(path: Path) -> pd.DataFrame:
    """A JSON file holding a list of objects, as a frame."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise UserError(f"{path}: expected a JSON list of objects, one per question")
    return pd.DataFrame.from_records(data)


def first_existing(dataset: Path, stems: pd.Series, suffixes: tuple[str, ...]) -> pd.Series:
    """Per stem, the first ``stem + suffix`` that exists (the first suffix when none does); each
    distinct stem is looked up once (Video-MME asks three questions of every video)."""
    unique = pd.Series(stems.unique())
    out = unique + suffixes[0]
    unresolved = pd.Series(True, index=unique.index)
    for suffix in suffixes:
        found = unresolved & (unique + suffix).map(lambda rel: (dataset / rel).is_file())
        out = out.where(~found, unique + suffix)
        unresolved &= ~found
    return stems.map(dict(zip(unique, out, strict=True)))


def videomme(dataset: Path) -> pd.DataFrame:
    path = _annotation(dataset, VIDEOMME_PARQUET, "Video-MME")
    df = pd.read_parquet(path)
    _require(path, df.columns, ["video_id", "videoID", "question_id"])
    df = df.astype({"video_id": "str", "videoID": "str", "question_id": "str"})
    _unique(path, df["question_id"], "question_id")
    pairs = df[["video_id", "videoID"]].drop_duplicates()
    for col, other in (("video_id", "videoID"), ("videoID", "video_id")):
        clash = pairs[pairs[col].duplicated()]
        if len(clash):
            v = clash[col].iloc[0]
            names = pairs.loc[pairs[col] == v, other].tolist()
            raise UserError(f"{path}: duplicate video ids: {col} {v!r} is given {other} {' and '.join(names)}")
    files = first_existing(dataset, "data/" + df["videoID"], VIDEOMME_SUFFIXES)
    return pd.DataFrame({"item_id": df["question_id"], "file": files})


def mlvu(dataset: Path) -> pd.DataFrame:
    files = sorted((dataset / "json").glob("*_*.json"))
    if not files:
        raise UserError(f"{dataset} is not an MLVU layout: no json/<n>_<task>.json files")
    frames = []
    for path in files:
        df = _json_list(path)
        name = "video_name" if "video_name" in df.columns else "video"
        _require(path, df.columns, ["question", name])
        ids = df["question_id"] if "question_id" in df.columns else df["question"]
        frames.append(
            pd.DataFrame({"item_id": ids.astype("str"), "file": f"video/{path.stem}/" + df[name].astype("str")})
        )
    out = pd.concat(frames, ignore_index=True).drop_duplicates()
    hint = "lmms-eval names MLVU items by their question, so these items cannot be told apart: link them with --paths"
    _unique(dataset / "json", out["item_id"], "question", hint)
    return out


def _question_digest(questions: pd.Series) -> pd.Series:
    return questions.astype("str").map(lambda q: hashlib.sha1(q.encode()).hexdigest()[:8])


def mvbench(dataset: Path) -> pd.DataFrame:
    files = sorted((dataset / "json").glob("*.json"))
    if not files:
        raise UserError(f"{dataset} is not an MVBench layout: no json/<task>.json files")
    unknown = [p.name for p in files if p.stem not in MVBENCH_FOLDERS]
    if unknown:
        raise UserError(
            f"{dataset / 'json'}: {', '.join(unknown)} is not an MVBench task (lmms-eval knows: {', '.join(MVBENCH_FOLDERS)})"
        )
    frames = []
    for path in files:
        df = _json_list(path)
        _require(path, df.columns, ["video", "question"])
        video = df["video"].astype("str")
        task = f"mvbench_{path.stem}"
        ids = f"{task}/" + video + "#" + _question_digest(df["question"])
        by_doc = f"{task}/" + pd.Series(range(len(df)), index=df.index).astype("str")
        frames.append(
            pd.DataFrame({"item_id": ids, "file": f"video/{MVBENCH_FOLDERS[path.stem]}/" + video, ALT_ID: by_doc})
        )
    out = pd.concat(frames, ignore_index=True)
    _unique(dataset / "json", out["item_id"], "video and question")
    return out


def longvideobench(dataset: Path) -> pd.DataFrame:
    path = _annotation(dataset, LVB_JSON, "LongVideoBench")
    df = _json_list(path)
    _require(path, df.columns, ["id", "video_path"])
    df = df.astype({"id": "str", "video_path": "str"})
    _unique(path, df["id"], "id")
    return pd.DataFrame({"item_id": df["id"], "file": "videos/" + df["video_path"]})


LAYOUTS: dict[str, Callable[[Path], pd.DataFrame]] = {
    "videomme": videomme,
    "mlvu": mlvu,
    "mvbench": mvbench,
    "longvideobench": longvideobench,
}


def from_template(items: pd.DataFrame, template: str) -> pd.DataFrame:
    """``template`` (a ``str.format`` over the item's fields, ``{video}.mp4``) per stored item.

    Items whose named field is empty get no file (reported as not linked).
    """
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise UserError(f"--template {template!r}: {exc}") from None
    if not fields:
        raise UserError(f"--template {template!r} names no item field; e.g. '{{video}}.mp4'")
    unknown = [f for f in fields if f not in items.columns]
    if unknown:
        raise UserError(
            f"--template names {', '.join(unknown)}: not an item field (fields: {', '.join(items.columns)})"
        )
    known = items[fields].notna().all(axis=1) & items[fields].astype("str").ne("").all(axis=1)
    rows = items[known]
    files = [template.format(**r) for r in rows[fields].astype("str").to_dict("records")]
    return pd.DataFrame({"item_id": rows["item_id"].astype("str").to_numpy(), "file": files})


def from_paths(path: Path) -> pd.DataFrame:
    """A two-column file (item id, path), comma- or tab-separated, with or without a header line."""
    if not path.is_file():
        raise UserError(f"--paths {path}: not a file")
    try:
        df = pd.read_csv(path, sep=None, engine="python", header=None, dtype="str", keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise UserError(f"--paths {path}: cannot read it as two columns ({str(exc).splitlines()[0]})") from None
    if df.shape[1] != 2:
        raise UserError(f"--paths {path}: expected two columns (item id, path), found {df.shape[1]}")
    df.columns = ["item_id", "file"]
    if df.iloc[0].str.lower().tolist() in (["item_id", "path"], ["item_id", "file"]):
        df = df.iloc[1:]
    empty = df[df["item_id"].eq("") | df["file"].eq("")]
    if len(empty):
        raise UserError(f"--paths {path}: line {empty.index[0] + 1} has an empty item id or path")
    _unique(path, df["item_id"], "item id")
    return df.reset_index(drop=True)
