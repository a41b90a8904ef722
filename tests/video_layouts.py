"""Benchmark folders exactly as published (issue 20): annotation files with their real column names, small
generated clips under the real file names, and an lmms-eval samples log over the same items, so a test
can ingest the log, link the folder and check that the catalog covers every stored item.

Layouts (``../shared/notes/VIDEOS.md``): Video-MME ``videomme/test-00000-of-00001.parquet`` and
``data/<videoID>.mp4``; MLVU ``json/<n>_<task>.json`` and ``video/<n>_<task>/<video>``; MVBench
``json/<task>.json`` and ``video/<DATA_LIST folder>/<video>``; LongVideoBench ``lvb_val.json`` and
``videos/<video_path>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from backend.demo.synthetic import write_clip

OPTIONS = ["A. red", "B. green", "C. blue", "D. grey"]


@dataclass
class Layout:
    """A built benchmark folder: where it is, its clips (relative to it), the log over its items."""

    benchmark: str
    dataset: Path
    clips: list[str]
    samples: list[Path]


def clip(path: Path, n_frames: int = 12, level: int = 0) -> None:
    """A tiny 64 x 48 H.264 clip whose frame ``i`` is grey level ``level + 10 * i`` (so frames are tellable apart)."""
    levels = (level + 10 * np.arange(n_frames)) % 256
    write_clip(path, np.broadcast_to(levels[:, None, None, None], (n_frames, 48, 64, 3)).astype(np.uint8))


def _samples(
    folder: Path, task: str, payload_key: str, docs: list[dict], payloads: list[dict], with_doc: bool = True
) -> Path:
    """``<stamp>_samples_<task>.jsonl`` shaped like lmms-eval's (doc, responses, metric payload); without
    ``with_doc`` each line lacks the ``doc`` (as the shared real Video-MME log does)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"20250101_120000_samples_{task}.jsonl"
    lines = [
        {
            "doc_id": i,
            **({"doc": doc} if with_doc else {}),
            "target": "A",
            "resps": [["A"]],
            "filtered_resps": ["A"],
            payload_key: payload,
            "input": doc["question"] + "\n" + "\n".join(OPTIONS) + "\nAnswer with the option's letter.",
        }
        for i, (doc, payload) in enumerate(zip(docs, payloads))
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def videomme(root: Path, logs: Path) -> Layout:
    """Two videos (``001``, ``002``), three questions each; files named by YouTube id, one as ``.mkv``."""
    videos = [("001", "fFjv93ACGo8", ".mp4"), ("002", "k0ZA_Qb3cdE", ".mkv")]
    rows = [
        {
            "video_id": vid,
            "duration": "short",
            "domain": "Knowledge",
            "sub_category": "Humanity & History",
            "url": f"https://www.youtube.com/watch?v={yt}",
            "videoID": yt,
            "question_id": f"{vid}-{k}",
            "task_type": "Counting Problem",
            "question": f"How many things in video {vid}, question {k}?",
            "options": np.array(OPTIONS),
            "answer": "A",
        }
        for vid, yt, _ in videos
        for k in (1, 2, 3)
    ]
    dataset = root / "Video-MME"
    (dataset / "videomme").mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(dataset / "videomme" / "test-00000-of-00001.parquet")
    clips = [f"data/{yt}{ext}" for _, yt, ext in videos]
    for n, rel in enumerate(clips):
        clip(dataset / rel, n_frames=12 + 6 * n, level=20 * n)
    payloads = [
        {
            "question_id": r["question_id"],
            "duration": r["duration"],
            "category": r["domain"],
            "pred_answer": "A",
            "answer": "A",
        }
        for r in rows
    ]
    docs = [{k: v for k, v in r.items() if k != "options"} for r in rows]
    # No doc, so no videoID: ingest names each item's video by Video-MME's number (``001``), as on real logs.
    samples = _samples(logs, "videomme", "videomme_perception_score", docs, payloads, with_doc=False)
    return Layout("videomme", dataset, clips, [samples])


def mlvu(root: Path, logs: Path) -> Layout:
    """Two tasks' JSON files (the published fields: video, duration, question, candidates, answer, question_type)."""
    dataset = root / "MLVU"
    tasks = {"1_plotQA": ["movie101_66.mp4", "movie101_67.mp4"], "3_ego": ["ego_35.mp4"]}
    docs, clips = [], []
    for task, names in tasks.items():
        entries = [
            {
                "video": name,
                "duration": 240.0,
                "question": f"What happens in {name} ({task})?",
                "candidates": ["a", "b", "c", "d"],
                "answer": "a",
                "question_type": task.split("_", 1)[1],
            }
            for name in names
        ]
        (dataset / "json").mkdir(parents=True, exist_ok=True)
        (dataset / "json" / f"{task}.json").write_text(json.dumps(entries, indent=2))
        clips += [f"video/{task}/{name}" for name in names]
        docs += [e | {"video_name": e["video"], "task_type": e["question_type"]} for e in entries]
    for n, rel in enumerate(clips):
        clip(dataset / rel, level=30 * n)
    payloads = [
        {"question_id": d["question"], "task_type": d["task_type"], "pred_answer": "A", "answer": "A"} for d in docs
    ]
    return Layout("mlvu", dataset, clips, [_samples(logs, "mlvu_dev", "mlvu_percetion_score", docs, payloads)])


def mvbench(root: Path, logs: Path, with_doc: bool = True) -> Layout:
    """Two tasks (one with ``start``/``end`` bounds), videos in lmms-eval's DATA_LIST folders; the log's
    lines without their doc when ``with_doc`` is false (ingest then names items ``<task>/<doc_id>``)."""
    dataset = root / "MVBench"
    tasks = {
        "action_sequence": ("star/Charades_segment", ["ZS9XR.mp4", "TK7AN.mp4"]),
        "fine_grained_action": ("Moments_in_Time_Raw/videos", ["juggling/yt-1.mp4"]),
    }
    samples, clips = [], []
    for task, (folder, names) in tasks.items():
        entries = [
            {
                "video": name,
                "question": f"What did the person do first in {name}?",
                "candidates": ["Took the cup.", "Opened the door.", "Sat down."],
                "answer": "Took the cup.",
            }
            | ({"start": 1.5, "end": 9.0} if task == "action_sequence" else {})
            for name in names
        ]
        (dataset / "json").mkdir(parents=True, exist_ok=True)
        (dataset / "json" / f"{task}.json").write_text(json.dumps(entries, indent=2))
        clips += [f"video/{folder}/{name}" for name in names]
        payloads = [{"pred_answer": "A", "gt_answer": "A", "score": 1} for _ in entries]
        samples.append(_samples(logs / task, f"mvbench_{task}", "mvbench_accuracy", entries, payloads, with_doc))
    for n, rel in enumerate(clips):
        clip(dataset / rel, level=40 * n)
    return Layout("mvbench", dataset, clips, samples)


def longvideobench(root: Path, logs: Path) -> Layout:
    """``lvb_val.json`` with its published fields (id, video_id, video_path, question, option0.., correct_choice)."""
    dataset = root / "LongVideoBench"
    entries = [
        {
            "id": f"86CxyhFV9MI_{k}",
            "video_id": "86CxyhFV9MI" if k < 2 else "Fz8Zx5Ro4bQ",
            "video_path": ("86CxyhFV9MI" if k < 2 else "Fz8Zx5Ro4bQ") + ".mp4",
            "duration": 22.0,
            "duration_group": 15,
            "question_category": "S2E",
            "question": f"What is shown at scene {k}?",
            "option0": "a cat",
            "option1": "a dog",
            "option2": "N/A",
            "option3": "N/A",
            "option4": "N/A",
            "correct_choice": 0,
            "subtitle_path": "86CxyhFV9MI_en.json",
            "starting_timestamp_for_subtitles": 0,
        }
        for k in range(3)
    ]
    dataset.mkdir(parents=True)
    (dataset / "lvb_val.json").write_text(json.dumps(entries, indent=2))
    clips = sorted({f"videos/{e['video_path']}" for e in entries})
    for n, rel in enumerate(clips):
        clip(dataset / rel, level=50 * n)
    payloads = [
        {"id": e["id"], "duration_group": 15, "question_category": "S2E", "answer": "A", "parsed_pred": "A"}
        for e in entries
    ]
    return Layout(
        "longvideobench", dataset, clips, [_samples(logs, "longvideobench_val_v", "lvb_acc", entries, payloads)]
    )


BUILDERS = {"videomme": videomme, "mlvu": mlvu, "mvbench": mvbench, "longvideobench": longvideobench}
BUILDERS_NO_DOC = {"mvbench (log without doc)": lambda root, logs: mvbench(root, logs, with_doc=False)}
