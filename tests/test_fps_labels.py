"""Issue 35, point 2: a frame rate is a configuration label (``1fps``, ``0.5fps``): it parses to one spelling,
orders by rate after the frame counts, forms its own ladder (the default grid of a store with no other), and
``metrics`` and ``flows --from 0.5fps --to 1fps`` read it."""

from __future__ import annotations

import json

import pytest

from backend.cli import main
from backend.scope.ladders import ladders
from backend.scope.resolve import _ladder
from store import configs

# per config, which of items q0..q4 the model answers correctly (a file each)
RIGHT = {"2fps": [1, 1, 1, 1, 0], "0.5fps": [1, 0, 0, 1, 0], "1fps": [0, 1, 1, 1, 0], "text": [1, 0, 0, 0, 0]}


def test_a_rate_parses_to_one_spelling_and_orders_after_the_counts():
    c = configs.parse("01.0fps")
    assert (c.label, c.fps, c.frames, c.is_text, c.is_budget_step, c.protocol) == ("1fps", 1.0, 0, False, False, "fps")
    assert configs.parse("0.5fps@151k/adaptive").label == "0.5fps@151k/adaptive"
    ordered = ["text", "8f", "16f", "0.5fps", "1fps", "2fps"]
    assert configs.order(["2fps", "16f", "0.5fps", "text", "1fps", "8f"]) == ordered
    lower = configs.lower_matrix(["text", "0.5fps", "1fps", "8f"])
    assert lower[0, 1:].all() and lower[1, 2] and not lower[2, 1]
    assert not lower[1:3, 3].any() and not lower[3, 1:3].any()  # a rate and a count are not ordered
    for bad, why in (("0fps", "above 0"), ("500fps", "at most 240"), ("1FPS", "write '1fps'")):
        with pytest.raises(configs.ConfigLabelError, match=why):
            configs.parse(bad)


def test_rates_form_their_own_ladder_and_the_default_grid_of_a_store_with_no_other():
    assert ladders(["text", "8f", "16f", "2fps", "0.5fps", "1fps"]) == (
        [["text", "8f", "16f"], ["0.5fps", "1fps", "2fps"]],
        [],
    )
    assert _ladder(["text", "8f", "16f", "0.5fps", "1fps"]) == ["text", "8f", "16f"]  # a frame-count ladder first
    assert _ladder(["2fps", "text", "0.5fps", "1fps"]) == ["text", "0.5fps", "1fps", "2fps"]


def test_metrics_and_flows_read_a_store_of_rates(tmp_path, capsys):
    files = []
    for config, right in RIGHT.items():
        rows = [
            {"model": "m", "benchmark": "b", "item_id": f"q{i}", "config": config, "correct": y}
            for i, y in enumerate(right)
        ]
        files.append(tmp_path / f"{config}.json")
        files[-1].write_text(json.dumps(rows))
    store = str(tmp_path / "s")
    assert main(["ingest", *map(str, files), "--store", store]) == 0
    capsys.readouterr()
    assert main(["metrics", "--store", store, "--models", "m", "--bootstrap", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["grid"] == ["text", "0.5fps", "1fps", "2fps"] and report["scope"]["grid_source"] == "default"
    assert report["models"]["m"]["accuracy"] == {"text": 0.2, "0.5fps": 0.4, "1fps": 0.6, "2fps": 0.8}
    steps = {(t["from"], t["to"]): (t["rescued"], t["harmed"]) for t in report["models"]["m"]["transitions"]}
    assert steps[("0.5fps", "1fps")] == (2, 1)  # by hand: q1, q2 rescued; q0 harmed
    flow = ["flows", "--store", store, "--model", "m", "--from", "0.5fps", "--to", "1fps", "--json"]
    by_kind = {}
    for kind in ("rescued", "harmed"):
        assert main([*flow, "--kind", kind]) == 0
        out = json.loads(capsys.readouterr().out)
        by_kind[kind] = sorted(i["item_id"] for i in out["items"])
    assert by_kind == {"rescued": ["q1", "q2"], "harmed": ["q0"]}
    assert out["scope"]["grid"] == ["text", "0.5fps", "1fps", "2fps"]  # the default grid holds both: no pair grid
    assert main(["info", "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["configs"]["m"]["b"] == ["text", "0.5fps", "1fps", "2fps"]
