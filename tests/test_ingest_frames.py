"""Where each response's frames come from (METRICS.md "Frames seen"), and ingest of whole output folders.

The harness samplers are checked against the index sets read from the harnesses' code
(``notes/VIDEOS.md``: lmms-eval ``models/model_utils/load_video.py`` and ``models/simple/llava_vid.py``,
qwen-vl-utils ``vision_process.py``, VLMEvalKit ``vlmeval/dataset/videomme.py`` and ``mvbench.py``).
Logs in the per-line-indices shape are the customised lmms-eval task's (``<task>_score.frame_idx``,
``frame_num`` the nominal budget), written here in miniature.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from backend.cli import main
from backend.videos import catalog
from store import samplers
from store.errors import UserError
from store.store import Store

MODEL = "LLaVA-NeXT-Video-7B-Qwen2"


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _inspect(capsys, store: Path, item: str) -> dict:
    rc, out, err = _cli(capsys, "inspect", "--store", str(store), "--benchmark", "videomme", "--item", item, "--json")
    assert rc == 0, err
    return json.loads(out)


def _tree_digest(root: Path) -> str:
    """Every file under ``root``, names and bytes: a store that was not written to keeps its digest."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _sample(n: int, qid: str, answer: str, said: str, frame_idx: list | None, frame_num: int) -> dict:
    payload = {
        "question_id": qid,
        "video_id": f"yt{n:04d}",  # the YouTube id, as the custom task writes it: the file's own video name
        "duration": "short",
        "domain": "Knowledge",
        "sub_category": "Humanity & History",
        "task_type": "Counting Problem",
        "pred_answer": said,
        "answer": answer,
        "frame_num": frame_num,
        "use_topk": True,
    }
    if frame_idx is not None:
        payload["frame_idx"] = frame_idx
    prompt = f"Question: question {qid}?\nA. one\nB. two\nC. three\nD. four\nAnswer with the option's letter."
    return {
        "doc_id": n,
        "target": answer,
        "filtered_resps": [said],
        "doc_hash": "same",
        "custom_video_qa_score": payload,
        "input": prompt,
    }


def _write_run(folder: Path, frames: int, samples: list[dict], stamp: str = "20260101_120000") -> Path:
    """An lmms-eval run as it writes one: <run>/..__<model>/<stamp>_samples_<task>.jsonl + results.json."""
    model_dir = folder / f"..__{MODEL}"
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / f"{stamp}_samples_custom_video_qa.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in samples) + "\n")
    args = f"pretrained=../{MODEL},conv_template=qwen_1_5,max_frames_num={frames}"
    (model_dir / f"{stamp}_results.json").write_text(json.dumps({"config": {"model": "llava_vid", "model_args": args}}))
    return path


ITEMS = [("001-1", "A"), ("001-2", "B"), ("002-1", "C"), ("002-2", "D")]
LENGTHS = {"001-1": 300, "001-2": 300, "002-1": 1234, "002-2": 1234}  # the catalog's probed frame counts


def _uniform_samples(frames: int, frame_idx: bool = True) -> list[dict]:
    return [
        _sample(
            n,
            qid,
            ans,
            ans if n % 2 else "A",
            np.linspace(0, LENGTHS[qid] - 1, frames, dtype=int).astype(float).tolist() if frame_idx else None,
            frames,
        )
        for n, (qid, ans) in enumerate(ITEMS)
    ]


def _link(store: Path, lengths: dict[str, int]) -> None:
    """Catalog rows for the items, through the catalog's own write (as `videos link` publishes them)."""
    rows = pd.DataFrame(
        {
            "item_id": list(lengths),
            "path": [f"data/{i}.mp4" for i in lengths],
            "status": "linked",
            "n_frames": list(lengths.values()),
            "fps": 30.0,
            "layout": "videomme",
        }
    )
    Store(store).root.mkdir(parents=True, exist_ok=True)
    catalog.replace(Store(store), "videomme", rows)


# -- the samplers -----------------------------------------------------------------------------------
def test_samplers_give_each_harness_its_own_eight_frames_of_a_300_frame_video():
    # notes/VIDEOS.md, T = 300, N = 8, read from each harness's code (the module docstring cites the files)
    assert samplers.indices("lmms-eval", 300, 30.0, 8).tolist() == [0, 42, 85, 128, 170, 213, 256, 299]
    assert samplers.indices("qwen-vl-utils", 300, 30.0, 8).tolist() == [0, 43, 85, 128, 171, 214, 256, 299]
    assert samplers.indices("vlmevalkit", 300, 30.0, 8).tolist() == [33, 66, 100, 133, 166, 200, 233, 266]
    stride = int(299 / 7)
    assert samplers.indices("lmms-eval-dali", 300, 30.0, 8).tolist() == [k * stride for k in range(8)]
    seg = 299 / 8  # VLMEvalKit MVBench get_index without a bound: int(seg / 2 + round(seg * i))
    assert samplers.indices("vlmevalkit-mvbench", 300, 30.0, 8).tolist() == [
        int(seg / 2 + round(seg * i)) for i in range(8)
    ]
    # a video shorter than the budget: the clamping samplers give every frame once
    assert samplers.indices("lmms-eval", 5, 30.0, 8).tolist() == [0, 1, 2, 3, 4]
    assert samplers.indices("lmms-eval-torchcodec", 5, 30.0, 8).tolist() == [0, 1, 2, 3, 4]
    # lmms-eval's qwen2_5_vl wrapper: qwen-vl-utils at 2 fps (20 of 300 frames at 30 fps), then 8 of those + the last
    first = np.rint(np.linspace(0, 299, 20)).astype(int)
    again = np.unique(np.append(np.linspace(0, 19, 8, dtype=int), 19))
    assert samplers.indices("lmms-eval-qwen2_5_vl", 300, 30.0, 8).tolist() == first[again].tolist()
    with pytest.raises(UserError, match="unknown sampler 'uniform'"):
        samplers.indices("uniform", 300, 30.0, 8)


def test_uniform_mask_tells_a_harness_uniform_set_from_a_selection():
    sets = [
        samplers.indices("lmms-eval", 1234, 0, 16).tolist(),
        samplers.indices("vlmevalkit", 1234, 0, 16).tolist(),
        samplers.indices("qwen-vl-utils", 777, 0, 16).tolist(),
        [0, 1, 2, 3, 4],  # every frame of a 5-frame video at a 16-frame budget
        [0, 29, 58, 87],  # one frame a second of a short video: a selection's candidates, not uniform
        [3, 40, 41, 42, 90, 200, 201, 600, 601, 602, 700, 800, 900, 1000, 1100, 1200],  # top-k
        None,
    ]
    got = samplers.uniform_mask(sets, np.full(len(sets), 16))
    assert got.tolist() == [True, True, True, True, False, False, True]
    # with the video's length known only that length is tried: the same set over a longer video is not uniform
    known = samplers.uniform_mask(sets[:1], np.array([16]), np.array([2000]))
    assert known.tolist() == [False]


def test_every_uniform_samplers_own_set_is_recognised_without_the_video_length():
    """The lengths are solved from each sampler's formula (not scanned): every set it gives is found."""
    missed = [
        (name, budget, t)
        for budget in (8, 16, 32)
        for t in range(budget, 2000, 13)
        for name in (
            "lmms-eval",
            "lmms-eval-torchcodec",
            "lmms-eval-dali",
            "qwen-vl-utils",
            "vlmevalkit",
            "vlmevalkit-mvbench",
        )
        if not samplers.uniform_mask([samplers.indices(name, t, 0.0, budget).tolist()], np.array([budget]))[0]
    ]
    assert missed == []


# -- logged frames --------------------------------------------------------------------------------------
def test_logged_frames_are_the_files_own_and_a_selection_is_not_a_uniform_budget(tmp_path, capsys):
    run8 = _write_run(tmp_path / "uniform_results", 8, _uniform_samples(8))
    topk = _uniform_samples(16)
    topk[2]["custom_video_qa_score"]["frame_idx"] = [
        float(i) for i in (5, 6, 7, 100, 101, 102, 400, 401, 402, 403, 800, 801, 900, 1000, 1100, 1200)
    ]
    run16 = _write_run(tmp_path / "selected_k16_results", 16, topk)
    store = tmp_path / "store"
    rc, out, err = _cli(capsys, "ingest", str(run8), str(run16), "--store", str(store), "--benchmark", "videomme")
    assert rc == 0, err
    assert "config 16f -> 16f/adaptive: 1 of 4 logged frame sets match no uniform sampler" in out
    assert "frames logged 4" in out and "adaptive-frames 1" in out  # the one set that no uniform sampler gives
    report = _inspect(capsys, store, "002-1")
    assert report["item"]["video"] == "yt0002" and report["item"]["domain"] == "Knowledge"
    by = {r["config"]: r for r in report["responses"]}
    assert sorted(by) == ["16f/adaptive", "8f"]  # the selection is never passed off as the uniform 16f
    assert by["8f"]["frames_source"] == "logged" and by["8f"]["sampler"] is None
    assert by["8f"]["frame_indices"] == np.linspace(0, 1233, 8, dtype=int).tolist()
    assert by["16f/adaptive"]["frame_indices"] == topk[2]["custom_video_qa_score"]["frame_idx"]
    assert by["16f/adaptive"]["policy"] == "adaptive" and "adaptive-frames" in by["16f/adaptive"]["flags"]
    assert json.loads(by["8f"]["provenance"])["payload_fields"]["use_topk"] is True  # the payload's other fields kept
    plan = {f["config"]: f for f in report["frames"]}
    assert plan["8f"]["source"] == "logged" and plan["8f"]["indices"] == by["8f"]["frame_indices"]


def test_logged_indices_past_a_linked_video_are_refused_and_nothing_is_written(tmp_path, capsys):
    store = tmp_path / "store"
    _link(store, LENGTHS)
    before = _tree_digest(store)
    bad = _uniform_samples(8)
    bad[1]["custom_video_qa_score"]["frame_idx"][-1] = 300.0  # item 001-2's video has frames 0..299
    run = _write_run(tmp_path / "run", 8, bad)
    rc, out, err = _cli(capsys, "ingest", str(run), "--store", str(store), "--benchmark", "videomme")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "line 2: item 001-2 logs frame 300" in err and "has 300 frames" in err
    assert _tree_digest(store) == before
    half = _uniform_samples(8)
    half[0]["custom_video_qa_score"]["frame_idx"][3] = 85.5
    rc, _, err = _cli(
        capsys, "ingest", str(_write_run(tmp_path / "run2", 8, half)), "--store", str(store), "--benchmark", "videomme"
    )
    assert rc == 2 and err.count("\n") == 1 and "whole frame numbers" in err
    rc, _, err = _cli(capsys, "ingest", str(run), "--store", str(store), "--sampler", "decord")
    assert rc == 2 and err.count("\n") == 1 and "unknown sampler 'decord'" in err
    assert _tree_digest(store) == before


def test_map_frames_reads_a_files_own_index_key(tmp_path, capsys):
    lines = [
        {"qid": "q1", "pred": "A", "gt": "A", "meta": {"frames": [0, 42, 85, 128, 170, 213, 256, 299]}},
        {"qid": "q2", "pred": "B", "gt": "A", "meta": {"frames": [1, 2, 3, 4, 5, 6, 7, 250]}},  # a selection
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    store = tmp_path / "store"
    rc, out, err = _cli(
        capsys,
        "ingest",
        str(path),
        "--store",
        str(store),
        "--model",
        "m",
        "--benchmark",
        "videomme",
        "--config",
        "8f",
        "--map",
        "item_id=qid,prediction=pred,target=gt,frames=meta.frames",
    )
    assert rc == 0, err
    assert "config 8f -> 8f/adaptive: 1 of 2 logged frame sets match no uniform sampler" in out
    for item, line in zip(("q1", "q2"), lines, strict=True):
        (row,) = _inspect(capsys, store, item)["responses"]
        assert (row["config"], row["frames_source"]) == ("8f/adaptive", "logged")
        assert row["frame_indices"] == line["meta"]["frames"] and row["frames"] == 8


# -- reconstructed frames ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sampler", "expected"),
    [
        ("lmms-eval", lambda t: np.linspace(0, t - 1, 16, dtype=int).tolist()),
        ("vlmevalkit", lambda t: [int(i * t / 17) for i in range(1, 17)]),
    ],
)
def test_a_named_sampler_reconstructs_from_the_catalogs_frame_count(tmp_path, capsys, sampler, expected):
    store = tmp_path / "store"
    _link(store, LENGTHS)
    run = _write_run(tmp_path / "run", 16, _uniform_samples(16, frame_idx=False))
    rc, out, err = _cli(
        capsys, "ingest", str(run), "--store", str(store), "--benchmark", "videomme", "--sampler", sampler
    )
    assert rc == 0, err
    assert "frames reconstructed 4" in out
    for item, t in LENGTHS.items():
        row = _inspect(capsys, store, item)["responses"][0]
        assert (row["config"], row["frames_source"], row["sampler"]) == ("16f", "reconstructed", sampler)
        assert row["frame_indices"] == expected(t)
    rc, out, _ = _cli(capsys, "info", "--store", str(store))
    assert rc == 0 and f"16f: reconstructed:{sampler} 4" in out
    # a re-run with "the same frames as the logged answer" feeds the harness's reconstructed set
    from backend.runtime.logged_frames import logged_indices
    from store.configs import parse

    replay = logged_indices(Store(store), MODEL, "videomme", "002-1", parse("16f/logged"))
    assert replay.tolist() == expected(LENGTHS["002-1"])
    catalog.replace(Store(store), "videomme", catalog.empty().drop(columns=["benchmark"]))  # unlinked again
    with pytest.raises(UserError, match="reconstructed by the .* no video is linked"):
        logged_indices(Store(store), MODEL, "videomme", "002-1", parse("16f/logged"))


def test_without_a_sampler_frames_are_unknown_never_uniform(tmp_path, capsys):
    store = tmp_path / "store"
    _link(store, LENGTHS)
    run = _write_run(tmp_path / "run", 16, _uniform_samples(16, frame_idx=False))
    assert _cli(capsys, "ingest", str(run), "--store", str(store), "--benchmark", "videomme")[0] == 0
    report = _inspect(capsys, store, "001-1")
    assert report["responses"][0]["frames_source"] == "unknown" and report["responses"][0]["frame_indices"] is None
    assert report["frames"][0]["source"] == "unknown" and report["frames"][0]["indices"] is None
    rc, out, _ = _cli(capsys, "info", "--store", str(store), "--json")
    assert json.loads(out)["frames"][MODEL]["videomme"] == {"16f": {"unknown": 4}}


@pytest.mark.slow
@pytest.mark.realdata
def test_real_lmms_eval_log_reconstructs_lmms_eval_frames_for_linked_clips(realdata, tmp_path, capsys):
    """The shared real Video-MME log (16 frames, no indices logged) with catalog rows for a few items."""
    log = realdata / "lmms-eval_llava-next-video-7b_videomme_16f_samples.jsonl"
    lengths = {"001-1": 2160, "001-2": 2160, "150-3": 911, "600-1": 95_000, "900-2": 7}
    for sampler, expected in (
        ("lmms-eval", lambda t: np.linspace(0, t - 1, min(16, t), dtype=int).tolist()),
        ("vlmevalkit", lambda t: [int(i * t / 17) for i in range(1, 17)]),
    ):
        store = tmp_path / sampler
        _link(store, lengths)
        rc, out, err = _cli(capsys, "ingest", str(log), "--store", str(store), "--model", MODEL, "--sampler", sampler)
        assert rc == 0, err
        assert "2700 rows, 2700 new" in out and "frames reconstructed 2700" in out
        for item, t in lengths.items():
            row = _inspect(capsys, store, item)["responses"][0]
            assert (row["frames_source"], row["sampler"]) == ("reconstructed", sampler)
            assert row["frame_indices"] == expected(t), item
        unlinked = _inspect(capsys, store, "002-1")
        assert unlinked["responses"][0]["frame_indices"] is None and "videos link" in unlinked["frames"][0]["note"]


# -- folders ------------------------------------------------------------------------------------------------
def _lmms_tree(root: Path) -> Path:
    """Three budgets as lmms-eval writes them, plus files that are no result file."""
    for frames, stamp in ((8, "20260101_080000"), (16, "20260101_160000"), (32, "20260102_320000")):
        _write_run(root / f"videomme_{frames}_results", frames, _uniform_samples(frames, frame_idx=False), stamp)
    (root / "notes.txt").write_text("not a result file\n")
    (root / "videomme_8_results" / "run.log").write_text("log\n")
    return root


def test_ingest_dir_walks_dot_folders_and_dry_run_writes_nothing(tmp_path, capsys):
    tree = _lmms_tree(tmp_path / "out")
    store = tmp_path / "store"
    Store(store).root.mkdir()
    rc, out, err = _cli(capsys, "ingest", str(tree), "--store", str(store), "--benchmark", "videomme")
    assert rc == 0, err
    before = _tree_digest(store)
    rc, out, err = _cli(
        capsys,
        "ingest",
        str(tree),
        "--store",
        str(tmp_path / "plan"),
        "--benchmark",
        "videomme",
        "--sampler",
        "lmms-eval",
        "--dry-run",
    )
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 4 and all("..__LLaVA-NeXT-Video-7B-Qwen2" in line for line in lines[:3])
    configs = {line.split(" rows as ")[1].split(";")[0] for line in lines[:3]}  # files in path order
    assert configs == {"8f", "16f", "32f"}
    assert (
        all("frames reconstructed 4" in line for line in lines[:3])
        and "2 other file(s) skipped; checks passed, nothing written" in lines[3]
    )
    assert not (tmp_path / "plan").exists() or not any((tmp_path / "plan").rglob("*.parquet"))
    rc, out, err = _cli(
        capsys, "ingest", str(tree), "--store", str(store), "--benchmark", "videomme", "--dry-run", "--json"
    )
    assert rc == 0 and json.loads(out)["dry_run"] is True and json.loads(out)["store_version"] == 1
    assert _tree_digest(store) == before  # byte-identical
    rc, out, _ = _cli(capsys, "info", "--store", str(store), "--json")
    assert json.loads(out)["configs"][MODEL]["videomme"] == ["8f", "16f", "32f"]
    before = _tree_digest(store)  # `info` keeps its caches in the store folder
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("nothing here\n")
    rc, _, err = _cli(capsys, "ingest", str(tmp_path / "empty"), "--store", str(store))
    assert rc == 2 and err.count("\n") == 1 and "no result files found" in err
    assert _tree_digest(store) == before


def test_budget_from_a_top_k_token_in_the_run_folder(tmp_path):
    from store.ingest.common import budget_hint

    path = tmp_path / "selected_videomme_blip_aks_k32_ratio1_results" / f"..__{MODEL}" / "x_samples_custom.jsonl"
    assert budget_hint(path) == ("32f", "the run folder name")


# -- older stores -----------------------------------------------------------------------------------------
def test_a_store_written_before_the_frames_columns_still_reads(tmp_path, capsys):
    store = tmp_path / "store"
    run = _write_run(tmp_path / "run", 8, _uniform_samples(8))
    assert _cli(capsys, "ingest", str(run), "--store", str(store), "--benchmark", "videomme")[0] == 0
    for f in (store / "responses").glob("*.parquet"):  # as an older version wrote them: no frames_source, sampler
        table = pq.read_table(f)
        pq.write_table(table.drop_columns(["frames_source", "sampler"]), f)
    later = _write_run(tmp_path / "later", 16, _uniform_samples(16, frame_idx=False))
    assert _cli(capsys, "ingest", str(later), "--store", str(store), "--benchmark", "videomme")[0] == 0
    by = {r["config"]: r for r in _inspect(capsys, store, "001-1")["responses"]}
    assert (
        by["8f"]["frames_source"] == "logged"
        and by["8f"]["frame_indices"] == np.linspace(0, 299, 8, dtype=int).tolist()
    )
    assert by["16f"]["frames_source"] == "unknown"
    rc, out, err = _cli(capsys, "check", "--store", str(store), "--json")
    assert rc == 0 and json.loads(out)["sound"] is True, out + err
    rc, _, err = _cli(capsys, "compact", "--store", str(store))
    assert rc == 0, err
    merged = {r["config"]: r for r in _inspect(capsys, store, "001-1")["responses"]}
    assert merged["8f"]["frame_indices"] == by["8f"]["frame_indices"] and merged["16f"]["frames_source"] == "unknown"


def test_video_mme_json_keeps_the_youtube_id_as_the_video(tmp_path, capsys):
    question = {"task_type": "Counting Problem", "question": "How many?", "options": ["A. 1", "B. 2"], "answer": "A"}
    videos = [
        {
            "video_id": "001",
            "videoID": "fFjv93ACGo8",
            "duration": "short",
            "domain": "Knowledge",
            "questions": [question | {"question_id": "001-1", "response": "A"}],
        },
        {
            "video_id": "002",
            "duration": "short",
            "domain": "Sports",
            "questions": [question | {"question_id": "002-1", "response": "B"}],
        },
    ]
    path = tmp_path / "videomme_results.json"
    path.write_text(json.dumps(videos))
    store = tmp_path / "store"
    rc, _, err = _cli(capsys, "ingest", str(path), "--store", str(store), "--model", "m", "--config", "8f")
    assert rc == 0, err
    first, second = _inspect(capsys, store, "001-1")["item"], _inspect(capsys, store, "002-1")["item"]
    assert (first["video"], first["domain"]) == ("fFjv93ACGo8", "Knowledge")
    assert (second["video"], second["domain"]) == ("002", "Sports")  # no YouTube id: Video-MME's number, as before
