"""Issue 35, point 2: a prompting protocol is a label of its own (``8f+cot``), not a sampling policy riding
on a made-up frame count; it orders beside its budget, never enters the uniform ladder, and ``flows --from
A --to B`` compares any two configurations of the scope without ``--grid``."""

from __future__ import annotations

import json

import pytest

from backend.cli import main
from backend.scope.resolve import _ladder
from store import configs


def test_a_prompting_protocol_parses_orders_and_keeps_its_own_ladder():
    c = configs.parse("16f/adaptive+cot")
    assert (c.frames, c.policy, c.prompting, c.protocol) == (16, "adaptive", "cot", "adaptive+cot")
    assert configs.parse("8f+cot").protocol == "cot" and not configs.parse("8f+cot").is_budget_step
    assert configs.order(["16f", "8f+cot", "8f", "16f+cot", "text"]) == ["text", "8f", "8f+cot", "16f", "16f+cot"]
    assert configs.with_policy("16f+cot", "adaptive") == "16f/adaptive+cot"
    assert _ladder(["text", "8f", "16f", "8f+cot", "16f+cot", "32f+cot"]) == ["text", "8f", "16f"]
    with pytest.raises(configs.ConfigLabelError, match="labels are lowercase .* write '8f\\+cot'"):
        configs.parse("8f+CoT")


def _table(tmp_path, name: str, config: str, correct: list[int]) -> str:
    rows = [
        {"model": "m", "benchmark": "b", "item_id": f"q{i}", "config": config, "correct": y}
        for i, y in enumerate(correct)
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(rows))
    return str(path)


def test_flows_between_a_budget_and_its_protocol_twin_needs_no_grid(tmp_path, capsys):
    store = str(tmp_path / "s")
    files = [
        _table(tmp_path, "a", "8f", [1, 1, 0, 0, 1]),
        _table(tmp_path, "b", "16f", [1, 1, 1, 0, 1]),
        _table(tmp_path, "c", "8f+cot", [0, 1, 1, 1, 1]),
    ]
    assert main(["ingest", *files, "--store", store]) == 0
    capsys.readouterr()
    assert main(["metrics", "--store", store, "--models", "m", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (
        report["grid"] == ["8f", "16f"]
        and report["scope"]["grid_excluded_why"]["8f+cot"] == "prompting-protocol variant"
    )
    rc = main(
        ["flows", "--store", store, "--model", "m", "--from", "8f", "--to", "8f+cot", "--kind", "rescued", "--json"]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["scope"]["grid"] == ["8f", "8f+cot"]
    assert sorted(i["item_id"] for i in out["items"]) == ["q2", "q3"]  # by hand: wrong at 8f, right at 8f+cot
