"""The official Video-MME result JSON (FORMATS.md): a list of videos, each with its ``questions``.

Some copies spell the video fields ``duration_category`` / ``video_category`` /
``video_subcategory`` instead of ``duration`` / ``domain`` / ``sub_category``; both are read. Real
files may carry trailing commas, which are removed (outside strings) before parsing. The file
names neither the model nor the budget: ``--model`` and ``--config`` are required.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from store.ingest.common import Batch, IngestOptions, fail, load_json, make_batch, read_text_bytes

FORMAT = "videomme"
VIDEO_FIELDS = {
    "duration": ("duration", "duration_category"),
    "domain": ("domain", "video_category"),
    "sub_category": ("sub_category", "video_subcategory"),
}
# A JSON string (kept as is) or a comma followed only by white space and a closing bracket.
_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[\]}])')


def strip_trailing_commas(text: str) -> str:
    """Remove commas before ``]`` / ``}``, leaving string contents untouched."""
    return _TRAILING_COMMA.sub(lambda m: m[1] if m[1] is not None else m[2], text)


def _video_reference(video: dict) -> str | None:
    """The file's name for the video: ``videoID`` (the YouTube id its file is named by), else a
    ``video_id`` that is not Video-MME's number (``001`` names no file; ingest then implies ``001``
    from the question ids, as before)."""
    if video.get("videoID"):
        return str(video["videoID"])
    vid = video.get("video_id")
    return None if vid is None or str(vid).isdigit() else str(vid)


def looks_like(head: str) -> bool:
    return head.lstrip().startswith("[") and '"questions"' in head


def read(path: Path, opts: IngestOptions) -> Batch:
    text = strip_trailing_commas(read_text_bytes(path).decode("utf-8"))
    videos = load_json(path, text)
    if not isinstance(videos, list) or not all(isinstance(v, dict) and "questions" in v for v in videos):
        raise fail(path, "expected the Video-MME result layout: a list of videos, each with `questions`")
    missing = [flag for flag, value in (("--model", opts.model), ("--config", opts.config)) if not value]
    if missing:
        raise fail(path, f"the Video-MME result JSON names neither model nor budget; pass {' and '.join(missing)}")
    records: list[dict[str, Any]] = []
    for v_no, video in enumerate(videos, 1):
        meta = {col: next((video[k] for k in keys if k in video), None) for col, keys in VIDEO_FIELDS.items()}
        meta["video"] = _video_reference(video)
        for q_no, q in enumerate(video["questions"], 1):
            if "question_id" not in q:
                raise fail(
                    path, f"video {v_no} ({video.get('video_id', meta['video'])}), question {q_no}: no question_id"
                )
            options = q.get("options") or []
            records.append(
                meta
                | {
                    "_line": len(records) + 1,
                    "item_id": str(q["question_id"]),
                    "task_type": q.get("task_type"),
                    "question": q.get("question"),
                    "options": json.dumps(options, ensure_ascii=False) if options else None,
                    "n_options": len(options) or None,
                    "target": q.get("answer"),
                    "raw_output": q.get("response"),
                }
            )
    rows = pd.DataFrame.from_records(records)
    rows["benchmark"] = opts.benchmark or "videomme"
    return make_batch(path, FORMAT, rows, opts, {"videos": len(videos)}, line_word="question")
