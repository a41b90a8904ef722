"""Issue 20, build 1: each benchmark's published layout is linked to the items the store holds (ingested
from an lmms-eval log over the same items), every stored item is covered, and ``videos check`` reports a
deleted file as missing and a file of garbage bytes as unreadable."""

from __future__ import annotations

import json

import pytest

from backend.cli import main
from tests import video_layouts


@pytest.fixture
def video_root(tmp_path, monkeypatch):
    root = tmp_path / "videos"
    root.mkdir()
    monkeypatch.setenv("TRAJAUDIT_VIDEO_ROOT", str(root))
    return root


def run_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", list(video_layouts.BUILDERS))
def test_published_layout_links_every_stored_item(name, video_root, tmp_path, capsys):
    built = video_layouts.BUILDERS[name](video_root, tmp_path / "logs")
    store = str(tmp_path / "store")
    assert main(["ingest", *map(str, built.samples), "--store", store, "--model", "m", "--config", "8f"]) == 0
    out = run_json(["videos", "link", "--benchmark", name, "--dataset", str(built.dataset), "--store", store], capsys)
    assert out["layout"] == name and out["stored_items"] > 0
    assert out["matched_items"] == out["stored_items"] == out["items"] == out["linked"]
    assert out["files"] == len(built.clips) and out["missing"] == out["unreadable"] == 0
    (report,) = run_json(["videos", "check", "--store", store], capsys)["benchmarks"]
    assert report["linked"] == report["items"] == out["items"] and report["unlinked"] == 0

    gone, garbage = built.dataset / built.clips[0], built.dataset / built.clips[-1]
    gone.unlink()
    garbage.write_bytes(b"\x00garbage, not a video" * 50)
    relinked = run_json(
        ["videos", "link", "--benchmark", name, "--dataset", str(built.dataset), "--store", store], capsys
    )
    (report,) = run_json(["videos", "check", "--store", store, "--benchmark", name], capsys)["benchmarks"]
    assert report["missing"] == relinked["missing"] > 0 and report["unreadable"] == relinked["unreadable"] > 0
    assert report["missing"] + report["unreadable"] + report["linked"] == report["items"]
    prefix = str(built.dataset.relative_to(video_root))
    assert {r["path"] for r in report["examples"]["missing"]} == {f"{prefix}/{built.clips[0]}"}
    assert {r["path"] for r in report["examples"]["unreadable"]} == {f"{prefix}/{built.clips[-1]}"}
