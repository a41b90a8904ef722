"""An lmms-eval output tree whose three runs logged query-adaptive frame selections (issue 35, point 4): every
line's ``frame_idx`` is a cluster of frames no uniform sampler gives, so ingest labels the runs ``8f/adaptive``,
``16f/adaptive`` and ``32f/adaptive`` and the store has no uniform ladder at all."""

from __future__ import annotations

import json
from pathlib import Path

MODEL = "LLaVA-Video-7B-Qwen2"
ITEMS = [("001-1", "A"), ("001-2", "B"), ("002-1", "C"), ("002-2", "D"), ("003-1", "A"), ("003-2", "B")]
RIGHT = {8: {"001-1", "002-1", "003-1"}, 16: {"001-1", "001-2", "002-1", "003-2"}, 32: {"001-2", "002-1", "003-2"}}


def write_tree(root: Path) -> Path:
    """Three runs, one per budget, each with its results file; the answers right at a budget are ``RIGHT``'s."""
    for k, frames in enumerate((8, 16, 32)):
        stamp = f"2026010{k + 1}_120000"
        d = root / f"videomme_aks_{frames}" / f"..__{MODEL}"
        d.mkdir(parents=True)
        lines = []
        for n, (qid, answer) in enumerate(ITEMS):
            said = answer if qid in RIGHT[frames] else ("B" if answer == "A" else "A")
            start = 40 + 97 * n  # a cluster of consecutive frames around the query's moment: no uniform set
            payload = {
                "question_id": qid,
                "duration": "short",
                "task_type": "Temporal Reasoning",
                "pred_answer": said,
                "answer": answer,
                "frame_idx": [float(start + i) for i in range(frames)],
                "frame_num": frames,
            }
            prompt = f"Question: question {qid}?\nA. one\nB. two\nC. three\nD. four\nAnswer with the option's letter."
            lines.append(
                {
                    "doc_id": n,
                    "target": answer,
                    "filtered_resps": [said],
                    "doc_hash": "same",
                    "input": prompt,
                    "custom_video_qa_score": payload,
                }  # fmt: skip
            )
        (d / f"{stamp}_samples_custom_video_qa.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        args = f"pretrained=lmms-lab/{MODEL},max_frames_num={frames}"
        (d / f"{stamp}_results_aks.json").write_text(json.dumps({"config": {"model": "llava_vid", "model_args": args}}))
    return root
