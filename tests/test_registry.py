"""The model registry: TOML round trip, refusals, the CLI, and the demo model."""

from __future__ import annotations

import json
import tomllib

import pytest

from backend.cli import main
from backend.runtime import registry
from backend.runtime.registry import ModelSpec
from store.errors import UserError


@pytest.fixture
def ckpt(tmp_path):
    path = tmp_path / "ckpt"
    path.mkdir()
    return path


def test_round_trip_keeps_every_field(tmp_path, ckpt):
    root = tmp_path / "store"
    odd = ModelSpec(
        'Qwen2.5-VL "7B" / ünï', "qwen2_5_vl", str(ckpt), "bfloat16", "cuda", 128, 151_000, "line1\nline2\x7f"
    )
    plain = ModelSpec("tiny", "internvl", str(ckpt))
    registry.add(root, odd)
    registry.add(root, plain)
    text = (root / "models.toml").read_text()
    assert "default_pixels" in text and tomllib.loads(text)  # valid TOML, written by our writer
    assert registry.list_models(root) == [odd, plain]
    assert registry.get(root, "tiny").default_pixels is None and registry.get(root, "tiny").max_frames == 64
    assert registry.remove(root, "tiny") == plain
    assert [m.name for m in registry.list_models(root)] == [odd.name]


def test_relative_paths_are_relative_to_the_store(tmp_path):
    root = tmp_path / "store"
    (root / "models" / "m").mkdir(parents=True)
    spec = registry.add(root, ModelSpec("m", "qwen3_vl", "models/m"))
    assert spec.resolved_path(root) == (root / "models" / "m").resolve()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (dict(family="gpt4"), "unknown family 'gpt4'"),
        (dict(path="/nonexistent/ckpt"), "checkpoint path '/nonexistent/ckpt' does not exist"),
        (dict(dtype="int8"), "unknown dtype 'int8'"),
        (dict(device="tpu"), "unknown device 'tpu'"),
        (dict(max_frames=0), "max_frames must be a positive integer"),
        (dict(default_pixels=-5), "default_pixels must be a positive integer"),
    ],
)
def test_bad_specs_are_refused_and_nothing_written(tmp_path, ckpt, spec, message):
    root = tmp_path / "store"
    fields = dict(name="m", family="qwen2_5_vl", path=str(ckpt)) | spec
    with pytest.raises(UserError, match=message):
        registry.add(root, ModelSpec(**fields))
    assert not (root / "models.toml").exists()


def test_unknown_model_duplicates_and_broken_file(tmp_path, ckpt):
    root = tmp_path / "store"
    with pytest.raises(UserError, match="unknown model 'nope'; registered models: none registered"):
        registry.get(root, "nope")
    registry.add(root, ModelSpec("m", "qwen2_5_vl", str(ckpt)))
    with pytest.raises(UserError, match="already registered"):
        registry.add(root, ModelSpec("m", "qwen3_vl", str(ckpt)))
    assert registry.add(root, ModelSpec("m", "qwen3_vl", str(ckpt)), replace=True).family == "qwen3_vl"
    with pytest.raises(UserError, match="unknown model 'x'; registered models: m"):
        registry.remove(root, "x")
    (root / "models.toml").write_text('[models.m]\nfamily = "qwen2_5_vl"\npath = "."\ncolour = "red"\n')
    with pytest.raises(UserError, match=r"unknown keys \['colour'\]"):
        registry.load(root)
    (root / "models.toml").write_text("[models.m\n")
    with pytest.raises(UserError, match="not valid TOML"):
        registry.load(root)


def test_cli_add_list_remove(tmp_path, ckpt, capsys):
    root = str(tmp_path / "store")
    rc = main(
        [
            "models",
            "add",
            "m",
            "--store",
            root,
            "--family",
            "llava_next_video",
            "--path",
            str(ckpt),
            "--max-frames",
            "32",
        ]
    )
    assert rc == 0
    capsys.readouterr()
    assert main(["models", "list", "--store", root, "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry | {"path": None} == {
        "name": "m",
        "family": "llava_next_video",
        "path": None,
        "dtype": "auto",
        "device": "auto",
        "max_frames": 32,
        "default_pixels": None,
        "note": "",
    }
    assert entry["path"] == str(ckpt.resolve())
    assert main(["models", "add", "bad", "--store", root, "--family", "nope", "--path", str(ckpt)]) == 2
    assert "unknown family 'nope'" in capsys.readouterr().err
    assert main(["models", "remove", "m", "--store", root]) == 0
    capsys.readouterr()
    assert main(["models", "list", "--store", root, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.slow
@pytest.mark.worker
def test_demo_model_is_built_and_registered(tmp_path):
    root = tmp_path / "store"
    spec = registry.register_demo_model(root, "demo-qwen")
    assert (spec.family, spec.path, spec.note) == ("qwen2_5_vl", "models/demo-qwen", registry.DEMO_NOTE)
    assert (spec.resolved_path(root) / "config.json").is_file()
    assert registry.get(root, "demo-qwen") == spec
