"""Re-runs and sweeps on a real multi-node Ray cluster on this machine, with the store's one writer here.

The cluster (``ray.cluster_utils.Cluster``): a head with one CPU (the machine that holds the store) and
two worker nodes, each with a custom resource ``gpu_node`` standing in for GPUs. The nodes' "own
disks" are a folder outside the store holding the demo's tiny random-weights model (registered under
three names: one actor each) and a copy of the videos. Every test checks that the answers reach the
store through the dispatcher (or the sweep's driver), once each. That no actor is given the store's
path (its arguments, environment and command line) is checked on the actors of the dispatchers that
run in this process (frames shipped and read on the node; those left after 200 re-runs with kills) and,
for a dispatcher started from the CLI, in ``tests/test_dispatch_browser.py``; the sweep's actors get the
settings with the store's path blanked (``executors.run_ray``) and are not inspected.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from backend.contracts.catalog import parsed
from backend.contracts.runs import DispatchStats
from backend.runtime import registry, rerun, worker_pool
from backend.runtime.sweep.runner import SweepRequest, run_sweep
from store.queue import JobQueue
from store.rerun_request import RerunRequest
from store.store import Store
from tests.test_sweep import write_clip_items

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'trajaudit[ray]'")
from ray.cluster_utils import Cluster  # noqa: E402  (after the skip: Ray may be missing)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.cluster,
    pytest.mark.worker,
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
REPO = Path(__file__).resolve().parents[1]
MODELS = ("A", "B", "C")
GPU = {"gpu_node": 1.0}  # what each actor asks for: the stand-in GPU
N_RERUNS = int(os.environ.get("TRAJAUDIT_DISPATCH_RERUNS", "60"))  # the 200 with =200 (about 4x longer)


def build_site(base: Path) -> tuple[Path, Path]:
    """(store, node disk): items on two clips plus a text-only one; the demo's tiny model on the node disk,
    registered as A, B and C; a model ``broken`` whose checkpoint has no weights; the videos on both."""
    store, node = base / "store", base / "node"
    write_clip_items(store)
    shutil.copytree(store / "videos", node / "videos")
    from backend.runtime.inference.tiny import DEMO_INIT_SCALE, build_tiny

    ckpt = build_tiny("qwen2_5_vl", node / "ckpt", init_scale=DEMO_INIT_SCALE)  # the demo's model
    for name in MODELS:
        registry.add(
            store, registry.ModelSpec(name, "qwen2_5_vl", str(ckpt), dtype="float32", device="cpu", max_frames=16)
        )
    broken = node / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(store, registry.ModelSpec("broken", "qwen2_5_vl", str(broken), dtype="float32", device="cpu"))
    return store, node


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, Path]:
    return build_site(tmp_path_factory.mktemp("dispatch"))


@pytest.fixture(scope="module")
def cluster():
    """Three raylets: the head (the store's machine, 1 CPU) and two nodes with 3 CPUs and 3 ``gpu_node`` each."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    nodes = [c.add_node(num_cpus=3, resources={"gpu_node": 3}) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c, nodes
    ray.shutdown()
    c.shutdown()


def _queue(store: Path, requests: list[RerunRequest]) -> list[int]:
    return [rerun.place(store, rerun.validate(store, r)).job_id for r in requests]


def _requests(n: int, models=MODELS) -> list[RerunRequest]:
    """``n`` distinct forced re-runs over the models, items and a few configurations (t-1 has no video)."""
    visual = [
        (f"v{v}-{q}", c) for c in ("4f", "8f", "4f/random-s1", "8f/random-s2", "2f") for v in (1, 2) for q in (1, 2, 3)
    ]
    cells = [(m, i, c) for i, c in [*visual, ("t-1", "text")] for m in models]
    return [RerunRequest(m, "bench", i, c, force=True) for m, i, c in (cells * (n // len(cells) + 1))[:n]]


def _rows_per_run(store: Path, table: str, column: str) -> dict[str, int]:
    df = Store(store).query(
        f"SELECT {column} AS run, count(*) AS n FROM {table} WHERE {column} LIKE 'rerun-%' GROUP BY 1"
    )
    return dict(zip(df["run"], df["n"]))


def _assert_once(store: Path, job_ids: list[int]) -> None:
    """Every job done, and its answer stored exactly once (one responses row, one runs row)."""
    queue = JobQueue(store)
    states = {j: queue.get(j).state for j in job_ids}
    assert set(states.values()) == {"done"}, {j: s for j, s in states.items() if s != "done"}
    for table, column in (("responses", "run"), ("runs", "run_id")):
        counts = _rows_per_run(store, table, column)
        assert {f"rerun-{j}" for j in job_ids} <= counts.keys(), table
        assert {counts[f"rerun-{j}"] for j in job_ids} == {1}, table


def _no_store_in(actor_pid: int, received: list[str], store: Path) -> None:
    """The actor's arguments, environment and command line name no store (nor any folder inside it)."""
    needle = str(store.resolve())
    environ = Path(f"/proc/{actor_pid}/environ").read_bytes().decode(errors="replace")
    cmdline = Path(f"/proc/{actor_pid}/cmdline").read_bytes().decode(errors="replace")
    assert received and all(needle not in text for text in received), received
    assert needle not in environ and needle not in cmdline


class Running:
    """A dispatcher serving in a thread of this process (already connected to the cluster)."""

    def __init__(self, store: Path, **kw):
        from backend.runtime.dispatch import Dispatcher

        kw = {"resources": GPU, "lease_s": 3.0, "poll_s": 0.1} | kw
        self.dispatcher = Dispatcher(store, **kw)
        self.stats: DispatchStats | None = None  # what run() returned, once it has
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self.stats = self.dispatcher.run()

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.dispatcher.stop()
        self.thread.join(timeout=120)


def _wait(what, predicate, timeout_s: float = 300.0, poll_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll_s)
    return value


def _done(store: Path, job_ids: list[int]) -> int:
    queue = JobQueue(store)
    return sum(queue.get(j).state == "done" for j in job_ids)


def test_actors_answer_without_the_store_frames_shipped_or_read_on_the_node(site, cluster):
    store, node = site
    cells = [("v1-1", "4f"), ("v1-1", "8f/random-s1"), ("v2-2", "4f"), ("v2-2", "8f/random-s1"), ("t-1", "text")]
    requests = [RerunRequest("A", "bench", i, c, force=True) for i, c in cells]
    shipped = _queue(store, requests)
    with Running(store, models=["A"]) as run:
        _wait("the shipped jobs", lambda: _done(store, shipped) == len(shipped))
        (actor,) = run.dispatcher.slots.values()
        remote = worker_pool.overview(store).remote  # what the Workers page lists
        assert [(a.model, a.state, a.jobs_done) for a in remote] == [("A", "ready", len(shipped))]
        assert remote[0].node_ip and remote[0].hostname and remote[0].resources["gpu_node"] == 1.0
        _no_store_in(actor.info.pid, ray.get(actor.handle.received.remote()), store)
    assert run.stats.shipped_jobs == len(shipped) - 1  # the text-only job ships nothing
    assert run.stats.bytes_per_shipped_job > 0 and run.stats.done == len(shipped)
    read = _queue(store, requests)
    with Running(store, models=["A"], videos="node", video_root=str(node / "videos")) as run:
        _wait("the jobs read on the node", lambda: _done(store, read) == len(read))
        (actor,) = run.dispatcher.slots.values()
        _no_store_in(actor.info.pid, ray.get(actor.handle.received.remote()), store)
    assert run.stats.shipped_bytes == 0
    _assert_once(store, shipped + read)
    answers = Store(store).query("SELECT run, answer, option_probs, frame_indices FROM responses")
    by_run = {r["run"]: r for r in answers.to_dict("records")}
    for a, b in zip(shipped, read):  # the same frames give the same answer whichever side decoded them
        x, y = by_run[f"rerun-{a}"], by_run[f"rerun-{b}"]
        assert (x["answer"], list(x["frame_indices"])) == (y["answer"], list(y["frame_indices"]))
        px, py = json.loads(x["option_probs"]), json.loads(y["option_probs"])
        assert max(abs(px[k] - py[k]) for k in px) < 1e-5


def test_a_model_that_cannot_load_fails_its_jobs_with_the_reason(site, cluster):
    store, _ = site
    jobs = _queue(store, [RerunRequest("broken", "bench", "t-1", "text", force=True)] * 2)
    from backend.runtime.dispatch import Dispatcher

    stats = Dispatcher(store, models=["broken"], resources=GPU, poll_s=0.1).run(once=True)
    queue = JobQueue(store)
    for j in jobs:
        job = queue.get(j)
        assert job.state == "failed" and job.attempts == 1, job
        assert job.error.startswith("model 'broken' cannot be loaded from"), job.error
    assert stats.failed == 2 and stats.done == 0


def test_an_actor_no_node_can_hold_is_said_to_wait_and_is_placed_when_such_a_node_joins(site, cluster):
    store, _ = site
    c, _ = cluster
    (job,) = _queue(store, [RerunRequest("C", "bench", "v1-3", "4f", force=True)])
    lines: list[str] = []
    tpu = {"tpu_node": 1.0}  # no node of the cluster offers it
    with Running(store, models=["C"], resources=tpu, place_wait_s=1.0, log=lines.append) as run:
        said = _wait("the waiting line", lambda: [line for line in lines if "is not placed after" in line], 60)
        assert "no live node offers CPU 1, tpu_node 1" in said[0] and f"it waits with job {job}" in said[0], said
        assert "(the 3 node(s) offer at most CPU 3, gpu_node 3)" in said[0], said
        (actor,) = _wait("the record", lambda: worker_pool.overview(store).remote, 30)  # jobs --json, Workers page
        assert actor.state == "loading" and actor.waiting and "tpu_node 1" in actor.waiting, actor
        assert JobQueue(store).get(job).state == "running"  # the job waits with its actor, its lease renewed
        joined = c.add_node(num_cpus=1, resources=tpu)
        try:
            _wait("the job answered on the new node", lambda: _done(store, [job]) == 1)
            (actor,) = worker_pool.overview(store).remote
            assert actor.state == "ready" and actor.waiting is None, actor
            assert run.dispatcher.slots["C"].info.node_id == joined.node_id
        finally:
            c.remove_node(joined)
    assert any("a node that can hold it is in the cluster now" in line for line in lines), lines
    _assert_once(store, [job])


def _cli(*args: str, **kw) -> subprocess.Popen:
    code = "import sys; from backend.cli import main; sys.exit(main())"
    env = {k: v for k, v in os.environ.items() if k != "TRAJAUDIT_STORE"} | {"PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, env=env, text=True, **kw)


def test_cli_rerun_answers_through_the_dispatcher_and_a_killed_dispatcher_loses_nothing(site, cluster):
    store, _ = site
    c, _ = cluster
    queued = _cli(
        "rerun", "--store", str(store), "--model", "B", "--benchmark", "bench", "--item", "v1-2", "--config", "4f",
        "--force", "--json", stdout=subprocess.PIPE,
    )  # fmt: skip
    first = json.loads(queued.communicate(timeout=120)[0])["job_id"]
    jobs = [first, *_queue(store, _requests(5, models=("B",)))]
    serve = ["dispatch", "--store", str(store), "--ray-address", c.address, "--model", "B"]
    serve += ["--actor-resources", json.dumps(GPU), "--lease", "3", "--poll", "0.2"]
    killed = _cli(*serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # killed while its actor loads the model: the claimed job is in flight, nothing is answered yet
        _wait("a claimed job", lambda: JobQueue(store).get(first).state == "running", timeout_s=120, poll_s=0.05)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
    finally:
        if killed.poll() is None:
            killed.kill()
    assert JobQueue(store).get(first).state == "running"  # its lease runs out: the next dispatcher takes it
    again = _cli(*serve, "--once", "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-2000:]
    stats = parsed("dispatch", json.loads(out))  # dispatch --json, held to its contract
    assert stats.done == len(jobs), stats
    _assert_once(store, jobs)
    assert JobQueue(store).get(first).attempts == 2  # the killed dispatcher's claim counted
    answered = _cli("rerun", "--store", str(store), "--model", "B", "--benchmark", "bench", "--item", "v1-2",
                    "--config", "4f", "--json", stdout=subprocess.PIPE)  # fmt: skip
    result = json.loads(answered.communicate(timeout=120)[0])
    assert result["from_store"] and result["state"] == "done" and result["answer"] in "ABCD"
    assert result["provenance"]["worker_id"].startswith("ray-B-")


def test_a_sweep_through_the_driver_equals_the_same_sweep_run_locally(site, cluster, tmp_path):
    store, node = site
    roots = {}
    for name in ("local", "ray"):
        roots[name] = tmp_path / name
        shutil.copytree(store, roots[name], ignore=shutil.ignore_patterns("jobs.sqlite*", "logs"))
    grid = ["text", "4f", "8f", "4f/random-s1"]
    runs = {
        name: run_sweep(
            SweepRequest(
                str(root),
                "A",
                "bench",
                grid,
                executor=name,
                workers=2,
                verify=2,
                batch_size=4,
                progress=False,
                video_root=str(node / "videos") if name == "ray" else None,
            )
        )  # fmt: skip
        for name, root in roots.items()
    }
    assert runs["ray"].shards == 2 and runs["ray"].verify.choice_drift == 0
    assert runs["ray"].cells == runs["local"].cells and runs["ray"].cells.done == 6 * 3 + 7
    query = "SELECT item_id, config, answer, correct, option_probs, frame_indices FROM responses WHERE run = 'main'"
    cells = {
        name: {(r["item_id"], r["config"]): r for r in Store(root).query(query).to_dict("records")}
        for name, root in roots.items()
    }
    assert cells["local"].keys() == cells["ray"].keys()
    for key, here in cells["local"].items():
        there = cells["ray"][key]
        assert (here["answer"], here["correct"]) == (there["answer"], there["correct"]), key
        assert list(here["frame_indices"]) == list(there["frame_indices"]), key
        p, q = json.loads(here["option_probs"]), json.loads(there["option_probs"])
        assert max(abs(p[k] - q[k]) for k in p) <= 1e-5, key
    runs_table = Store(roots["ray"]).query("SELECT run_id FROM runs")  # both shards' batches, appended here
    assert runs_table["run_id"].str.contains("-s0-b").any() and runs_table["run_id"].str.contains("-s1-b").any()


def test_many_reruns_with_an_actor_and_a_node_killed_end_done_once(site, cluster):
    store, _ = site
    c, nodes = cluster
    jobs = _queue(store, _requests(N_RERUNS))
    with Running(store, models=list(MODELS)) as run:
        d = run.dispatcher
        _wait("a quarter of the jobs", lambda: _done(store, jobs) >= N_RERUNS // 4, timeout_s=600)
        killed = d.slots["A"].handle
        ray.kill(killed)  # one actor dies mid-way
        # The node that leaves is the one A's new actor is placed on, as soon as it is ready: A's jobs waited while it
        # was dead, so that node still has work, whose failure the dispatcher must notice. (A node picked at half the
        # jobs could hold only actors that had already answered all of theirs: nothing to notice, one death counted.)
        back = _wait("A's new actor", lambda: (s := d.slots.get("A")) is not None and s.handle is not killed and s.info)
        leaving = next(n for n in nodes if n.node_id == back.node_id)
        c.remove_node(leaving)  # a node leaves with its actors
        _wait("every job", lambda: _done(store, jobs) == N_RERUNS, timeout_s=900)
        # the actors left (some started after the kills) were given no store either; an actor on the node that
        # left may still hold a slot the dispatcher has not yet found dead: it cannot answer, so it is passed over
        checked = 0
        for slot in [s for s in list(d.slots.values()) if s.info is not None]:
            try:
                received = ray.get(slot.handle.received.remote())
            except ray.exceptions.ActorDiedError:
                continue
            _no_store_in(slot.info.pid, received, store)
            checked += 1
        assert checked
    _assert_once(store, jobs)
    stats = run.stats
    print(f"{N_RERUNS} re-runs over {len(MODELS)} actors, one actor and one node killed: {stats}")  # seen with -s
    assert stats.actors_died >= 2 and stats.done == N_RERUNS, stats
    retries = sum(JobQueue(store).get(j).attempts - 1 for j in jobs)
    # each job given back counted its attempt (one job may be given back twice; a lease that lapsed on a
    # loaded machine may add a retry)
    assert stats.requeued >= 1 and retries >= stats.requeued, (retries, stats)
    nodes.remove(leaving)
    nodes.append(c.add_node(num_cpus=3, resources={"gpu_node": 3}))  # later tests find two nodes again
    c.wait_for_nodes()
