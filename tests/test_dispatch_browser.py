"""A re-run pressed in the Inspector, answered through ``trajaudit dispatch`` on a multi-node Ray cluster (issue 38).

The cluster is ``tests.test_dispatch``'s: three raylets on this machine, the two worker nodes declaring a
custom resource ``gpu_node`` that stands in for GPUs. The store is the browser tests' small demo, its
random-weights model copied out of the store folder to a "node disk" and registered there (the actors
never see the store). The dispatcher runs as a user starts it (the CLI, in its own process); the
dashboard is ``streamlit run app.py``. Run in the re-run panel must queue the job, start no local
worker (the dispatcher has the model online), and the answer must join the item's trajectory on the
page. The actor's arguments, environment and command line must name no store path. A second
dispatcher whose actors ask for a resource no node offers must say so on the Workers page.

Screenshots: ``test-artifacts/screenshots/inspector-rerun-dispatched.png``,
``workers-remote-actors.png`` and ``workers-remote-actor-waiting.png``.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")
from tests.browser_fixtures import (
    Server,
    build_small_demo,
    goto,
    press_run,
    require_chromium,
    screenshot,
    serving,
    wait_idle,
)
from tests.test_dispatch import GPU, _cli, _no_store_in, _wait, cluster, ray  # noqa: F401  (cluster: a fixture)
from tests.test_inspector_browser import _marks

pytest_plugins = ["tests.browser_fixtures"]  # the browser and page fixtures

pytestmark = [
    pytest.mark.browser,
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.worker,
]  # the actor loads the demo's model

BENCH = "synthetic-videomme"
MODELS = ("synthetic-A-7B", "synthetic-B-13B")
BASE = f"bench={BENCH}&models={','.join(MODELS)}&model={MODELS[0]}"
FRAMES = 24  # a budget the demo grid lacks: the actor must really answer it
ANSWER_TIMEOUT_MS = 300_000  # the actor starts on a node (imports torch), loads the tiny model, then answers
WAITING_S = 60.0  # the dispatcher says an unplaceable actor waits after 10 s (DEFAULT_PLACE_WAIT_S)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The small demo store; its re-run model's checkpoint copied to a node disk outside it and registered
    there, also under the second model's name (for the dispatcher whose actor no node can hold)."""
    require_chromium()
    from backend.runtime import registry

    base = tmp_path_factory.mktemp("dispatch-browser")
    store = build_small_demo(base / "store")
    spec = registry.get(store, MODELS[0])
    node = shutil.copytree(spec.resolved_path(store), base / "node" / MODELS[0])
    for name in MODELS:
        registry.add(store, msgspec.structs.replace(spec, name=name, path=str(node)), replace=True)
    return store


@pytest.fixture(scope="module")
def dashboard(site) -> Iterator[Server]:
    with serving(site, site.parent / "streamlit.log") as server:
        yield server


class Dispatch:
    """``trajaudit dispatch`` in its own process, its output in a file; stopped with Ctrl-C (SIGINT)."""

    def __init__(self, store: Path, address: str, model: str, resources: dict[str, float]):
        self.log = store.parent / f"dispatch-{model}.log"
        args = ["dispatch", "--store", str(store), "--ray-address", address, "--model", model]
        args += ["--actor-resources", json.dumps(resources), "--lease", "10", "--poll", "0.2"]
        with open(self.log, "w") as out:
            self.process = _cli(*args, stdout=out, stderr=subprocess.STDOUT)

    def online(self, store: Path, model: str) -> None:
        """Wait until the dispatcher has the model online: its stand-by heartbeat in the queue, or its actor's
        once it has claimed a job (a job queued before the dispatcher starts is claimed at once, and the stand-by
        row is signed off for the actor's in the same pass)."""
        from store.queue import JobQueue

        def standby():
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            mine = ("dispatch-", f"ray-{model}-")
            return [w for w in JobQueue(store).workers() if w.worker_id.startswith(mine) and w.model == model]

        _wait(f"the dispatcher to serve {model}", standby, timeout_s=180)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def test_a_rerun_pressed_in_the_inspector_is_answered_through_the_dispatcher(site, dashboard, cluster, page):
    from backend.runtime import worker_pool
    from store.queue import JobQueue

    c, _ = cluster
    dispatch = Dispatch(site, c.address, MODELS[0], GPU)
    try:
        dispatch.online(site, MODELS[0])
        goto(page, dashboard, f"inspector?{BASE}")
        press_run(page, FRAMES)
        page.wait_for_function(
            "() => /Job \\d+ done in/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
            timeout=ANSWER_TIMEOUT_MS,
        )
        wait_idle(page)
        text = page.locator('[data-testid="stMain"]').inner_text()
        job_id = int(re.search(r"Job (\d+) done in", text).group(1))
        job = JobQueue(site).get(job_id)
        assert job.state == "done" and job.config == f"{FRAMES}f" and job.worker_id.startswith(f"ray-{MODELS[0]}-")
        assert f"on worker {job.worker_id}" in text  # the panel names the actor that answered
        # the answer joins the item's trajectory: a re-run point of its model's series at its configuration
        marks = _marks(page, "per configuration (lines join budget steps only")
        (star,) = [m for m in marks if m["mark"] == "point" and m.get("kind") == "rerun"]
        assert (star["series"], star["configuration"], star["run"]) == (MODELS[0], f"{FRAMES}f", f"rerun-{job_id}")
        screenshot(page, "inspector-rerun-dispatched")
        assert f"{FRAMES}f · re-run" in text  # its frames join the strips as a row, without reopening the page
        assert not (site / "logs" / f"worker-{MODELS[0]}.pid").exists()  # the panel started no local worker

        (actor,) = worker_pool.overview(site).remote  # what `trajaudit jobs --json` and the Workers page list
        assert (actor.worker_id, actor.state, actor.jobs_done) == (job.worker_id, "ready", 1)
        assert actor.resources["gpu_node"] == 1.0 and actor.waiting is None
        handle = ray.get_actor(f"trajaudit-{actor.worker_id}", namespace="trajaudit")
        received = ray.get(handle.received.remote())
        assert any(f"config '{FRAMES}f'" in r for r in received), received  # it answered this job
        _no_store_in(actor.pid, received, site)

        goto(page, dashboard, f"workers?{BASE}")
        assert "Remote actors" in page.locator('[data-testid="stMain"]').inner_text()
        remote = page.locator('[data-testid="stDataFrame"]').filter(has_text=actor.node_ip)  # its cells' text
        remote.first.wait_for()
        assert remote.count() == 1  # only the remote actors' table has a node address
        assert actor.worker_id in remote.text_content() and actor.hostname in remote.text_content()
        screenshot(page, "workers-remote-actors")
    finally:
        dispatch.stop()
    assert dispatch.process.returncode == 0, dispatch.log.read_text()[-3000:]
    assert "stopped: 1 done, 0 failed" in dispatch.log.read_text()


def test_the_workers_page_says_when_no_node_can_hold_a_remote_actor(site, dashboard, cluster, page):
    from backend.runtime import rerun
    from store.queue import JobQueue
    from store.rerun_request import RerunRequest

    c, _ = cluster
    request = RerunRequest(MODELS[1], BENCH, "001-1", f"{FRAMES}f", force=True)
    job_id = rerun.place(site, rerun.validate(site, request)).job_id
    dispatch = Dispatch(site, c.address, MODELS[1], {"tpu_node": 1.0})  # no node offers it
    try:
        dispatch.online(site, MODELS[1])
        _wait("the waiting line", lambda: "is not placed after" in dispatch.log.read_text(), timeout_s=WAITING_S)
        assert "offers CPU 1, tpu_node 1 (the 3 node(s) offer at most CPU 3, gpu_node 3)" in dispatch.log.read_text()
        goto(page, dashboard, f"workers?{BASE}")
        warning = page.locator('[data-testid="stAlert"]').filter(has_text="is not placed after")
        warning.wait_for()
        said = warning.inner_text()
        assert MODELS[1] in said and "no live node offers CPU 1, tpu_node 1" in said and f"with job {job_id}" in said, (
            said
        )
        screenshot(page, "workers-remote-actor-waiting")
        assert JobQueue(site).get(job_id).state == "running"  # held by the waiting actor, not lost
    finally:
        dispatch.stop()
    assert dispatch.process.returncode == 0, dispatch.log.read_text()[-3000:]
    assert JobQueue(site).get(job_id).state == "queued"  # Ctrl-C gave it back
