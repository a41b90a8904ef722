"""The server's configuration: stores and video root from the command line, environment or a file, never a URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.serverconfig import ServerConfig, load
from store.errors import UserError


def test_default_is_the_launch_store_with_its_videos(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load([], {})
    assert config.stores == {"trajaudit-data": tmp_path / "trajaudit-data"}
    assert config.video_root_for(config.stores[config.default]) == tmp_path / "trajaudit-data" / "videos"


def test_command_line_wins_and_names_stores(tmp_path):
    env = {"TRAJAUDIT_STORE": str(tmp_path / "env"), "TRAJAUDIT_VIDEO_ROOT": str(tmp_path / "env-videos")}
    config = load(
        ["--store", str(tmp_path / "a"), "--store", f"real={tmp_path / 'b'}", "--video-root", str(tmp_path / "v")], env
    )
    assert config.stores == {"a": tmp_path / "a", "real": tmp_path / "b"}
    assert config.default == "a"
    assert config.video_root_for(tmp_path / "a") == tmp_path / "v"


def test_environment_lists_more_stores(tmp_path):
    env = {"TRAJAUDIT_STORE": str(tmp_path / "main"), "TRAJAUDIT_STORES": f"x={tmp_path / 'x'}, y={tmp_path / 'y'}"}
    assert list(load([], env).stores) == ["main", "x", "y"]


def test_same_folder_names_stay_distinct(tmp_path):
    config = load(["--store", str(tmp_path / "a" / "s"), "--store", str(tmp_path / "b" / "s")], {})
    assert list(config.stores) == ["s", "s-2"]


def test_config_file_relative_to_itself(tmp_path):
    file = tmp_path / "conf" / "trajaudit.toml"
    file.parent.mkdir()
    file.write_text('video_root = "videos"\n[stores]\ndemo = "../demo"\nreal = "/data/real"\n')
    config = load(["--config", str(file)], {})
    assert config == ServerConfig({"demo": tmp_path / "demo", "real": Path("/data/real")}, tmp_path / "conf" / "videos")
    assert load([], {"TRAJAUDIT_CONFIG": str(file)}) == config


@pytest.mark.parametrize(
    ("argv", "file_text", "message"),
    [
        (["--stor", "x"], None, "unrecognized arguments"),
        (["--store"], None, "expected one argument"),
        (["--store", "a=", "--store", "b"], None, "names no folder"),
        (["--store", "n=/a", "--store", "n=/b"], None, "two stores are named 'n'"),
        ([], "[stores\n", "not valid TOML"),
        ([], "stores = 3\n", "must map names to folders"),
        ([], '[stores]\n"bad name" = "/x"\n', "store name 'bad name'"),
        ([], "video_root = 1\n", "video_root must be a folder"),
    ],
)
def test_bad_configuration_is_a_message(tmp_path, argv, file_text, message):
    if file_text is not None:
        (tmp_path / "c.toml").write_text(file_text)
        argv = [*argv, "--config", str(tmp_path / "c.toml")]
    with pytest.raises(UserError, match=message):
        load(argv, {})


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(UserError, match="config file .*nope.toml: cannot read it"):
        load([], {"TRAJAUDIT_CONFIG": str(tmp_path / "nope.toml")})
