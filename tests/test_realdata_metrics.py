"""Acceptance: ingest the scale-grid release's real CSV and reproduce the release's own numbers.

The release's JSON (`LLaVA-NeXT-Video-7B_V1_short.json`) gives accuracy per config, best fixed, oracle,
headroom, visual confusion and overwrite rate in percent; the CSV has only the predicted letters, so
the ground truth comes from `videomme_answers.csv`. End to end: `trajaudit ingest` then
`trajaudit metrics --json`. Read from ../shared/realdata (never committed).
"""

import json

import pytest

from backend.cli import main
from store.configs import from_scalegrid

pytestmark = pytest.mark.realdata

CELL = "LLaVA-NeXT-Video-7B_V1_short"


def test_scalegrid_cell_reproduces_the_release_json(realdata, tmp_path, capsys):
    assert (
        main(
            [
                "ingest",
                str(realdata / f"{CELL}_predictions_wide.csv"),
                "--answers",
                str(realdata / "videomme_answers.csv"),
                "--store",
                str(tmp_path),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        main(["metrics", "--store", str(tmp_path), "--models", "LLaVA-NeXT-Video-7B", "--bootstrap", "0", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    expected = json.loads((realdata / f"{CELL}.json").read_text())

    m = out["models"]["LLaVA-NeXT-Video-7B"]
    assert out["n_items"] == expected["n"] == 786
    assert out["grid"] == [from_scalegrid(c) for c in expected["configs"]]
    for name, pct in expected["accuracy_by_config"].items():
        assert m["accuracy"][from_scalegrid(name)] * 100 == pytest.approx(pct, abs=0.01)
    assert m["best_fixed"]["accuracy"] * 100 == pytest.approx(expected["best_fixed"], abs=0.01)
    assert m["oracle_accuracy"] * 100 == pytest.approx(expected["oracle"], abs=0.01)
    assert m["oracle_headroom"] * 100 == pytest.approx(expected["headroom"], abs=0.01)
    assert m["visual_confusion_rate"] * 100 == pytest.approx(expected["visual_confusion_rate"], abs=0.01)
    assert m["text_overwrite_rate"] * 100 == pytest.approx(expected["overwrite_rate"], abs=0.01)
