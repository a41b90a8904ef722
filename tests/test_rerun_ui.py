"""The live re-run loop around the dashboard: demo store with its random-weights model, local workers
on demand, the queue overview, re-run rows in the inspector, and the panel and Workers page (AppTest).

The browser test that clicks Run in the running app is in ``tests/test_browser.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from backend.cli import main
from backend.demo.model import DEMO_MAX_FRAMES, DEMO_MODEL
from backend.runtime import registry, rerun
from backend.runtime.worker_pool import ensure_local_worker, local_worker, overview, stop_local_workers
from backend.scope.inspector import item_detail
from backend.scope.texts import trajectory_rows
from store import registry as store_registry
from store.errors import UserError
from store.queue import JobQueue
from store.rerun_request import RerunRequest
from store.store import Store
from tests.rerun_fixtures import build_store

REPO = Path(__file__).resolve().parents[1]
WORKER_ONLINE_S = 120  # a cold worker imports torch and transformers on a busy 2-core machine


@pytest.fixture
def root(tmp_path, monkeypatch):
    """The re-run test store (items q1-q3, model "m" with a fake checkpoint); local workers stopped at the end."""
    monkeypatch.delenv("TRAJAUDIT_VIDEO_ROOT", raising=False)
    path = build_store(tmp_path / "store")
    yield path
    stop_local_workers(path)


def _until(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


# -- the demo store ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.worker
def test_build_demo_store_registers_a_random_weights_model_without_importing_torch(tmp_path):
    root = tmp_path / "demo"
    code = (
        "import json, sys; from backend.demo.model import build_demo_store; seen = []\n"
        "s = build_demo_store(sys.argv[1], n_items=8, videos=False, progress=lambda f, m: seen.append(f))\n"
        "from backend.contracts.base import to_json\n"
        "print(json.dumps({'summary': to_json(s), 'progress': seen, 'torch': 'torch' in sys.modules}))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, cwd=REPO, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["torch"] is False  # the model is built in a child: the dashboard process never imports torch
    assert out["progress"] == sorted(out["progress"]) and out["progress"][-1] == 1.0
    assert out["summary"]["items"] == 8 and out["summary"]["demo_model"]["name"] == DEMO_MODEL
    spec = registry.get(root, DEMO_MODEL)
    assert spec.note == registry.DEMO_NOTE and spec.family == "qwen2_5_vl" and spec.dtype == "float32"
    assert spec.max_frames == DEMO_MAX_FRAMES == 128  # the demo grid's largest budget fits the ceiling
    marker = json.loads((spec.resolved_path(root) / "trajaudit.json").read_text())
    assert marker["random_weights"] is True
    assert (
        DEMO_MODEL in Store(root).query("SELECT DISTINCT model FROM responses")["model"].tolist()
    )  # joins a trajectory


# -- local workers -------------------------------------------------------------------------------
def test_ensure_local_worker_refuses_unknown_models_and_missing_checkpoints(root):
    with pytest.raises(UserError, match="unknown model 'nope'"):
        ensure_local_worker(root, "nope")
    registry.add(root, registry.ModelSpec("gone", "qwen2_5_vl", str(root / "ckpt")))
    (root / "ckpt" / "config.json").unlink()
    (root / "ckpt").rmdir()
    with pytest.raises(UserError, match="not on this machine"):
        ensure_local_worker(root, "gone")
    assert not list(root.glob("logs/*.pid"))  # nothing was started
    assert local_worker(root, "m").state == "none"


@pytest.mark.slow
@pytest.mark.worker
def test_ensure_local_worker_starts_one_worker_that_serves_a_rerun(root):
    registry.register_demo_model(root, "tiny", max_frames=32)
    first = ensure_local_worker(root, "tiny")
    second = ensure_local_worker(root, "tiny")
    assert first.started and first.state == "starting" and first.device == "cpu"
    assert not second.started and second.pid == first.pid  # still loading: nothing new started
    assert len(list((root / "logs").glob("worker-*.pid"))) == 1

    out = rerun.submit(root, RerunRequest("tiny", "bench", "q1", "12f"))
    assert not out.from_store and out.state == "queued"
    done = rerun.wait(root, out.job_id, timeout_s=WORKER_ONLINE_S)
    assert done.state == "done", (done, local_worker(root, "tiny"))
    assert len(done.frame_indices) == 12 and set(done.option_probs) == set("ABCD")
    assert set(done.timings) >= {"decode", "preprocess", "vision", "prefill"}
    print("phase timings (s):", json.dumps({k: round(v, 4) for k, v in done.timings.items()}))

    third = ensure_local_worker(root, "tiny")
    assert third.state == "online" and not third.started and third.pid == first.pid
    assert [w.model for w in overview(root).local] == ["tiny"]
    assert stop_local_workers(root) == [first.pid]
    assert local_worker(root, "tiny").state == "none"
    _until(lambda: not JobQueue(root).workers(), 10, "the worker to sign off")


@pytest.mark.slow
@pytest.mark.worker
def test_a_worker_that_cannot_start_is_reported_with_its_log(root):
    first = ensure_local_worker(root, "m")  # "m" has a config.json but no weights: the worker exits
    exited = _until(
        lambda: (s := local_worker(root, "m")).state == "exited" and s, WORKER_ONLINE_S, "the worker to exit"
    )
    assert exited.pid == first.pid and exited.log_tail and "starting" in Path(exited.log).read_text()
    again = ensure_local_worker(root, "m")  # a dead worker is replaced on the next request
    assert again.started and again.pid != first.pid


def test_overview_is_the_jobs_json_and_times_jobs(root, capsys):
    job = JobQueue(root).enqueue(RerunRequest("m", "bench", "q1", "8f"))
    view = overview(root)
    assert view.counts["queued"] == 1 and view.workers == view.local == view.remote == []
    row = view.jobs[0]
    assert row.id == job.id and row.waited_s >= 0 and row.ran_s is None
    assert main(["jobs", "--store", str(root), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"counts", "jobs", "workers", "local", "remote"} and printed["jobs"][0]["id"] == job.id
    claimed = JobQueue(root).claim("w1", "m", 30)
    time.sleep(0.05)
    ran = overview(root).jobs[0]
    assert claimed.id == job.id and ran.state == "running" and ran.ran_s > 0 and ran.worker_id == "w1"


# -- re-run rows in the inspector ----------------------------------------------------------------
def _add_rerun(root: Path, config: str, answer: str, confidence: float) -> None:
    now = pd.Timestamp.now(tz="UTC")
    Store(root).append(
        {
            "responses": pd.DataFrame(
                [
                    {
                        "model": "m",
                        "benchmark": "bench",
                        "item_id": "q1",
                        "config": config,
                        "run": f"rerun-{config}",
                        "origin": "rerun",
                        "answer": answer,
                        "correct": int(answer == "B"),
                        "confidence": confidence,
                        "frames": int(config[:-1]),
                        "policy": "uniform",
                        "frame_indices": list(range(int(config[:-1]))),
                        "written_at": now,
                    }
                ]
            )
        }
    )


def test_item_detail_marks_reruns_and_trajectory_rows_keeps_them_apart(root):
    registry.add(
        root,
        registry.ModelSpec("m", "qwen2_5_vl", str(root / "ckpt"), note="random weights: pipeline demo"),
        replace=True,
    )
    _add_rerun(root, "16f", "C", 0.4)  # the same config as the logged answer (a forced re-run)
    _add_rerun(root, "12f", "B", 0.5)  # a budget nothing logged
    responses = item_detail(Store(root), "bench", "q1").responses
    assert sorted(r["live_rerun"] for r in responses) == [False, True, True]
    live = [r for r in responses if r["live_rerun"]]
    assert {r["config"] for r in live} == {"12f", "16f"}
    assert {r["rerun_note"] for r in live} == {"random weights: pipeline demo"}
    assert all(r["rerun_note"] is None for r in responses if not r["live_rerun"])
    logged, reruns = trajectory_rows(responses)
    assert [(r["config"], r["answer"]) for r in logged] == [("16f", "B")]  # the logged answer stays
    assert sorted(r["config"] for r in reruns) == ["12f", "16f"]


# -- the panel and the Workers page (AppTest: no browser) -----------------------------------------
# The panel and the page run on their own (``from_function`` / the page file with a scope in the
# session): AppTest loses button clicks on pages reached through ``st.navigation``.
from streamlit.testing.v1 import AppTest  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    from backend.demo.synthetic import build_demo

    root = tmp_path_factory.mktemp("rerun-ui") / "store"
    build_demo(root, n_items=8, seed=0)
    return root


def _scope(store: Path):
    from backend.scope.resolve import Scope
    from backend.scope.view import open_view

    return open_view(Store(store), Scope("synthetic-videomme", (DEMO_MODEL,), ("8f", "16f")).resolve(Store(store)))


def _panel_script(view, item_id: str, thumbs: str) -> None:
    from backend.scope.inspector import item_detail
    from pages.common.rerun_panel import rerun_panel

    rerun_panel(view, item_detail(view.store, view.scope.benchmark, item_id).item, thumbs)


def _panel(store: Path, item_id: str = "001-1") -> AppTest:
    at = AppTest.from_function(
        _panel_script, args=(_scope(store), item_id, str(store.parent / "thumbs")), default_timeout=120
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _click(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _register_fake(store: Path) -> None:
    ckpt = store / "fake-ckpt"
    ckpt.mkdir(exist_ok=True)
    (ckpt / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    registry.add(
        store,
        registry.ModelSpec(DEMO_MODEL, "qwen2_5_vl", str(ckpt), max_frames=128, note=registry.DEMO_NOTE),
        replace=True,
    )


def test_panel_without_models_says_how_to_register_one(demo):
    (demo / store_registry.REGISTRY_FILE).unlink(missing_ok=True)
    at = _panel(demo)
    hint = " ".join(i.value for i in at.info)
    assert "No model is registered" in hint and "trajaudit models add" in hint
    assert not [b for b in at.button if b.label == "Run"]


def test_panel_answers_from_store_queues_and_refuses_bad_requests(demo, monkeypatch):
    import pages.common.rerun_panel as panel

    started = []
    monkeypatch.setattr(
        panel,
        "ensure_local_worker",
        lambda root, model, device: (
            started.append((model, device)) or SimpleNamespace(started=True, state="starting", device=device, pid=1)
        ),
    )
    _register_fake(demo)
    at = _panel(demo)
    frames = next(n for n in at.number_input if n.label == "Frames")
    assert frames.max == 128  # bounded by the model's ceiling
    frames.set_value(16).run()  # in the grid: an identical request is stored
    _click(at, "Run")
    assert any("Answered from the store" in i.value for i in at.info), [i.value for i in at.info]
    assert any("16f" in m.value and ": answer" in m.value for m in at.markdown)
    assert started == [] and JobQueue(demo).counts()["queued"] == 0

    next(n for n in at.number_input if n.label == "Frames").set_value(20).run()
    assert any("20f" in c.value for c in at.caption)
    _click(at, "Run")
    assert started == [(DEMO_MODEL, "cpu")]
    (job,) = JobQueue(demo).list_jobs(state="queued")
    assert (job.item_id, job.config) == ("001-1", "20f")
    assert any(f"Job {job.id}" in m.value and "queued" in m.value for m in at.markdown)
    _click(at, "Cancel job")
    assert JobQueue(demo).get(job.id).state == "cancelled"
    assert any(f"Job {job.id} (20f) was cancelled" in i.value for i in at.info)

    monkeypatch.setenv("TRAJAUDIT_VIDEO_ROOT", str(demo.parent / "no-videos-here"))  # refused before queueing
    _click(at, "Run")
    assert any("video" in e.value for e in at.error), [e.value for e in at.error]
    assert JobQueue(demo).counts()["queued"] == 0 and len(started) == 1


def test_panel_offers_a_few_models_as_pills_and_many_in_a_select_box(demo):
    from pages.common.state import PILLS_UP_TO

    _register_fake(demo)
    at = _panel(demo)
    assert [b.options for b in at.button_group if b.label == "Model"] == [[f"{DEMO_MODEL} ({registry.DEMO_NOTE})"]]
    ckpt = demo / "fake-ckpt"
    names = [f"lab-model-{k:02d}" for k in range(PILLS_UP_TO)]  # with the demo's: one more than pills take
    for name in names:
        registry.add(demo, registry.ModelSpec(name, "qwen2_5_vl", str(ckpt)))
    at = _panel(demo)
    assert not [b for b in at.button_group if b.label == "Model"]
    (box,) = [s for s in at.selectbox if s.label == "Model"]
    assert len(box.options) == PILLS_UP_TO + 1 and "lab-model-23" in box.options
    box.set_value("lab-model-07").run()
    assert not at.exception, [e.value for e in at.exception]
    assert next(s for s in at.selectbox if s.label == "Model").value == "lab-model-07"


def test_panel_offers_every_sampling_policy_and_spells_its_label(demo):
    from backend.runtime.sampling import NAMES

    _register_fake(demo)
    at = _panel(demo)
    policy = next(b for b in at.button_group if b.label == "Sampling policy")
    # fps included, then the logged answer's frames (label <N>f/logged)
    assert tuple(policy.options) == (*NAMES, "the logged answer's frames")
    next(n for n in at.number_input if n.label == "Frames").set_value(20).run()
    next(b for b in at.button_group if b.label == "Sampling policy").set_value("random").run()
    next(n for n in at.number_input if n.label == "Seed").set_value(3).run()
    assert any("20f/random-s3" in c.value for c in at.caption), [c.value for c in at.caption]
    next(b for b in at.button_group if b.label == "Sampling policy").set_value("fps").run()
    next(n for n in at.number_input if n.label == "Rate (fps)").set_value(0.5).run()
    assert any("20f/fps-0.5" in c.value for c in at.caption), [c.value for c in at.caption]
    next(b for b in at.button_group if b.label == "Sampling policy").set_value("logged").run()
    assert any("20f/logged" in c.value for c in at.caption), [c.value for c in at.caption]


def test_workers_page_shows_the_queue_and_cancels_a_queued_job(demo):
    job = JobQueue(demo).enqueue(RerunRequest(DEMO_MODEL, "synthetic-videomme", "001-1", "24f"))
    at = AppTest.from_file(str(REPO / "pages" / "workers.py"), default_timeout=120)
    at.session_state["view"] = _scope(demo)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Workers"
    assert {m.label: m.value for m in at.metric}["Queued"] == "1"
    assert any("No worker is online" in i.value for i in at.info)
    _click(at, "Cancel job")
    assert JobQueue(demo).get(job.id).state == "cancelled"
    assert {m.label: m.value for m in at.metric}["Queued"] == "0"
