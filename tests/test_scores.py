"""Score views on hand-built matrices: mean scores, oracle gap, score flows with a tolerance, their
intervals, the score cut-off of the binary view, and every CLI twin of the score sections.

The numbers in the comments are worked out by hand from the tables; the intervals are recomputed
here from the paired resamples by a plain loop over each resample's items (the definition, not the
vectorised path ``backend.analysis.stats`` takes).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from backend.analysis.continuous import continuous_metrics, score_flow_items, score_flows
from backend.analysis.stats import bootstrap_weights
from backend.cli import main
from backend.contracts.base import to_json
from backend.scope.binary import binary_view, describe
from backend.scope.filters import ItemFilter
from backend.scope.loader import load_matrix
from backend.scope.resolve import Scope
from tests.matrix_fixtures import build_store, item_rows

#           8f   16f  32f
# i0       0.2  0.6  0.4
# i1       0.5  0.5  0.9
# i2       1.0  0.0  0.5
# i3       0.4  0.5  0.5
# means: 8f 2.1/4 = 0.525, 16f 1.6/4 = 0.400, 32f 2.3/4 = 0.575 -> best fixed 32f.
# per-item best: 0.6, 0.9, 1.0, 0.5 -> oracle mean 3.0/4 = 0.75; oracle gap 0.75 - 0.575 = 0.175.
# 8f -> 16f deltas +0.4, 0, -1.0, +0.1: improved 2 (i0, i3), regressed 1 (i2), unchanged 1 (i1);
#   with tolerance 0.1, i3's +0.1 is unchanged: improved 1, regressed 1, unchanged 2.
# 16f -> 32f deltas -0.2, +0.4, +0.5, 0: improved 2, regressed 1 (i0), unchanged 1 (i3).
GRID = ["8f", "16f", "32f"]
SCORES = {"8f": [0.2, 0.5, 1.0, 0.4], "16f": [0.6, 0.5, 0.0, 0.5], "32f": [0.4, 0.9, 0.5, 0.5]}
# A second model, better everywhere and monotone: oracle mean = its 32f mean, gap 0.
OTHER = {"8f": [0.3, 0.6, 0.6, 0.5], "16f": [0.7, 0.7, 0.7, 0.6], "32f": [0.8, 0.9, 1.0, 0.7]}
B, SEED = 300, 3


def scored_store(root):
    score = {"m": SCORES, "n": OTHER}
    correct = {m: {c: [int(v >= 0.5) for v in vals] for c, vals in per.items()} for m, per in score.items()}
    items = item_rows(4, task_type=["summary", "summary", "dialogue", "dialogue"], answer_type="open")
    return build_store(root, correct, items=items, score=score)


def hand_intervals(s: np.ndarray, n_resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Percentile intervals of the mean score per config, the oracle gap and the regression rates, one resample
    at a time: the resample's items (each drawn as often as the paired resample draws it), then the definitions."""
    counts = np.concatenate(list(bootstrap_weights(len(s), n_resamples, seed)))
    means, gaps, drops = [], [], []
    for w in counts:
        sample = np.repeat(s, w, axis=0)  # the resampled items
        mean = sample.mean(axis=0)
        means.append(mean)
        gaps.append(sample.max(axis=1).mean() - mean.max())
        drops.append([(sample[:, k + 1] < sample[:, k]).mean() for k in range(s.shape[1] - 1)])
    q = [2.5, 97.5]
    return {
        "mean_score": np.percentile(means, q, axis=0),
        "oracle_gap": np.percentile(gaps, q),
        "regression_rate": np.percentile(drops, q, axis=0),
    }


def test_score_summaries_equal_the_hand_computation(tmp_path):
    mx = load_matrix(scored_store(tmp_path / "s"), ["m", "n"], grid=GRID)
    out = to_json(continuous_metrics(mx, "m", bootstrap=B, seed=SEED))
    assert out["n_items"] == 4 and out["n_unscored"] == 0 and out["tolerance"] == 0.0
    assert out["mean_score"] == pytest.approx({"8f": 0.525, "16f": 0.4, "32f": 0.575}, abs=1e-6)
    assert out["best_fixed"] == {"config": "32f", "mean_score": pytest.approx(0.575, abs=1e-6)}
    assert out["oracle_mean"] == pytest.approx(0.75, abs=1e-6)
    assert out["oracle_gap"] == pytest.approx(0.175, abs=1e-6)
    first, second = out["transitions"]
    assert (first["improved"], first["regressed"], first["unchanged"]) == (2, 1, 1)
    assert (second["improved"], second["regressed"], second["unchanged"]) == (2, 1, 1)
    assert first["regression_rate"] == 0.25 and first["improvement_rate"] == 0.5
    assert first["mean_delta"] == pytest.approx(-0.125, abs=1e-6)
    assert first["sign_p"] == pytest.approx(1.0)  # 2 vs 1: 2 * P[Bin(3, 1/2) <= 1] = 2 * 4/8
    # The intervals: the same paired resamples, recomputed item by item.
    hand = hand_intervals(np.array([SCORES[c] for c in GRID]).T, B, SEED)
    for k, c in enumerate(GRID):
        assert out["ci"]["mean_score"][c] == pytest.approx(hand["mean_score"][:, k].tolist(), abs=1e-5)
    assert out["ci"]["oracle_gap"] == pytest.approx(hand["oracle_gap"].tolist(), abs=1e-5)
    for k in range(2):
        assert out["ci"]["regression_rate"][k] == pytest.approx(hand["regression_rate"][:, k].tolist(), abs=1e-6)
    assert out["ci"]["oracle_gap"][0] < out["ci"]["oracle_gap"][1]  # four items: a real spread, not a point
    other = to_json(continuous_metrics(mx, "n", bootstrap=0))
    assert other["oracle_gap"] == pytest.approx(0.0, abs=1e-6) and other["ci"] == {}
    assert [t["regressed"] for t in other["transitions"]] == [0, 0]


def test_a_tolerance_moves_small_changes_to_unchanged(tmp_path):
    mx = load_matrix(scored_store(tmp_path / "s"), ["m"], grid=GRID)
    flows = to_json(score_flows(mx, "m", tolerance=0.1))
    first, second = flows["transitions"]
    assert (first["improved"], first["regressed"], first["unchanged"]) == (1, 1, 2)  # i3's +0.1 is within 0.1
    assert (second["improved"], second["regressed"], second["unchanged"]) == (2, 1, 1)
    items = score_flow_items(mx, "m", "8f", "16f", "unchanged", tolerance=0.1)
    assert items["item_id"].tolist() == ["i3", "i1"]  # the largest change first: +0.1, then 0
    drop = score_flow_items(mx, "m", "8f", "16f", "regressed")
    assert drop["item_id"].tolist() == ["i2"] and drop["delta"].tolist() == pytest.approx([-1.0])
    assert drop[["score_from", "score_to"]].to_numpy().tolist() == [[1.0, 0.0]]


def mixed_store(root):
    """Four multiple-choice items (i0-i3, no score) and four scored ones (i4-i7, with a stored verdict that is
    not ``score >= 0.5``: a judge's, say) at 8f and 16f."""
    correct = {"m": {"8f": [1, 0, 1, 0, 1, 1, 0, 0], "16f": [1, 1, 0, 0, 0, 1, 1, 0]}}
    score = {"m": {"8f": [None] * 4 + [0.9, 0.3, 0.6, 0.1], "16f": [None] * 4 + [0.2, 0.8, 0.7, 0.4]}}
    items = item_rows(8, answer_type=["mcqa"] * 4 + ["open"] * 4)
    return build_store(root, correct, items=items, score=score)


@pytest.mark.parametrize(
    ("cutoff", "accuracy", "n_items"),
    [
        # stored verdicts: 8f 1+0+1+0 | 1+1+0+0 = 4/8; 16f 1+1+0+0 | 0+1+1+0 = 4/8
        ("stored", {"8f": 4 / 8, "16f": 4 / 8}, 8),
        # score >= 0.5 on i4-i7: 8f 1,0,1,0 -> (2 + 2)/8; 16f 0,1,1,0 -> (2 + 2)/8 ... and >= 0.3: 8f 1,1,1,0; 16f 0,1,1,1
        ("0.3", {"8f": (2 + 3) / 8, "16f": (2 + 3) / 8}, 8),
        ("0.85", {"8f": (2 + 1) / 8, "16f": (2 + 0) / 8}, 8),
        # left out: the four multiple-choice items only: 8f 2/4, 16f 2/4
        ("none", {"8f": 0.5, "16f": 0.5}, 4),
    ],
)
def test_the_score_cutoff_makes_the_binary_view(tmp_path, capsys, cutoff, accuracy, n_items):
    root = tmp_path / "s"
    mixed_store(root)
    argv = ["metrics", "--store", str(root), "--models", "m", "--grid", "8f,16f", "--bootstrap", "0", "--json"]
    assert main([*argv, "--score-cutoff", cutoff]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["models"]["m"]["accuracy"] == pytest.approx(accuracy)
    assert out["n_items"] == n_items
    cont = out["models"]["m"]["continuous"]  # the score numbers stay, whatever the cut-off
    assert cont["n_items"] == 4 and cont["mean_score"] == pytest.approx({"8f": 0.475, "16f": 0.525}, abs=1e-6)
    binary = out["binary"]
    assert (binary["n_scored_items"], binary["n_mcqa_items"]) == (4, 4)
    assert binary["n_scored_in_accuracy"] == (0 if cutoff == "none" else 4)
    assert out["scope"]["score_cutoff"] == (cutoff if cutoff in ("stored", "none") else float(cutoff))


def test_stored_verdicts_say_which_cutoff_they_are(tmp_path):
    mx = load_matrix(mixed_store(tmp_path / "s"), ["m"])
    view = binary_view(mx, "stored")
    assert view.verdict_cut is None  # the judge called 0.3 right and 0.4 wrong at 16f... and 0.1 wrong: no T fits
    demo_like = load_matrix(scored_store(tmp_path / "t"), ["m"])  # verdicts written as score >= 0.5
    view = binary_view(demo_like, "stored")
    assert view.verdict_cut == (0.4, 0.5)  # an Interval: highest score called wrong, lowest called right
    assert "by their stored verdict (= score ≥ 0.5)" in describe(view)  # the top of (0.4, 0.5], one number
    assert "left out of accuracy" in describe(binary_view(demo_like, "none"))


def test_the_cutoff_round_trips_through_flags_and_is_checked():
    from backend.cli import build_parser

    scope = Scope("bench", ("m",), ("8f", "16f"), ItemFilter(), score_cutoff="0.50")
    assert scope.score_cutoff == "0.5" and scope.to_argv()[-2:] == ["--score-cutoff", "0.5"]
    assert Scope.from_args(build_parser().parse_args(["metrics", *scope.to_argv()])) == scope
    assert "--score-cutoff" not in Scope("bench", ("m",)).to_argv()  # the default stays implicit


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--score-cutoff", "1.5"], "--score-cutoff must be in [0, 1] (got 1.5)"),
        (["--score-cutoff", "half"], "--score-cutoff must be 'stored', 'none' or a number in [0, 1] (got 'half')"),
        (["--tolerance", "-0.1"], "--tolerance must be in [0, 1] (got -0.1)"),
    ],
)
def test_bad_score_flags_exit_2_with_one_line(tmp_path, capsys, extra, message):
    root = tmp_path / "s"
    scored_store(root)

    def stored() -> list[str]:  # the store's files, less its cache folder (a read may cache what it read)
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".cache" not in p.parts)

    before = stored()
    assert main(["metrics", "--store", str(root), "--models", "m", "--bootstrap", "0", "--json", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(message) and len(err.splitlines()) == 1
    assert stored() == before


def test_cli_twins_of_the_score_sections(tmp_path, capsys):
    root = tmp_path / "s"
    scored_store(root)
    s = ["--store", str(root), "--grid", ",".join(GRID)]

    def run(*argv: str):
        capsys.readouterr()
        assert main(list(argv)) == 0, capsys.readouterr().err
        return json.loads(capsys.readouterr().out)

    flows = run("flows", *s, "--model", "m", "--scores", "--from", "8f", "--to", "16f", "--kind", "regressed", "--json")
    assert flows["n_items"] == 4 and flows["n_flow_items"] == 1 and flows["items"][0]["item_id"] == "i2"
    assert [(t["improved"], t["regressed"], t["unchanged"]) for t in flows["transitions"]] == [(2, 1, 1)]
    tol = run("flows", *s, "--model", "m", "--scores", "--tolerance", "0.1", "--json")
    assert [t["unchanged"] for t in tol["transitions"]] == [2, 1] and tol["tolerance"] == 0.1
    # Items by the largest drop between consecutive configs: i2 1.0, i0 0.2, then i1 and i3 (never fall: 0) by id.
    page = run("items", *s, "--model", "m", "--sort", "drop", "--desc", "--page", "1", "--json")
    assert [r["item_id"] for r in page["rows"]] == ["i2", "i0", "i1", "i3"]
    assert [r["drop"] for r in page["rows"]] == pytest.approx([1.0, 0.2, 0.0, 0.0], abs=1e-6)
    compare = run("compare", *s, "--models", "m,n", "--bootstrap", "0", "--json")
    gaps = {m: rec["continuous"]["oracle_gap"] for m, rec in compare["metrics"].items()}
    assert gaps == pytest.approx({"m": 0.175, "n": 0.0}, abs=1e-6)
    capsys.readouterr()
    assert main(["flows", *s, "--model", "m", "--tolerance", "0.1", "--json"]) == 2
    assert "--tolerance is for score flows: add --scores" in capsys.readouterr().err


def test_the_report_tables_carry_the_score_section(tmp_path, capsys):
    root = tmp_path / "s"
    scored_store(root)
    out = tmp_path / "report.md"
    argv = ["report", "--store", str(root), "--models", "m,n", "--grid", ",".join(GRID), "--bootstrap", "0"]
    assert main([*argv, "--format", "markdown", "--out", str(out)]) == 0
    text = out.read_text()
    # m: 52.5 / 40.0 / 57.5, best fixed 32f 57.5, oracle mean 75.0, gap 17.5 (score points)
    assert "| m | 4 | 52.5 | 40.0 | 57.5 | 32f 57.5 | 75.0 | 17.5 |" in text
    assert "| m | 8f → 16f | 2 | 1 | 1 | 25.0 | 1 |" in text
    latex = tmp_path / "report.tex"
    assert main([*argv, "--format", "latex", "--out", str(latex)]) == 0
    assert r"\label{tab:trajaudit-scores}" in latex.read_text()


def test_cutoff_none_on_open_ended_items_only_says_where_their_numbers_are(tmp_path, capsys):
    root = tmp_path / "s"
    scored_store(root)  # every item scored
    argv = ["--store", str(root), "--models", "m", "--score-cutoff", "none"]
    assert main(["metrics", *argv, "--bootstrap", "0", "--json"]) == 2
    assert "--score-cutoff none leaves the scored (open-ended) items out" in capsys.readouterr().err
    assert main(["flows", "--store", str(root), "--model", "m", "--score-cutoff", "none", "--scores", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_items"] == 4  # the score view still has them
