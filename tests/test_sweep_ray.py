"""``--executor ray``: two actors on a local Ray instance give the answers a local sweep gives; they read the
videos from a folder outside the store (standing in for the nodes' copy) and return their batches, which
this process appends."""

from __future__ import annotations

import json
import shutil

import pytest

from backend.runtime.sweep.runner import SweepRequest, run_sweep
from store.store import Store
from tests.test_sweep import build_sweep_store
from tests.tiny_models import tiny  # noqa: F401  (a fixture)

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'trajaudit[ray]'")
GRID = ["text", "4f", "8f", "8f/random-s1"]
pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _answers(root) -> dict:
    rows = Store(root).query("SELECT item_id, config, answer, correct, option_probs, provenance FROM responses")
    return {
        (r["item_id"], r["config"]): (r["answer"], r["correct"], *map(json.loads, (r["option_probs"], r["provenance"])))
        for r in rows.to_dict("records")
    }


@pytest.mark.slow
def test_ray_actors_store_what_a_local_sweep_stores(tiny, tmp_path, local_ray):
    roots = {name: build_sweep_store(tmp_path / name, ["llava_next_video"], tiny) for name in ("local", "ray")}
    node_videos = shutil.copytree(roots["ray"] / "videos", tmp_path / "node-videos")
    runs = {
        name: run_sweep(
            SweepRequest(
                str(root),
                "llava_next_video",
                "bench",
                GRID,
                executor=name,
                workers=2,
                verify=3,
                batch_size=4,
                progress=False,
                video_root=str(node_videos) if name == "ray" else None,
            )
        )
        for name, root in roots.items()
    }
    assert runs["ray"].shards == 2 and runs["ray"].verify.choice_drift == 0
    assert runs["ray"].cells == runs["local"].cells
    local, remote = _answers(roots["local"]), _answers(roots["ray"])
    assert local.keys() == remote.keys() and len(local) == 6 * 4 + 1
    for key, (answer, correct, probs, _) in local.items():
        r_answer, r_correct, r_probs, _ = remote[key]
        assert (answer, correct) == (r_answer, r_correct), key
        assert probs.keys() == r_probs.keys()
        assert max(abs(probs[x] - r_probs[x]) for x in probs) <= 1e-6, key
    shards = {prov["shard"] for *_, prov in remote.values()}
    assert shards == {0, 1}  # both actors answered; their batches were appended here
    runs_table = Store(roots["ray"]).query("SELECT run_id FROM runs")
    assert runs_table["run_id"].str.contains("-s0-b").any() and runs_table["run_id"].str.contains("-s1-b").any()
