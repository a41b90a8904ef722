"""Tiny input files in every format the ingesters read, written into a test's tmp_path.

Six Video-MME-style items (two videos x three questions) with known raw outputs, so every format's
expected answers and correctness are the same: answers A, B, C, -, D, A against targets
A, B, D, C, D, B -> correct 1, 1, 0, 0, 1, 0 (3 of 6), one no-answer.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd

ITEMS = [
    {"qid": "001-1", "question": "What colour is the car?", "answer": "A", "task_type": "Counting Problem"},
    {"qid": "001-2", "question": "How many people appear?", "answer": "B", "task_type": "Object Recognition"},
    {"qid": "001-3", "question": "Where is the scene?", "answer": "D", "task_type": "Action Reasoning"},
    {"qid": "002-1", "question": "What happens first?", "answer": "C", "task_type": "Temporal Reasoning"},
    {"qid": "002-2", "question": "Who speaks last?", "answer": "D", "task_type": "Counting Problem"},
    {"qid": "002-3", "question": "What is the genre?", "answer": "B", "task_type": "Information Synopsis"},
]
for _it in ITEMS:
    _it["options"] = [f"{L}. {_it['question'][:-1]} option {L}." for L in "ABCD"]
    _it["duration"] = "short"
    _it["domain"] = "Knowledge" if _it["qid"].startswith("001") else "Sports"
    _it["sub_category"] = "Humanity & History" if _it["qid"].startswith("001") else "Football"

RAW = ["A.", "The answer is B", "C", "I am not sure", "(D) because", "Answer: A"]
ANSWERS = ["A", "B", "C", None, "D", "A"]
CORRECT = [1, 1, 0, 0, 1, 0]
QIDS = [it["qid"] for it in ITEMS]


def prompt(it: dict) -> str:
    return (
        "Select the best answer to the following multiple-choice question based on the video. "
        "Respond with only the letter (A, B, C, or D) of the correct option.\n"
        + it["question"]
        + "\n"
        + "\n".join(it["options"])
        + "\nThe best answer is:"
    )


def _payload(it: dict, answer: str | None) -> dict:
    return {
        "question_id": it["qid"],
        "duration": it["duration"],
        "category": it["domain"],
        "sub_category": it["sub_category"],
        "task_category": it["task_type"],
        "pred_answer": answer or "",
        "answer": it["answer"],
    }


def lmms_samples(*, repr_strings: bool = False, harness: list[str | None] | None = None) -> list[dict]:
    """One lmms-eval sample per item; with ``repr_strings`` payload and responses are Python reprs."""
    out = []
    for i, (it, raw) in enumerate(zip(ITEMS, RAW)):
        payload = _payload(it, (harness or ANSWERS)[i])
        resps = [raw]
        out.append(
            {
                "doc_id": i,
                "target": it["answer"],
                "filtered_resps": repr(resps) if repr_strings else resps,
                "doc_hash": "0" * 64,
                "videomme_perception_score": repr(payload) if repr_strings else payload,
                "input": prompt(it),
            }
        )
    return out


def write_lmms_jsonl(
    root: Path,
    *,
    model_args: str | None = "pretrained=lmms-lab/LLaVA-Video-7B-Qwen2,conv_template=qwen_1_5,max_frames_num=32",
    repr_strings: bool = False,
    harness: list[str | None] | None = None,
) -> Path:
    """``<root>/<model>/<stamp>_samples_videomme.jsonl`` and, unless model_args is None, its results.json."""
    folder = root / "lmms-lab__LLaVA-Video-7B-Qwen2"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "20250101_120000_samples_videomme.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in lmms_samples(repr_strings=repr_strings, harness=harness)) + "\n")
    if model_args is not None:
        results = {
            "results": {"videomme": {"videomme_perception_score,none": 50.0}},
            "config": {"model": "llava_vid", "model_args": model_args, "batch_size": "1"},
            "lmms_eval_version": "0.3.0",
        }
        (folder / "20250101_120000_results.json").write_text(json.dumps(results))
    return path


def write_lmms_old_json(root: Path, *, repr_strings: bool = True) -> Path:
    """The older ``<task>.json``: {"args", "model_configs", "logs": [...]}."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "videomme.json"
    doc = {
        "args": {
            "model": "qwen2_vl",
            "model_args": "pretrained=Qwen/Qwen2-VL-7B-Instruct,max_num_frames=16,max_pixels=151200",
        },
        "model_configs": {"dtype": "bfloat16"},
        "logs": lmms_samples(repr_strings=repr_strings),
    }
    path.write_text(json.dumps(doc, indent=1))
    return path


def vlmevalkit_frame(*, scored: bool = False, index_offset: int = 0) -> pd.DataFrame:
    """VLMEvalKit Video-MME rows; index is the dataset position (0 -> 001-1)."""
    df = pd.DataFrame(
        {
            "index": [i + index_offset for i in range(len(ITEMS))],
            "video": [it["qid"][:3] for it in ITEMS],
            "duration": [it["duration"] for it in ITEMS],
            "domain": [it["domain"] for it in ITEMS],
            "candidates": [repr(it["options"]) for it in ITEMS],
            "sub_category": [it["sub_category"] for it in ITEMS],
            "task_type": [it["task_type"] for it in ITEMS],
            "question": [it["question"] for it in ITEMS],
            "answer": [it["answer"] for it in ITEMS],
            "prediction": RAW,
        }
    )
    if scored:
        df["score"] = [1, 1, 0, -1, 1, 0]
    return df


def write_vlmevalkit(root: Path, ext: str = "xlsx", *, scored: bool = False, dataset: str = "Video-MME_8frame") -> Path:
    folder = root / "Qwen2-VL-7B" / "T20250101_G1234"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"Qwen2-VL-7B_{dataset}{'_score' if scored else ''}.{ext}"
    df = vlmevalkit_frame(scored=scored)
    if ext == "xlsx":
        df.to_excel(path, index=False)
    elif ext == "tsv":
        df.to_csv(path, sep="\t", index=False)
    else:
        path.write_text(json.dumps(df.to_dict(orient="records")))
    return path


def write_videomme_json(root: Path, *, long_keys: bool = False, trailing_commas: bool = True) -> Path:
    """The official result JSON; ``long_keys`` uses duration_category / video_category / video_subcategory."""
    root.mkdir(parents=True, exist_ok=True)
    keys = (
        ("duration_category", "video_category", "video_subcategory")
        if long_keys
        else ("duration", "domain", "sub_category")
    )
    videos = []
    for vid in ("001", "002"):
        its = [(it, raw) for it, raw in zip(ITEMS, RAW) if it["qid"].startswith(vid)]
        first = its[0][0]
        videos.append(
            {
                "video_id": vid,
                keys[0]: first["duration"],
                keys[1]: first["domain"],
                keys[2]: first["sub_category"],
                "questions": [
                    {
                        "question_id": it["qid"],
                        "task_type": it["task_type"],
                        "question": it["question"],
                        "options": it["options"],
                        "answer": it["answer"],
                        "response": raw,
                    }
                    for it, raw in its
                ],
            }
        )
    text = json.dumps(videos, indent=2)
    if trailing_commas:  # as real copies have them: after the last option and the last question
        text = text.replace('option D."\n', 'option D.",\n').replace(
            '"response": "Answer: A"\n      }', '"response": "Answer: A"\n      },'
        )
        assert text.count('",\n') > 0 and "},\n    ]" in text
    path = root / "videomme_results.json"
    path.write_text(text)
    return path


def write_answers(root: Path, *, drop: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(
        {
            "question_id": QIDS,
            "answer": [it["answer"] for it in ITEMS],
            "duration": [it["duration"] for it in ITEMS],
            "task_type": [it["task_type"] for it in ITEMS],
            "domain": [it["domain"] for it in ITEMS],
            "sub_category": [it["sub_category"] for it in ITEMS],
        }
    )
    path = root / "answers.csv"
    df.iloc[drop:].to_csv(path, index=False)
    return path


def write_wide(root: Path, name: str = "LLaVA-NeXT-Video-7B_V1_short_predictions_wide.csv") -> Path:
    """sample_id + textonly / 8f_151k columns; the 8f_151k cells are ANSWERS (one empty)."""
    root.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame({"sample_id": QIDS, "textonly": ["B"] * 6, "8f_151k": [a or "" for a in ANSWERS]})
    path = root / name
    df.to_csv(path, index=False)
    return path


def write_per_item(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for it, ans, ok in zip(ITEMS, ANSWERS, CORRECT):
        for config, frames, pred, corr, note in (
            ("8f_151k", 8, ans or "", ok, ""),
            ("128f_fallback", 128, it["answer"], 1, "fallback input 224"),
        ):
            rows.append(
                {
                    "sample_id": it["qid"],
                    "model": "InternVL3-8B",
                    "split": "V1_short",
                    "config": config,
                    "frame_count": frames,
                    "pixel_count": 151000 if config == "8f_151k" else 50176,
                    "predicted_option": pred,
                    "ground_truth_option": it["answer"],
                    "correct": corr,
                    "source_tag": f"phase13/{config}",
                    "protocol_note": note,
                }
            )
    path = root / "per_item.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def table_frame(model: str = "m1", config: str = "16f") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": model,
            "benchmark": "videomme",
            "item_id": QIDS,
            "config": config,
            "prediction": RAW,
            "target": [it["answer"] for it in ITEMS],
            "confidence": [0.9, 0.8, 0.4, 0.3, 0.7, 0.2],
            "question": [it["question"] for it in ITEMS],
            "options": [json.dumps(it["options"]) for it in ITEMS],
        }
    )


def write_table(root: Path, ext: str = "csv", df: pd.DataFrame | None = None, name: str = "long") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    df = table_frame() if df is None else df
    path = root / f"{name}.{ext}"
    if ext == "csv":
        df.to_csv(path, index=False)
    elif ext == "parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_json(path, orient="records", lines=True)
    return path


def ingest_quietly(*argv: str) -> str:
    """``trajaudit ingest ARGV`` for a fixture that builds a template store (no test's capsys takes the
    summary): it must succeed; returns what it printed."""
    from backend.cli import main

    with redirect_stdout(io.StringIO()) as out:
        assert main(["ingest", *argv]) == 0
    return out.getvalue()


def private_copy(template: Path, tmp_path: Path) -> Path:
    """A test's own copy of a template store (copying a few parquet files: about a millisecond)."""
    root = tmp_path / "store"
    shutil.copytree(template, root)
    return root
