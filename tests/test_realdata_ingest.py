"""The ingesters on real evaluation outputs in ../shared/realdata (skipped where absent)."""

from __future__ import annotations

import json

import pytest

from store import configs
from store.ingest import ingest_paths

pytestmark = pytest.mark.realdata

LMMS = "lmms-eval_llava-next-video-7b_videomme_16f_samples.jsonl"
WIDE = "LLaVA-NeXT-Video-7B_V1_short_predictions_wide.csv"


def test_lmms_eval_log_reproduces_the_harness_accuracy(realdata, store):
    s = ingest_paths(store, [realdata / LMMS], config="16f", model="LLaVA-NeXT-Video-7B-Qwen2")
    assert (s.rows, s.new, s.configs, s.benchmarks) == (2700, 2700, ["16f"], ["videomme"])
    assert s.flagged == {"no-answer": 2}  # two outputs of "!!!!..." carry no letter; the harness agrees
    acc = store.query("SELECT count(DISTINCT item_id) AS n, sum(correct) AS k FROM responses")
    assert (acc["n"][0], acc["k"][0]) == (2700, 1605)  # 59.44%, as the run reported
    items = store.query("SELECT * FROM items")
    assert len(items) == 2700 and items["question"].notna().all() and items["options"].notna().all()
    assert set(items["duration"]) == {"short", "medium", "long"}
    again = ingest_paths(store, [realdata / LMMS], config="16f", model="LLaVA-NeXT-Video-7B-Qwen2")
    assert (again.new, again.already_stored, again.store_version) == (0, 2700, s.store_version)


def test_scalegrid_wide_reproduces_the_release_accuracies(realdata, store):
    s = ingest_paths(store, [realdata / WIDE], answers=realdata / "videomme_answers.csv")
    assert s.configs == ["text", "8f@151k", "16f@151k", "32f@151k"]
    assert (s.rows, s.new, s.models) == (786 * 4, 786 * 4, ["LLaVA-NeXT-Video-7B"])
    per = store.query("SELECT config, count(*) AS n, sum(correct) AS k FROM responses GROUP BY config")
    assert set(per["n"]) == {786}
    release = json.loads((realdata / "LLaVA-NeXT-Video-7B_V1_short.json").read_text())
    got = {c: round(100 * k / n, 4) for c, n, k in per.itertuples(index=False)}
    want = {configs.from_scalegrid(c): a for c, a in release["accuracy_by_config"].items()}
    assert got == pytest.approx(want, abs=1e-4)
    items = store.query("SELECT * FROM items")
    assert len(items) == 786 and set(items["split"]) == {"V1_short"} and items["task_type"].notna().all()
