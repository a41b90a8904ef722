"""Issue 11, point 5: items carry their video where the format implies it, so the predictor's folds
group by video; lmms-eval / VLMEvalKit files get a budget their name states, said in the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from ingest_fixtures import QIDS, lmms_samples, table_frame, vlmevalkit_frame, write_table

from backend.analysis import predictor
from backend.cli import main
from backend.cli.ingest import format_summary
from store.errors import UserError
from store.ingest import ingest_paths
from store.ingest.common import budget_hint
from store.store import Store


def videos(store) -> list:
    return [None if pd.isna(v) else v for v in store.query("SELECT video FROM items ORDER BY item_id")["video"]]


# -- videos --------------------------------------------------------------------------------------
def test_video_mme_question_ids_name_their_video(tmp_path, store):
    ingest_paths(store, [write_table(tmp_path, "csv", table_frame())])  # benchmark videomme, ids 001-1 .. 002-3
    assert videos(store) == ["001", "001", "001", "002", "002", "002"]


def test_other_benchmarks_and_given_videos_are_left_alone(tmp_path, store):
    df = table_frame().assign(benchmark=["mlvu"] * 3 + ["videomme"] * 3, video=[None] * 5 + ["clip.mp4"])
    ingest_paths(store, [write_table(tmp_path, "parquet", df)])
    assert videos(store) == [None, None, None, "002", "002", "clip.mp4"]


def test_lmms_eval_video_id(tmp_path, store):
    samples = lmms_samples()
    for i, s in enumerate(samples):
        s["videomme_perception_score"]["question_id"] = f"q{i}"  # not NNN-k: the video comes from videoID
        s["videomme_perception_score"]["videoID"] = f"yt{i // 3}"
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in samples))
    ingest_paths(store, [path], model="m", config="8f")
    assert videos(store) == ["yt0", "yt0", "yt0", "yt1", "yt1", "yt1"]


def test_vlmevalkit_video_column(tmp_path, store):
    df = vlmevalkit_frame().assign(video=["1", "1", "1", "2", "2", "2"])  # numeric ids, as some exports write them
    path = tmp_path / "M_Video-MME_8frame.tsv"
    df.to_csv(path, sep="\t", index=False)
    ingest_paths(store, [path])
    assert videos(store) == ["001", "001", "001", "002", "002", "002"]


def test_predictor_groups_video_mme_questions_even_without_stored_videos():
    items = pd.DataFrame({"benchmark": ["videomme"] * 6 + ["mlvu"], "item_id": [*QIDS, "001-1"], "video": [None] * 7})
    assert predictor.item_videos(items).tolist()[:6] == ["001"] * 3 + ["002"] * 3
    assert len(set(predictor.video_groups(items))) == 3  # two videos, and the MLVU item on its own


# -- budgets from file names -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "hint"),
    [
        ("out/lmms-eval_llava_videomme_16f_samples.jsonl", ("16f", "the file name")),
        ("run_16frames/samples.jsonl", ("16f", "the folder name")),
        ("out/Qwen_Video-MME_16frame.xlsx", ("16f", "the file name")),
        ("nframes16/samples_16f.jsonl", ("16f", "the file name and the folder name")),
        ("32f_151k/samples.jsonl", ("32f@151k", "the folder name")),
        ("8f/samples_16f.jsonl", None),  # two budgets: ambiguous
        ("fp16/qwen2-7b.jsonl", None),  # no budget word
    ],
)
def test_budget_hints(path, hint):
    assert budget_hint(Path(path)) == hint


def _lmms_file(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("\n".join(json.dumps(s) for s in lmms_samples()))
    return path


def test_lmms_eval_budget_from_the_file_name_is_said(tmp_path, capsys):
    path = _lmms_file(tmp_path / "logs", "lmms-eval_llava_videomme_16f_samples.jsonl")
    root = tmp_path / "store"
    assert main(["ingest", str(path), "--store", str(root), "--model", "m"]) == 0
    assert f"{path} (lmms-eval; config 16f from the file name): 6 rows" in capsys.readouterr().out
    assert set(Store(root).query("SELECT config FROM responses")["config"]) == {"16f"}


def test_lmms_eval_ambiguous_name_asks_for_config(tmp_path, store):
    path = _lmms_file(tmp_path / "run_8f", "videomme_16f_samples.jsonl")
    with pytest.raises(UserError, match=r"state no single budget like 16f\); pass --config"):
        ingest_paths(store, [path], model="m")
    s = ingest_paths(store, [path], model="m", config="8f")
    assert s.configs == ["8f"] and s.files[0].config_hint is None  # --config wins, nothing inferred


def test_vlmevalkit_budget_from_the_folder_name(tmp_path, store):
    folder = tmp_path / "nframes32"
    folder.mkdir()
    path = folder / "Qwen2-VL-7B_Video-MME.tsv"
    vlmevalkit_frame().to_csv(path, sep="\t", index=False)
    s = ingest_paths(store, [path])
    assert s.configs == ["32f"] and s.files[0].config_hint == "config 32f from the folder name"
    assert "(vlmevalkit; config 32f from the folder name)" in format_summary(s)


# -- real data -----------------------------------------------------------------------------------
@pytest.mark.realdata
def test_real_scalegrid_store_has_262_videos_for_786_items(realdata, tmp_path, capsys):
    root = tmp_path / "store"
    wide = realdata / "LLaVA-NeXT-Video-7B_V1_short_predictions_wide.csv"
    assert main(["ingest", str(wide), "--answers", str(realdata / "videomme_answers.csv"), "--store", str(root)]) == 0
    capsys.readouterr()
    assert main(["predictor", "--store", str(root), "--model", "LLaVA-NeXT-Video-7B", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n_items"], out["n_videos"], out["n_groups"]) == (786, 262, 262)
