"""Issue 35, point 3: ``explain`` on open-ended items. Free-text targets are not sliced (no empty slice), the
letter prior and the parser counts leave open-ended items out, and a planted slice's q is the hand BH."""

from __future__ import annotations

import json

import numpy as np
from scipy.stats import fisher_exact

from backend.cli import main

TYPES = {"causal": 2, "counting": 15, "description": 2, "temporal": 1}  # harmed items (8f -> 32f) of 25 each


def _store(tmp_path) -> str:
    rows = []
    n = 0
    for task, harmed in TYPES.items():
        for k in range(25):
            item = f"v{n:03d}"
            reference = f"The man puts answer number {n} on the table."  # free text, one per item
            right_at_8 = k < harmed or k % 2 == 0
            right_at_32 = k >= harmed and k % 2 == 0
            for config, right in (("8f", right_at_8), ("32f", right_at_32)):
                rows.append(
                    {
                        "model": "m",
                        "benchmark": "open",
                        "item_id": item,
                        "config": config,
                        "task_type": task,
                        "domain": f"clip {n}",  # a free-text field: one value per item
                        "prediction": reference if right else "something else entirely",
                        "target": reference,
                        "judge": "yes" if right else "no",
                    }
                )
            n += 1
    path = tmp_path / "open.json"
    path.write_text(json.dumps(rows))
    store = str(tmp_path / "s")
    assert main(["ingest", str(path), "--store", store, "--map", "correct=judge"]) == 0
    return store


def _hand_bh(p: list[float]) -> list[float]:
    """q_(i) = min over j >= i of p_(j) m / j, capped at 1, written out."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        q[i] = min(running, 1.0)
    return q


def test_explain_on_open_ended_items_slices_no_free_text_and_matches_a_hand_bh(tmp_path, capsys):
    store = _store(tmp_path)
    capsys.readouterr()
    rc = main(["explain", "--store", store, "--model", "m", "--flow", "8f:32f:harmed", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    report = json.loads(out.out)
    assert report["attributes"] == ["task_type"]  # the free-text target is not an attribute
    assert report["n_tests"] == 4 and all(s["n_slice"] > 0 for s in report["slices"])
    assert "domain not sliced: 100 distinct values (free text, over 50)" in report["untested"]
    assert any(u.startswith("100 open-ended item(s) left out of the target-letter slices") for u in report["untested"])
    # hand: each task type is 25 of the 100 items; the flow selects 20 items (15 + 2 + 2 + 1)
    p = [fisher_exact([[k, 25 - k], [20 - k, 75 - (20 - k)]])[1] for k in TYPES.values()]
    q = dict(zip(TYPES, _hand_bh(p)))
    by_value = {s["values"][0]: s for s in report["slices"]}
    assert by_value["counting"]["n_selected"] == 15
    assert np.isclose(by_value["counting"]["q"], q["counting"]) and by_value["counting"]["q"] < 0.001
    assert all(np.isclose(by_value[t]["q"], q[t]) for t in TYPES)
    # no letter prior or parser count on free text
    assert report["answers"]["letters"] == [] and report["parser"]["unparsed"] == 0
    assert all(sum(c["chosen"].values()) == 0 for c in report["answers"]["prior"])
