"""Acceptance: ``explain --tag text-overwrite`` on the real scale-grid cell, checked against pandas on the raw files.

The hand computation reads the release's CSV and the Video-MME answers directly (not the store): an item
is a text overwrite when the text-only letter is the answer and some visual configuration's is not.
"""

import json

import pandas as pd
import pytest

from backend.cli import main
from store.configs import from_scalegrid

pytestmark = pytest.mark.realdata

CELL = "LLaVA-NeXT-Video-7B_V1_short"
MODEL = "LLaVA-NeXT-Video-7B"


@pytest.fixture
def real_store(realdata, tmp_path, capsys):
    csv, answers = realdata / f"{CELL}_predictions_wide.csv", realdata / "videomme_answers.csv"
    assert main(["ingest", str(csv), "--answers", str(answers), "--store", str(tmp_path)]) == 0
    capsys.readouterr()
    wide = pd.read_csv(csv, dtype=str, keep_default_na=False)
    truth = pd.read_csv(answers, dtype=str).rename(columns={"question_id": "sample_id"})
    return tmp_path, wide.merge(truth, on="sample_id", validate="one_to_one")


def _explain(store, capsys, *argv: str) -> dict:
    assert main(["explain", "--store", str(store), "--model", MODEL, *argv, "--top", "1000", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_text_overwrite_slices_by_task_type_equal_a_pandas_groupby(real_store, capsys):
    store, frame = real_store
    out = _explain(store, capsys, "--tag", "text-overwrite")
    visual = [c for c in frame.columns if c.endswith("_151k")]
    right = frame[["textonly", *visual]].eq(frame["answer"], axis=0)
    frame["overwrite"] = right["textonly"] & ~right[visual].all(axis=1)
    hand = frame.groupby("task_type")["overwrite"].agg(n_slice="size", n_selected="sum")
    got = {s["values"][0]: (s["n_slice"], s["n_selected"]) for s in out["slices"] if s["attributes"] == ["task_type"]}
    assert got == {t: (int(r.n_slice), int(r.n_selected)) for t, r in hand.iterrows()}
    assert (out["n_scope"], out["n_selected"]) == (len(frame), int(frame["overwrite"].sum())) == (786, 86)
    base = frame["overwrite"].mean()
    for s in out["slices"]:
        assert s["base_rate"] == pytest.approx(base) and s["lift"] == pytest.approx(
            s["n_selected"] / s["n_slice"] / base
        )


def test_letter_prior_of_one_real_configuration_equals_a_hand_count(real_store, capsys):
    store, frame = real_store
    out = _explain(store, capsys, "--tag", "text-overwrite", "--no-pairs")
    label = from_scalegrid("8f_151k")
    prior = next(row for row in out["answers"]["prior"] if row["config"] == label)
    letters = frame["8f_151k"].where(frame["8f_151k"].isin(list("ABCD")))
    assert prior["chosen"] == {k: int(v) for k, v in letters.value_counts().sort_index().items()}
    assert prior["no_answer"] == int(letters.isna().sum())
    assert out["answers"]["targets"] == {k: int(v) for k, v in frame["answer"].value_counts().sort_index().items()}
