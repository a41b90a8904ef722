"""The dispatcher's settings and records without a cluster: resources, checkpoints the nodes hold, bad
flags (exit 2, one line), the Workers page's remote actors, and the line a machine without Ray gets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from backend.contracts.base import to_json
from backend.runtime import dispatch_records, registry, worker_pool
from backend.runtime.dispatch import actor_options, parse_resources, ray_module, remote_checkpoint, unplaceable
from store.errors import UserError
from store.queue import JobQueue
from tests.rerun_fixtures import build_store
from tests.test_cli_errors import one_line_error


def test_actor_resources_default_to_one_gpu_else_one_cpu_and_take_custom_ones():
    assert actor_options({}, cluster_gpus=4) == {"num_cpus": 0.0, "num_gpus": 1.0, "max_restarts": 0}
    assert actor_options({}, cluster_gpus=0) == {"num_cpus": 1.0, "num_gpus": 0.0, "max_restarts": 0}
    custom = actor_options(parse_resources('{"gpu_node": 1, "CPU": 2}'), cluster_gpus=0)
    assert custom == {"num_cpus": 2.0, "num_gpus": 0.0, "max_restarts": 0, "resources": {"gpu_node": 1.0}}
    for bad in ("nope", "[1]", '{"GPU": -1}', '{"GPU": true}', '{"x": "1"}'):
        with pytest.raises(UserError, match="--actor-resources"):
            parse_resources(bad)


def test_an_actor_is_unplaceable_only_when_no_live_node_offers_all_it_asks_for():
    head = {
        "Alive": True,
        "Resources": {"CPU": 1.0, "memory": 2e9, "node:10.0.0.1": 1.0, "node:__internal_head__": 1.0},
    }
    gpu = {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 2.0, "object_store_memory": 1e9, "gpu_node": 2.0}}
    gone = {"Alive": False, "Resources": {"CPU": 64.0, "tpu": 4.0}}
    nodes = [head, gpu, gone]
    assert unplaceable({"CPU": 0.0, "GPU": 1.0}, nodes) is None
    assert unplaceable({"CPU": 8.0, "GPU": 2.0, "gpu_node": 1.0}, nodes) is None  # one node offers it all
    assert unplaceable({"CPU": 0.0, "GPU": 0.0}, [gone]) == "the cluster has no live node"
    # a node that left offers nothing; the nodes' bookkeeping resources are not listed
    assert unplaceable({"CPU": 0.0, "tpu": 1.0}, nodes) == (
        "no live node offers tpu 1 (the 2 node(s) offer at most CPU 8, GPU 2, gpu_node 2)"
    )
    assert unplaceable({"CPU": 2.0, "GPU": 4.0}, nodes).startswith("no live node offers CPU 2, GPU 4 ")


def test_a_checkpoint_inside_the_store_is_not_given_to_actors(tmp_path):
    root = build_store(tmp_path / "s")  # model "m": its checkpoint folder is <store>/ckpt
    with pytest.raises(UserError, match="inside the store folder, which the actors never see") as refused:
        remote_checkpoint(registry.get(root, "m"), root)
    # the line it gives registers the model again with every setting kept, the path left to fill in
    line = str(refused.value).split("register that path: ")[1]
    assert line == (
        f"trajaudit models add m --family qwen2_5_vl --path /PATH/ON/THE/NODES --max-frames 32 --dtype auto "
        f"--device auto --replace --store {root}"
    )
    outside = tmp_path / "node-ckpt"
    outside.mkdir()
    (outside / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(root, registry.ModelSpec("n", "qwen2_5_vl", str(outside)))
    assert remote_checkpoint(registry.get(root, "n"), root) == str(outside.resolve())


def test_bad_dispatch_flags_exit_2_with_one_line(tmp_path, capsys):
    root = build_store(tmp_path / "s")
    base = ["dispatch", "--store", str(root), "--ray-address", "127.0.0.1:1"]
    assert "--actor-resources must be a JSON object" in one_line_error([*base, "--actor-resources", "gpu"], capsys)
    assert "it needs --videos node" in one_line_error([*base, "--video-root", str(tmp_path)], capsys)
    assert "must be positive" in one_line_error([*base, "--lease", "0"], capsys)


def test_a_cluster_that_cannot_be_reached_is_one_line_that_names_the_token_setting(tmp_path, capsys, monkeypatch):
    class Unreachable:  # ray.init as it fails after its retries: a wrong address, or InvalidAuthToken
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(address, **_):
            raise ConnectionError(f"Failed to connect to Ray cluster at {address}")

    monkeypatch.setattr("backend.runtime.dispatch.ray_module", lambda: Unreachable)
    outside = tmp_path / "node-ckpt"
    outside.mkdir()
    (outside / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    root = build_store(tmp_path / "s")
    registry.add(root, registry.ModelSpec("m", "qwen2_5_vl", str(outside)), replace=True)
    line = one_line_error(["dispatch", "--store", str(root), "--ray-address", "10.9.9.9:6379"], capsys)
    assert "cannot reach the Ray cluster at 10.9.9.9:6379 (Failed to connect" in line
    assert "InvalidAuthToken" in line and "export RAY_AUTH_MODE=token" in line


def test_without_ray_the_dispatcher_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as on a machine without the ray extra
    with pytest.raises(UserError, match=r"needs Ray: pip install 'trajaudit\[ray\]'"):
        ray_module()


def _record(worker_id: str, model: str) -> dict:
    return {
        "worker_id": worker_id, "model": model, "dispatcher": "d1", "node_ip": "10.0.0.7", "hostname": "gpu-7",
        "pid": 4242, "device": "cuda", "gpu": "NVIDIA H200", "gpu_ids": ["0"], "resources": {"GPU": 1.0},
        "state": "ready", "waiting": None, "jobs_done": 12, "jobs_failed": 1, "started_at": 1.0,
    }  # fmt: skip


def test_the_workers_page_lists_remote_actors_whose_heartbeat_is_current(tmp_path):
    root = build_store(tmp_path / "s")
    dispatch_records.save(
        dispatch_records.records_path(root, "d1"), [_record("ray-m-1", "m"), _record("ray-m-gone", "m")]
    )
    JobQueue(root).heartbeat("ray-m-1", "m", "cuda", None)  # the other one's dispatcher died: no heartbeat
    view = to_json(worker_pool.overview(root))  # as `jobs --json` prints it
    assert [a["worker_id"] for a in view["remote"]] == ["ray-m-1"]
    assert view["remote"][0] | {} == _record("ray-m-1", "m")
    assert [w["worker_id"] for w in view["workers"]] == ["ray-m-1"]
    assert worker_pool.local_worker(root, "m").state == "online"  # the re-run panel starts no local worker


def test_sweep_video_root_needs_the_ray_executor(tmp_path, capsys):
    pytest.importorskip("torch", reason="trajaudit sweep needs the worker extra")
    root = build_store(tmp_path / "s")
    argv = ["sweep", "--store", str(root), "--model", "m", "--benchmark", "bench", "--grid", "4f"]
    assert "it needs --executor ray" in one_line_error([*argv, "--video-root", str(Path(tmp_path))], capsys)
