"""The sweep runner: plans, reuse that changes no answer (each family), baseline, rows, phase accounting, CLI.

The store: two tiny mp4 clips (``rerun_fixtures.write_video``) with three questions each, plus one
question without a video; tiny random models of every family registered under their family name.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from backend.contracts.base import asdict
from backend.runtime import registry
from backend.runtime.inference.base import FAMILIES
from backend.runtime.sweep import accounting
from backend.runtime.sweep.engine import Reuse
from backend.runtime.sweep.plan import build_plan, expand_grid
from backend.runtime.sweep.runner import SweepRequest, run_sweep
from backend.videos import decode as video
from store.errors import UserError
from store.store import Store
from tests.rerun_fixtures import write_video
from tests.tiny_models import tiny  # noqa: F401  (a fixture)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
GRID = ["text", "4f", "8f"]
QUESTIONS = ["What colour is the screen?", "How many stripes are white?", "Which stripe changes first?"]
OPTIONS = ["A. Red.", "B. Green.", "C. Blue.", "D. Black."]


def build_sweep_store(root: Path, families, models) -> Path:
    """Items v1-1..v2-3 on two clips (3 questions each) and t-1 without a video; each family's tiny model
    (from the ``tiny`` fixture, ``models``) registered under the family's name."""
    write_clip_items(root)
    for family in families:
        registry.add(root, registry.ModelSpec(family, family, str(models.dir(family)), dtype="float32", device="cpu"))
    return root


def write_clip_items(root: Path) -> None:
    """Items v1-1..v2-3 on two clips (3 questions each) and t-1 without a video, with the clips, in a new store."""
    write_video(root / "videos" / "a.mp4")
    write_video(root / "videos" / "b.mp4", n_frames=40)
    rows = [
        {"item_id": f"v{v}-{q + 1}", "question": QUESTIONS[q], "video": f"{name}.mp4", "target": "ABCD"[q]}
        for v, name in ((1, "a"), (2, "b"))
        for q in range(3)
    ]
    rows.append({"item_id": "t-1", "question": "Which colour is a ripe banana?", "video": None, "target": "A"})
    items = pd.DataFrame(rows).assign(
        benchmark="bench", split="short", options=json.dumps(OPTIONS), answer_type="mcqa", written_at=datetime.now(UTC)
    )
    Store(root).append({"items": items})


@pytest.fixture(scope="module")
def swept(tiny, tmp_path_factory):
    """One optimised sweep per family (every cell verified cold), on its own store."""
    out = {}
    for family in FAMILIES:
        root = build_sweep_store(tmp_path_factory.mktemp(family), [family], tiny)
        grid = [*GRID, "8f@2k"]
        request = SweepRequest(
            str(root),
            family,
            "bench",
            expand_grid(grid, ["uniform", "random:1"]),
            verify=100,
            batch_size=5,
            progress=False,
        )
        out[family] = (root, run_sweep(request))
    return out


def test_expand_grid_crosses_policies_and_keeps_text_once():
    assert expand_grid(["text", "8f", "16f"], ["uniform", "random:0", "random-s1"]) == [
        "text",
        "8f",
        "8f/random-s0",
        "8f/random-s1",
        "16f",
        "16f/random-s0",
        "16f/random-s1",
    ]
    assert expand_grid(["64f@151k", "8f/midpoint"], ["random:2"]) == ["8f/midpoint", "64f@151k/random-s2"]
    with pytest.raises(UserError, match="unknown sampling policy"):
        expand_grid(["8f"], ["sideways"])
    with pytest.raises(UserError, match="unknown config label"):
        expand_grid(["8 frames"])


@pytest.mark.parametrize("family", FAMILIES)
def test_reused_path_matches_cold_answers_for_each_family(swept, family):
    """The paired drift check on every visual and text cell: no answer moves, probabilities within 1e-5."""
    root, summary = swept[family]
    cells = summary.cells
    visual_failed = 6  # t-1 has no video: its 6 visual configurations fail, its text cell runs
    assert cells.grid == 7 * 7 and cells.done == 49 - visual_failed and cells.failed == visual_failed
    verify = summary.verify
    assert verify.cells == cells.done
    assert verify.choice_drift == 0 and verify.correctness_drift == 0
    assert verify.max_prob_diff <= 1e-5 and verify.within_tolerance
    k = summary.counters
    assert k.frames_decoded < k.frames_decoded_cold and k.videos_opened == 2
    text = 7  # text cells: one processor call each (nothing visual to share)
    assert (k.processor_calls - text) * 3 == k.processor_calls_cold - text  # one call per (clip, config)
    # a prefix per (clip, visual config), and per clip one for its text questions' common start
    assert k.prefill_tokens < k.prefill_tokens_cold and k.prefixes == 2 * 6 + 2
    if family in ("llava_next_video", "internvl"):  # per-frame features carried across budgets
        assert k.frames_encoded < k.frames_encoded_cold / 3
    else:  # Qwen: one vision pass per (clip, config), nothing across budgets
        assert k.frames_encoded * 3 == k.frames_encoded_cold


def test_rows_batches_and_provenance(swept):
    root, summary = swept["qwen2_5_vl"]
    store = Store(root)
    rows = store.query("SELECT * FROM responses WHERE model = 'qwen2_5_vl'")
    assert len(rows) == summary.cells.done == 43
    assert set(rows["origin"]) == {"sweep"} and set(rows["run"]) == {"main"}
    assert rows.groupby(["item_id", "config"]).size().max() == 1
    runs = store.query("SELECT * FROM runs WHERE source = ?", [f"sweep:{summary.sweep_id}"])
    assert len(runs) == summary.batches == 9 and runs["n_rows"].sum() == 43  # batches of 5
    assert set(rows["run_id"]) == set(runs["run_id"])
    row = rows[(rows["item_id"] == "v1-2") & (rows["config"] == "8f/random-s1")].iloc[0]
    prov = json.loads(row["provenance"])
    assert prov["sweep_id"] == summary.sweep_id and prov["reuse"] == ["decode", "prefix", "vision"]
    assert list(row["frame_indices"]) == prov["frame_indices"] and row["seed"] == 1 and len(prov["frame_indices"]) == 8
    assert set(prov["timings"]) == {"decode", "preprocess", "vision", "prefill", "generate"}
    assert prov["decoder"] == (video.DECORD if video.decord_installed() else video.PYAV)  # what read the frames
    text = rows[(rows["item_id"] == "t-1") & (rows["config"] == "text")].iloc[0]
    assert json.loads(text["provenance"])["timings"]["decode"] == 0 and list(text["frame_indices"]) == []
    assert json.loads(text["provenance"])["decoder"] is None  # text-only: no video read


def test_phase_timings_add_up_to_the_totals(swept):
    root, summary = swept["llava_next_video"]
    rows = Store(root).query("SELECT provenance FROM responses")
    per_cell = [json.loads(p)["timings"] for p in rows["provenance"]]
    totals = accounting.totals(per_cell)
    assert totals == pytest.approx(asdict(summary.phase_totals), rel=1e-9)
    shares = asdict(summary.phase_shares)
    assert sum(shares.values()) == pytest.approx(1.0) and all(v >= 0 for v in shares.values())
    assert totals["vision"] > 0 and totals["prefill"] > 0 and totals["decode"] > 0
    ceilings = {row.reuse: row for row in summary.verify.reuse_ceilings}
    assert set(ceilings) == {"decode", "prefix", "vision"}
    for row in ceilings.values():
        assert row.ceiling == pytest.approx(accounting.ceiling(row.f, row.s))


def test_ceiling_formula():
    assert accounting.ceiling(0.5, 2.0) == pytest.approx(1 / 0.75)
    assert accounting.ceiling(0.3, 1.0) == pytest.approx(1.0)
    assert accounting.ceiling(0.25, float("inf")) == pytest.approx(1 / 0.75)
    cold = {"decode": 4.0, "preprocess": 2.0, "vision": 2.0, "prefill": 2.0, "generate": 0.0}
    reused = {"decode": 1.0, "preprocess": 1.0, "vision": 1.0, "prefill": 1.0, "generate": 0.0}
    table = {r.reuse: r for r in accounting.reuse_table(cold, reused)}
    assert table["decode"].f == pytest.approx(0.6) and table["decode"].s == pytest.approx(3.0)
    assert table["vision"].phases == ["preprocess", "vision"]  # the cache keeps processed pixels too
    assert table["vision"].ceiling == pytest.approx(1 / (0.6 + 0.2))
    assert accounting.speedup(cold, reused) == pytest.approx(2.5)


def test_baseline_is_one_cold_answer_per_cell(tiny, tmp_path, monkeypatch):
    root = build_sweep_store(tmp_path / "s", ["internvl"], tiny)
    adapter_class = type(tiny.adapter("internvl"))
    calls = []
    original = adapter_class.answer
    monkeypatch.setattr(adapter_class, "answer", lambda self, r: calls.append(r.n_frames) or original(self, r))
    request = SweepRequest(
        str(root),
        "internvl",
        "bench",
        GRID,
        item_ids=["v1-1", "v1-2", "v1-3", "t-1"],
        reuse=Reuse.without(["decode", "prefix", "vision"]),
        progress=False,
    )
    summary = run_sweep(request)
    assert summary.reuse == [] and summary.cells.done == 3 * 3 + 1
    assert sorted(calls) == [0] * 4 + [4] * 3 + [8] * 3  # every cell through answer, nothing shared
    k = summary.counters
    assert k.frames_decoded == k.frames_decoded_cold == 3 * 4 + 3 * 8
    assert k.processor_calls == k.processor_calls_cold and k.prefill_tokens == k.prefill_tokens_cold


def test_text_cells_never_touch_the_video(tiny, tmp_path, monkeypatch):
    root = build_sweep_store(tmp_path / "s", ["qwen3_vl"], tiny)

    def refuse(*args, **kwargs):
        raise AssertionError("a text-only sweep opened a video")

    for name in ("probe", "resolve_video"):
        monkeypatch.setattr(f"backend.runtime.sweep.engine.{name}", refuse)
    monkeypatch.setattr("backend.runtime.sweep.frames.decode_frames", refuse)
    summary = run_sweep(SweepRequest(str(root), "qwen3_vl", "bench", ["text"], progress=False))
    assert summary.cells.done == 7 and summary.counters.videos_opened == 0


def test_refuses_stored_cells_without_resume_and_resumes(tiny, tmp_path):
    root = build_sweep_store(tmp_path / "s", ["qwen2_5_vl"], tiny)
    first = run_sweep(SweepRequest(str(root), "qwen2_5_vl", "bench", ["text", "4f"], limit=3, progress=False))
    assert first.cells.done == 6
    with pytest.raises(UserError, match="6 of the 21 cells .* already stored .* --resume"):
        build_plan(Store(root), "qwen2_5_vl", "bench", ["text", "4f", "8f"])
    again = run_sweep(SweepRequest(str(root), "qwen2_5_vl", "bench", ["text", "4f", "8f"], resume=True, progress=False))
    assert again.cells.skipped == 6 and again.cells.done == 21 - 6 - 2  # t-1 has no video
    counts = Store(root).query("SELECT item_id, config, count(*) AS n FROM responses GROUP BY ALL HAVING n > 1")
    assert counts.empty


def test_cli_json_summary_and_drift_failure(tiny, tmp_path, capsys, monkeypatch):
    from backend.cli import main
    from backend.runtime.sweep.shard import Outcome, ShardRunner

    root = build_sweep_store(tmp_path / "s", ["qwen2_5_vl"], tiny)
    base = ["sweep", "--store", str(root), "--model", "qwen2_5_vl", "--benchmark", "bench", "--items"]
    ids = tmp_path / "ids.txt"
    ids.write_text("v2-1\nv2-2  # a comment\n\n")
    assert main([*base, str(ids), "--grid", "text,4f", "--verify", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cells"]["done"] == 4 and summary["verify"]["choice_drift"] == 0
    assert {"phase_shares", "phase_totals", "counters", "cells_per_second"} <= summary.keys()

    original = ShardRunner.answer_cold

    def drifting(self, cells):  # the cold path disagrees: the sweep must fail and keep nothing
        return [Outcome(**{**o.__dict__, "answer": "Z"}) for o in original(self, cells)]

    monkeypatch.setattr(ShardRunner, "answer_cold", drifting)
    assert main([*base, str(ids), "--grid", "text,4f,8f", "--resume", "--verify", "1"]) == 1
    captured = capsys.readouterr()
    assert "phase shares:" in captured.out and "DRIFT: 1 of 1 verified cells" in captured.err
    stored = Store(root).query("SELECT config, count(*) AS n FROM responses GROUP BY config ORDER BY config")
    assert stored.to_dict("list") == {"config": ["4f", "text"], "n": [2, 2]}  # the 8f rows were withdrawn


def test_bad_arguments_name_the_problem(tiny, tmp_path):
    from backend.cli import main

    root = build_sweep_store(tmp_path / "s", ["qwen2_5_vl"], tiny)
    base = ["sweep", "--store", str(root), "--model", "qwen2_5_vl", "--benchmark", "bench", "--grid", "4f"]
    assert main([*base, "--no-reuse", "prefix,cache"]) == 2
    assert main([*base, "--items", str(tmp_path / "missing.txt")]) == 2
    with pytest.raises(UserError, match="not in benchmark 'bench': nope"):
        build_plan(Store(root), "qwen2_5_vl", "bench", ["4f"], item_ids=["nope"])
    with pytest.raises(UserError, match="unknown model 'ghost'"):
        run_sweep(SweepRequest(str(root), "ghost", "bench", ["4f"], progress=False))


def test_random_fullsize_option_times_a_full_architecture(tiny, tmp_path, monkeypatch):
    """--random-fullsize builds the family from its preset (shrunk here to run on a CPU) behind the tiny
    model's processor: the token ids line up and the cells are stored as random-weight timings."""
    import copy

    from backend.runtime.inference import fullsize

    family, model_class, config_class, kwargs = fullsize.PRESETS["qwen2.5-vl-7b"]
    small = copy.deepcopy(kwargs)
    small["text_config"].update(
        hidden_size=64,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e6},
    )
    small["vision_config"].update(
        depth=1, hidden_size=32, intermediate_size=32, num_heads=2, out_hidden_size=64, fullatt_block_indexes=[0]
    )
    monkeypatch.setitem(fullsize.PRESETS, "qwen2.5-vl-7b", (family, model_class, config_class, small))
    root = build_sweep_store(tmp_path / "s", ["qwen2_5_vl"], tiny)
    summary = run_sweep(
        SweepRequest(
            str(root),
            "qwen2_5_vl",
            "bench",
            ["text", "4f"],
            item_ids=["v1-1", "v1-2"],
            random_fullsize="",
            device="cpu",
            progress=False,
            verify=2,
        )
    )
    assert summary.cells.done == 4 and summary.random_fullsize == ""
    assert summary.verify.choice_drift == 0
    prov = json.loads(Store(root).query("SELECT provenance FROM responses LIMIT 1")["provenance"][0])
    assert prov["checkpoint_fingerprint"] == "random-fullsize:qwen2.5-vl-7b"
