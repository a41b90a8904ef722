"""Issue 20, build 1: each benchmark's published layout is linked to the items the store holds (ingested
from an lmms-eval log over the same items), every stored item is covered, and ``videos check`` reports a
deleted file as missing and a file of garbage bytes as unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from backend.cli import main
from store.errors import UserError
from tests import video_layouts
from tests.test_ingest_gate import snapshot


@pytest.fixture
def video_root(tmp_path, monkeypatch):
    root = tmp_path / "videos"
    root.mkdir()
    monkeypatch.setenv("TRAJAUDIT_VIDEO_ROOT", str(root))
    return root


def link_argv(benchmark: str, store: str, dataset: Path, *args: str) -> list[str]:
    """``trajaudit videos link`` of ``dataset`` as ``benchmark``'s layout into ``store``, then ``args``."""
    return ["videos", "link", "--benchmark", benchmark, "--store", store, "--dataset", str(dataset), *args]


def run_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", [*video_layouts.BUILDERS, *video_layouts.BUILDERS_NO_DOC])
def test_published_layout_links_every_stored_item(case, video_root, tmp_path, capsys):
    built = (video_layouts.BUILDERS | video_layouts.BUILDERS_NO_DOC)[case](video_root, tmp_path / "logs")
    name = built.benchmark
    store = str(tmp_path / "store")
    assert main(["ingest", *map(str, built.samples), "--store", store, "--model", "m", "--config", "8f"]) == 0
    out = run_json(link_argv(name, store, built.dataset), capsys)
    assert out["layout"] == name and out["stored_items"] > 0
    assert out["matched_items"] == out["stored_items"] == out["items"] == out["linked"]
    assert out["files"] == len(built.clips) and out["missing"] == out["unreadable"] == 0
    (report,) = run_json(["videos", "check", "--store", store], capsys)["benchmarks"]
    assert report["linked"] == report["items"] == out["items"] and report["unlinked"] == 0

    gone, garbage = built.dataset / built.clips[0], built.dataset / built.clips[-1]
    gone.unlink()
    garbage.write_bytes(b"\x00garbage, not a video" * 50)
    relinked = run_json(link_argv(name, store, built.dataset), capsys)
    (report,) = run_json(["videos", "check", "--store", store, "--benchmark", name], capsys)["benchmarks"]
    assert report["missing"] == relinked["missing"] > 0 and report["unreadable"] == relinked["unreadable"] > 0
    assert report["missing"] + report["unreadable"] + report["linked"] == report["items"]
    prefix = str(built.dataset.relative_to(video_root))
    assert {r["path"] for r in report["examples"]["missing"]} == {f"{prefix}/{built.clips[0]}"}
    assert {r["path"] for r in report["examples"]["unreadable"]} == {f"{prefix}/{built.clips[-1]}"}


@pytest.fixture
def linked(video_root, tmp_path, capsys):
    """A Video-MME layout ingested and linked once: (layout, store folder)."""
    built = video_layouts.videomme(video_root, tmp_path / "logs")
    store = str(tmp_path / "store")
    assert main(["ingest", *map(str, built.samples), "--store", store, "--model", "m", "--config", "8f"]) == 0
    assert main(link_argv("videomme", store, built.dataset)) == 0
    return built, store


def _parquet(dataset, change):
    path = dataset / "videomme" / "test-00000-of-00001.parquet"
    pd.read_parquet(path).pipe(change).to_parquet(path)


def _rename_first(df, col, value):
    df.loc[0, col] = value
    return df


def _edited(change):
    """A case's arguments: the layout's own dataset, its parquet first edited by ``change``."""

    def args(built, root):
        _parquet(built.dataset, change)
        return ["--dataset", str(built.dataset)]

    return args


BAD = {
    "outside the root": (lambda b, root: ["--dataset", str(root.parent)], "is outside the video root"),
    "not the layout": (lambda b, root: ["--dataset", str(root)], "is not a Video-MME layout"),
    "another layout": (
        lambda b, root: ["--dataset", str(b.dataset), "--layout", "mvbench"],
        "is not an MVBench layout",
    ),
    "missing column": (_edited(lambda df: df.drop(columns=["videoID"])), "missing column(s) videoID"),
    "duplicate video ids": (
        _edited(lambda df: _rename_first(df, "videoID", "other")),
        "duplicate video ids: video_id '001' is given videoID other and fFjv93ACGo8",
    ),
    "duplicate question ids": (
        _edited(lambda df: _rename_first(df, "question_id", "001-2")),
        "1 duplicate question_id(s), e.g. '001-2'",
    ),
    "ids of another benchmark": (
        lambda b, root: [
            "--dataset",
            str(b.dataset),
            "--paths",
            str(_write(root / "p.csv", "x-1,data/fFjv93ACGo8.mp4\n")),
        ],
        "none of the 6 videomme items in the store match",
    ),
    "a path out of the root": (
        lambda b, root: [
            "--dataset",
            str(b.dataset),
            "--paths",
            str(_write(root / "p.csv", "001-1,../../../etc/passwd\n")),
        ],
        "outside the video root",
    ),
    "three columns": (
        lambda b, root: ["--dataset", str(b.dataset), "--paths", str(_write(root / "p.tsv", "001-1\ta\tb\n"))],
        "expected two columns (item id, path), found 3",
    ),
    "a layout and a template": (
        lambda b, root: ["--dataset", str(b.dataset), "--layout", "videomme", "--template", "{video}.mp4"],
        "--template and --paths replace it",
    ),
    "unknown template field": (
        lambda b, root: ["--dataset", str(b.dataset), "--template", "{youtube}.mp4"],
        "--template names youtube: not an item field",
    ),
    "a dataset folder that is a symlink loop": (
        lambda b, root: ["--dataset", str(_self_link(root / "loop")), "--layout", "videomme"],
        "loop: a symlink loop, or a link that cannot be resolved",
    ),
}


def _self_link(path: Path) -> Path:
    path.symlink_to(path.name)
    return path


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_leaves_the_store_unchanged(case, linked, video_root, capsys):
    built, store = linked
    args, message = BAD[case]
    argv = args(built, video_root)
    before = snapshot(Path(store))
    capsys.readouterr()
    assert main(["videos", "link", "--benchmark", "videomme", "--store", store, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("trajaudit videos: error: ")
    assert snapshot(Path(store)) == before


def test_template_and_paths_link_any_benchmark(linked, video_root, capsys):
    built, store = linked
    rel = built.dataset.relative_to(video_root)
    paths = _write(video_root / "pairs.csv", "item_id,path\n001-1,data/fFjv93ACGo8.mp4\n001-2,data/nothere.mp4\n")
    out = run_json(
        link_argv("videomme", store, built.dataset, "--paths", str(paths)),
        capsys,
    )
    assert (out["layout"], out["items"], out["linked"], out["missing"]) == ("paths", 2, 1, 1)
    assert out["examples"]["missing"] == [{"item_id": "001-2", "path": f"{rel}/data/nothere.mp4"}]
    (report,) = run_json(["videos", "check", "--store", store], capsys)["benchmarks"]
    assert (report["items"], report["linked"], report["missing"], report["unlinked"]) == (6, 1, 1, 4)
    # items.video is Video-MME's number here (``001``): a folder of files named by it is reached by a template
    video_layouts.clip(built.dataset / "by-number" / "001.mp4")
    out = run_json(
        link_argv("videomme", store, built.dataset, "--template", "by-number/{video}.mp4"),
        capsys,
    )
    assert (out["layout"], out["items"], out["linked"], out["missing"]) == ("template", 6, 3, 3)
    assert out["examples"]["missing"][0] == {"item_id": "002-1", "path": f"{rel}/by-number/002.mp4"}


def test_the_inspector_and_a_rerun_find_the_linked_video(video_root, tmp_path, capsys):
    """Before the link, ``items.video`` (``001``) names no file and the notice says which command links it;
    after it, ``inspect`` probes the file named by the YouTube id and a re-run request resolves it."""
    import numpy as np

    from backend.runtime import registry, rerun
    from store.rerun_request import RerunRequest

    built = video_layouts.videomme(video_root, tmp_path / "logs")
    store = str(tmp_path / "store")
    ingest = ["ingest", *map(str, built.samples), "--store", store, "--model", "m", "--config", "8f"]
    assert main([*ingest, "--sampler", "lmms-eval"]) == 0
    inspect = ["inspect", "--store", store, "--benchmark", "videomme", "--item", "002-1"]
    before = run_json(inspect, capsys)
    assert before["item"]["video"] == "002" and before["video"]["path"] is None
    assert before["video"]["problem"].startswith("no video linked for videomme item 002-1 (video '002' not found")
    assert "run `trajaudit videos link --benchmark videomme --dataset DIR`" in before["video"]["problem"]
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(store, registry.ModelSpec("m", "qwen2_5_vl", str(ckpt), max_frames=32))
    with pytest.raises(UserError, match="no video linked for videomme item 002-1"):
        rerun.submit(store, RerunRequest("m", "videomme", "002-1", "16f"))

    assert main(link_argv("videomme", store, built.dataset)) == 0
    after = run_json(inspect, capsys)
    assert (
        after["video"]["path"] == str(built.dataset / "data" / "k0ZA_Qb3cdE.mkv") and after["video"]["problem"] is None
    )
    assert after["video"]["info"]["n_frames"] == 18
    (plan,) = after[
        "frames"
    ]  # no logged indices: lmms-eval's sampler (named at ingest) over the linked file's 18 frames
    assert plan["source"] == "reconstructed" and plan["indices"] == np.linspace(0, 17, 8, dtype=int).tolist()
    assert rerun.submit(store, RerunRequest("m", "videomme", "002-1", "16f")).job_id is not None


def test_mlvu_questions_asked_of_two_videos_cannot_be_told_apart(video_root, tmp_path, capsys):
    built = video_layouts.mlvu(video_root, tmp_path / "logs")
    task = built.dataset / "json" / "1_plotQA.json"
    entries = json.loads(task.read_text())
    task.write_text(json.dumps([entries[0], entries[1] | {"question": entries[0]["question"]}]))
    capsys.readouterr()
    argv = link_argv("mlvu", str(tmp_path / "s"), built.dataset)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "1 duplicate question(s), e.g. 'What happens in movie101_66.mp4 (1_plotQA)?'" in err and "--paths" in err
    assert not (tmp_path / "s" / "manifest.json").exists()


def test_links_that_loop_are_skipped_and_counted(linked, video_root, capsys):
    """Issue 34 item 8: a folder holding a symlink loop ended ``videos link`` in ``RuntimeError: Symlink
    loop`` (exit 1). A loop (a link to itself, two links to each other) is skipped and counted; the other
    items are linked as before, and a skipped item stays unlinked."""
    built, store = linked
    data = built.dataset / "data"
    (data / "self.mp4").symlink_to("self.mp4")
    (data / "ping.mp4").symlink_to("pong.mp4")
    (data / "pong.mp4").symlink_to("ping.mp4")
    paths = _write(
        video_root / "pairs.csv",
        "item_id,path\n001-1,data/fFjv93ACGo8.mp4\n001-2,data/self.mp4\n001-3,data/ping.mp4\n002-1,data/gone.mp4\n",
    )
    out = run_json(link_argv("videomme", store, built.dataset, "--paths", str(paths)), capsys)
    assert (out["items"], out["linked"], out["missing"], out["skipped_links"]) == (2, 1, 1, 2)
    rel = built.dataset.relative_to(video_root)
    assert out["skipped_examples"] == [
        {"item_id": "001-2", "path": f"{rel}/data/self.mp4"},
        {"item_id": "001-3", "path": f"{rel}/data/ping.mp4"},
    ]
    (report,) = run_json(["videos", "check", "--store", store], capsys)["benchmarks"]
    assert (report["linked"], report["missing"], report["unlinked"]) == (1, 1, 4)
    capsys.readouterr()
    assert main(link_argv("videomme", store, built.dataset, "--paths", str(paths))) == 0
    assert "2 links skipped (a symlink loop or a link that cannot be resolved)" in capsys.readouterr().out
