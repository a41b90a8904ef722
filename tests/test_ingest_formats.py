"""Each input format parses into the same store rows (tiny fixtures from ingest_fixtures)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from ingest_fixtures import (
    ANSWERS,
    CORRECT,
    ITEMS,
    QIDS,
    RAW,
    table_frame,
    vlmevalkit_frame,
    write_answers,
    write_lmms_jsonl,
    write_lmms_old_json,
    write_per_item,
    write_table,
    write_videomme_json,
    write_vlmevalkit,
    write_wide,
)

from store.errors import UserError
from store.ingest import detect, ingest_paths
from store.ingest.videomme import strip_trailing_commas
from store.ingest.vlmevalkit import parse_name


def _responses(store, config: str | None = None) -> pd.DataFrame:
    where = f"WHERE config = '{config}'" if config else ""
    return store.query(f"SELECT * FROM responses {where} ORDER BY item_id, config")


def _values(col: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in col]


def _check_six(df: pd.DataFrame, raw: list = RAW) -> None:
    """The fixture's known outcome: answers A B C - D A, correct 1 1 0 0 1 0, one no-answer."""
    assert df["item_id"].tolist() == QIDS
    assert _values(df["answer"]) == ANSWERS
    assert df["correct"].tolist() == CORRECT
    assert _values(df["raw_output"]) == raw
    flags = [None if pd.isna(f) else f for f in df["flags"]]
    assert flags[3] is not None and "no-answer" in flags[3]
    assert sum(f is not None and "no-answer" in f for f in flags) == 1


# -- lmms-eval -----------------------------------------------------------------------------------
@pytest.mark.parametrize("repr_strings", [False, True], ids=["json-payload", "repr-payload"])
def test_lmms_jsonl_reads_config_and_model_from_results_json(tmp_path, store, repr_strings):
    path = write_lmms_jsonl(tmp_path / "logs", repr_strings=repr_strings)
    assert detect(path) == "lmms-eval"
    s = ingest_paths(store, [path])
    assert (s.new, s.models, s.benchmarks, s.configs) == (6, ["LLaVA-Video-7B-Qwen2"], ["videomme"], ["32f"])
    assert s.flagged == {"no-answer": 1}
    df = _responses(store)
    _check_six(df)
    assert set(df["frames"]) == {32} and set(df["origin"]) == {"ingest"} and set(df["run"]) == {"main"}
    prov = json.loads(df["provenance"].iloc[4])
    assert prov["doc_id"] == 4 and prov["payload"] == "videomme_perception_score"
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert items["question"].tolist() == [it["question"] for it in ITEMS]
    assert json.loads(items["options"].iloc[0]) == ITEMS[0]["options"]
    assert items["task_type"].tolist() == [it["task_type"] for it in ITEMS]
    assert items["domain"].iloc[3] == "Sports" and items["target"].tolist() == [it["answer"] for it in ITEMS]
    run = store.query("SELECT * FROM runs").iloc[0]
    args = json.loads(run["args"])
    assert args["settings"]["harness"]["model_args"]["max_frames_num"] == "32"
    assert run["format"] == "lmms-eval" and run["n_rows"] == 6 and len(run["sha256"]) == 64


def test_lmms_old_json_layout_with_repr_payloads(tmp_path, store):
    path = write_lmms_old_json(tmp_path)
    assert detect(path) == "lmms-eval"
    s = ingest_paths(store, [path])
    # max_num_frames=16 and max_pixels=151200 -> 16 frames at about 151.2k pixels each
    assert s.configs == ["16f@151.2k"] and s.models == ["Qwen2-VL-7B-Instruct"]
    df = _responses(store)
    _check_six(df)
    assert set(df["pixels"]) == {151200}


def test_lmms_without_budget_asks_for_config(tmp_path, store):
    path = write_lmms_jsonl(tmp_path, model_args=None)
    with pytest.raises(UserError, match="pass --config"):
        ingest_paths(store, [path])
    s = ingest_paths(store, [path], config="16f")
    assert s.configs == ["16f"] and s.models == ["lmms-lab__LLaVA-Video-7B-Qwen2"]  # the folder lmms-eval wrote


def test_lmms_fps_without_frame_count_asks_for_config(tmp_path, store):
    path = write_lmms_jsonl(tmp_path, model_args="pretrained=x/y,fps=1")
    with pytest.raises(UserError, match=r"fps=1.*pass --config"):
        ingest_paths(store, [path])


def test_lmms_flags_disagreement_with_the_harness(tmp_path, store):
    harness = list(ANSWERS)
    harness[5] = "B"  # the harness parsed item 6 differently from the Video-MME rule
    path = write_lmms_jsonl(tmp_path, harness=harness)
    s = ingest_paths(store, [path])
    assert s.flagged == {"harness-mismatch": 1, "no-answer": 1}
    df = _responses(store)
    assert df["flags"].iloc[5] == "harness-mismatch" and df["correct"].iloc[5] == 0


def test_lmms_mvbench_key_is_composed_with_a_note(tmp_path, store):
    folder = tmp_path / "model"
    folder.mkdir()
    path = folder / "20250101_120000_samples_mvbench_action_sequence.jsonl"
    lines = []
    for i, (gt, raw) in enumerate([("(B) walking", "B"), ("(A) running", "(C)")]):
        lines.append(
            {
                "doc_id": i,
                "target": gt,
                "filtered_resps": [raw],
                "doc_hash": "x",
                "mvbench_accuracy": {
                    "pred_answer": raw.strip("()"),
                    "gt_answer": gt,
                    "score": int(raw.strip("()") == gt[1]),
                },
                "input": "Question: What does the person do?\nOptions:\n(A) running\n(B) walking\n(C) sitting\nOnly give the best option.",
            }
        )
    path.write_text("\n".join(json.dumps(x) for x in lines))
    s = ingest_paths(store, [path], config="8f")
    assert s.benchmarks == ["mvbench"] and s.flagged == {}
    df = _responses(store)
    assert df["item_id"].tolist() == ["mvbench_action_sequence/0", "mvbench_action_sequence/1"]
    assert df["answer"].tolist() == ["B", "C"] and df["correct"].tolist() == [1, 0]
    note = json.loads(store.query("SELECT args FROM runs")["args"].iloc[0])["settings"]["item_key"]
    assert "composed" in note and "doc_id" in note
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert items["target"].tolist() == ["B", "A"] and items["question"].iloc[0] == "What does the person do?"


# -- VLMEvalKit ----------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", ["xlsx", "tsv", "json"])
def test_vlmevalkit_maps_index_to_video_mme_question_id(tmp_path, store, ext):
    path = write_vlmevalkit(tmp_path, ext)
    assert detect(path) == "vlmevalkit"
    s = ingest_paths(store, [path])
    assert (s.models, s.benchmarks, s.configs) == (["Qwen2-VL-7B"], ["videomme"], ["8f"])
    df = _responses(store)
    _check_six(df)  # index 0..5 -> 001-1 .. 002-3
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert json.loads(items["options"].iloc[1]) == ITEMS[1]["options"] and items["sub_category"].iloc[4] == "Football"
    assert json.loads(df["provenance"].iloc[5]) == {"index": 5, "subtitles": False}


def test_vlmevalkit_score_file_flags_unparseable(tmp_path, store):
    path = write_vlmevalkit(tmp_path, "xlsx", scored=True, dataset="Video-MME_16frame_subs")
    s = ingest_paths(store, [path])
    assert s.configs == ["16f"]
    # score -1 on item 4 (the no-answer row); the harness agrees with every other verdict
    assert s.flagged == {"no-answer": 1, "unparseable": 1}
    df = _responses(store)
    assert df["flags"].iloc[3] == "no-answer,unparseable"
    assert json.loads(df["provenance"].iloc[0])["subtitles"] is True
    settings = json.loads(store.query("SELECT args FROM runs")["args"].iloc[0])["settings"]
    assert settings["subtitles"] is True and settings["scored"] is True and "index//3+1" in settings["item_key"]


def test_vlmevalkit_fps_dataset_needs_config(tmp_path, store):
    path = write_vlmevalkit(tmp_path, "tsv", dataset="Video-MME_1fps")
    with pytest.raises(UserError, match=r"1 frame\(s\) per second.*pass --config"):
        ingest_paths(store, [path])
    s = ingest_paths(store, [path], config="64f/fps-1")
    assert s.configs == ["64f/fps-1"]
    assert set(_responses(store)["policy"]) == {"fps-1"}


def test_vlmevalkit_refuses_rows_out_of_dataset_order(tmp_path, store):
    df = vlmevalkit_frame()
    df.loc[2, "video"] = "007"
    path = tmp_path / "M_Video-MME_8frame.tsv"
    df.to_csv(path, sep="\t", index=False)
    with pytest.raises(UserError, match=r"row 4: index 2 maps to Video-MME video 001 but the row's video is 007"):
        ingest_paths(store, [path])
    assert store.version() == 0


def test_vlmevalkit_file_names():
    assert parse_name("Qwen2-VL-7B_Video-MME_8frame_subs_score") == {
        "model": "Qwen2-VL-7B",
        "family": "Video-MME",
        "dataset": "Video-MME_8frame_subs",
        "frames": 8,
        "fps": None,
        "subs": True,
        "scored": True,
    }
    n = parse_name("llava_video_qwen2_7b_MVBench_MP4_8frame")
    assert (n["model"], n["dataset"], n["frames"]) == ("llava_video_qwen2_7b", "MVBench_MP4_8frame", 8)
    assert parse_name("x_Video-MME_0.5fps")["fps"] == "0.5"
    assert parse_name("no_dataset_here") == {}


# -- official Video-MME JSON ---------------------------------------------------------------------
@pytest.mark.parametrize("long_keys", [False, True], ids=["duration-domain", "duration_category-video_category"])
def test_videomme_json_both_spellings_with_trailing_commas(tmp_path, store, long_keys):
    path = write_videomme_json(tmp_path, long_keys=long_keys)
    with pytest.raises(ValueError):
        json.loads(path.read_text())  # the fixture really is not strict JSON
    assert detect(path) == "videomme"
    with pytest.raises(UserError, match="pass --model and --config"):
        ingest_paths(store, [path])
    s = ingest_paths(store, [path], model="gpt-4o", config="32f")
    assert s.benchmarks == ["videomme"]
    _check_six(_responses(store))
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert items["duration"].tolist() == ["short"] * 6
    assert items["domain"].tolist() == ["Knowledge"] * 3 + ["Sports"] * 3
    assert items["sub_category"].iloc[0] == "Humanity & History" and items["video"].iloc[5] == "002"


def test_trailing_commas_are_removed_outside_strings_only():
    text = '{"a": [1, 2,], "s": "keep, ] this,}", "o": {"x": 1,},}'
    assert json.loads(strip_trailing_commas(text)) == {"a": [1, 2], "s": "keep, ] this,}", "o": {"x": 1}}


# -- scale-grid release --------------------------------------------------------------------------
def test_scalegrid_per_item_keeps_provenance_and_flags_protocol_notes(tmp_path, store):
    path = write_per_item(tmp_path)
    assert detect(path) == "scalegrid"
    s = ingest_paths(store, [path])
    assert s.configs == ["8f@151k", "128f_fallback"] and s.models == ["InternVL3-8B"]
    assert s.flagged == {"no-answer": 1, "protocol-note": 6}
    df = _responses(store, "8f@151k")
    _check_six(df, raw=ANSWERS)  # the release stores letters; the empty one is no answer
    assert set(df["pixels"]) == {151000} and set(df["split"]) == {"V1_short"}
    fb = _responses(store, "128f_fallback")
    assert set(fb["frames"]) == {128} and set(fb["pixels"]) == {50176}  # per-frame pixel_count fills the tag
    assert set(fb["protocol_note"]) == {"fallback input 224"} and set(fb["source_tag"]) == {"phase13/128f_fallback"}
    assert json.loads(fb["provenance"].iloc[0]) == {"frame_count": "128", "pixel_count": "50176"}


def test_scalegrid_wide_joins_the_answers_file(tmp_path, store):
    path = write_wide(tmp_path)
    answers = write_answers(tmp_path)
    assert detect(path) == "scalegrid"
    s = ingest_paths(store, [path], answers=answers)
    assert (s.rows, s.models, s.configs) == (12, ["LLaVA-NeXT-Video-7B"], ["text", "8f@151k"])
    assert s.flagged == {"no-answer": 1}  # the empty cell
    df = _responses(store, "8f@151k")
    _check_six(df, raw=ANSWERS)
    assert df["flags"].iloc[3] == "no-answer"
    text = _responses(store, "text")
    assert text["correct"].tolist() == [0, 1, 0, 0, 0, 1]  # always "B"
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert items["task_type"].tolist() == [it["task_type"] for it in ITEMS] and set(items["split"]) == {"V1_short"}


def test_scalegrid_wide_needs_answers_covering_every_item(tmp_path, store):
    path = write_wide(tmp_path)
    with pytest.raises(UserError, match="pass --answers"):
        ingest_paths(store, [path])
    partial = write_answers(tmp_path / "a", drop=2)
    with pytest.raises(UserError, match=r"2 item\(s\) are not in the answers file .*e\.g\. 001-1, 001-2"):
        ingest_paths(store, [path], answers=partial)
    assert store.version() == 0


# -- generic long table --------------------------------------------------------------------------
@pytest.mark.parametrize("ext", ["csv", "parquet", "jsonl"])
def test_long_table_every_container(tmp_path, store, ext):
    df = table_frame().assign(my_note=["n1", "n2", "n3", "n4", "n5", "n6"])
    path = write_table(tmp_path, ext, df)
    assert detect(path) == "table"
    s = ingest_paths(store, [path])
    assert (s.models, s.configs, s.flagged) == (["m1"], ["16f"], {"no-answer": 1})
    out = _responses(store)
    _check_six(out)
    assert out["confidence"].tolist() == [0.9, 0.8, 0.4, 0.3, 0.7, 0.2]
    assert json.loads(out["provenance"].iloc[2]) == {"my_note": "n3"}  # unknown columns are kept
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert json.loads(items["options"].iloc[0]) == ITEMS[0]["options"] and items["answer_type"].iloc[0] == "mcqa"


def test_long_table_with_given_correctness_only(tmp_path, store):
    df = pd.DataFrame({"model": "m", "benchmark": "b", "item_id": ["x", "y"], "correct": [True, False], "split": "dev"})
    path = write_table(tmp_path, "csv", df)
    s = ingest_paths(store, [path], config="32f@151k/random-s1")
    assert s.configs == ["32f@151k/random-s1"] and s.flagged == {}
    out = _responses(store)
    assert out["correct"].tolist() == [1, 0] and out["policy"].tolist() == ["random-s1"] * 2
    assert out["answer"].isna().all() and set(out["split"]) == {"dev"}


def test_long_table_open_ended_scores(tmp_path, store):
    df = pd.DataFrame(
        {
            "model": "m",
            "benchmark": "qa",
            "item_id": ["q1", "q2"],
            "config": "text",
            "prediction": ["a cat on a mat", "two"],
            "target": ["the cat sat on the mat", "three"],
            "correct": [0, 0],
            "score": [0.6, 0.0],
        }
    )
    ingest_paths(store, [write_table(tmp_path, "parquet", df)])
    out = _responses(store)
    assert out["score"].tolist() == [0.6, 0.0] and out["answer"].isna().all() and out["flags"].isna().all()
    assert set(store.query("SELECT answer_type FROM items")["answer_type"]) == {"open"}


def test_detect_refuses_unknown_files(tmp_path):
    p = tmp_path / "notes.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(UserError, match=r"notes.csv: cannot tell the format .* pass --format"):
        detect(p)
    q = tmp_path / "x.txt"
    q.write_text("hello")
    with pytest.raises(UserError, match="pass --format"):
        detect(q)
