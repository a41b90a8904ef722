"""Issue 35, point 4: a store whose only ladder is adaptive gets a default grid (docs/metrics.md: when no
uniform ladder exists, the longest ladder the store has)."""

from __future__ import annotations

import json

from backend.cli import main
from backend.scope.resolve import _ladder
from tests.adaptive_tree import MODEL, RIGHT, write_tree


def test_no_uniform_ladder_takes_the_longest_other_one():
    assert _ladder(["8f/adaptive", "16f/adaptive", "32f/adaptive"]) == ["8f/adaptive", "16f/adaptive", "32f/adaptive"]
    assert _ladder(["text", "8f", "16f", "16f/adaptive", "32f/adaptive", "64f/adaptive"]) == ["text", "8f", "16f"]
    assert _ladder(["8f", "8f/adaptive", "16f/adaptive"]) == ["8f/adaptive", "16f/adaptive"]  # one uniform: no ladder
    assert _ladder(["8f/cot", "8f/dscp", "16f/dscp"]) == ["8f/dscp", "16f/dscp"]
    assert _ladder(["16f~prune85", "32f~prune85"]) == []  # approximate protocols never form a default grid


def test_an_adaptive_only_lmms_eval_tree_has_a_default_grid(tmp_path, capsys):
    tree = write_tree(tmp_path / "out")
    store = str(tmp_path / "s")
    capsys.readouterr()
    assert main(["ingest", str(tree), "--store", store, "--benchmark", "videomme"]) == 0
    assert "config 32f -> 32f/adaptive: 6 of 6 logged frame sets match no uniform sampler" in capsys.readouterr().out
    assert main(["metrics", "--store", store, "--models", MODEL, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["grid"] == ["8f/adaptive", "16f/adaptive", "32f/adaptive"]
    assert report["scope"]["grid_source"] == "default"
    by_hand = {f"{k}f/adaptive": len(RIGHT[k]) / 6 for k in (8, 16, 32)}
    assert report["models"][MODEL]["accuracy"] == by_hand
