"""Issue 35, point 5: ingest says what it chose. A dry run refuses what the ingest refuses, in the same
line; a logged budget is not overridden silently; a results file is found by its stamp."""

from __future__ import annotations

import json
from pathlib import Path

from backend.cli import main
from store.store import Store

MODEL = "LLaVA-NeXT-Video-7B-Qwen2"
ITEMS = [("001-1", "A"), ("001-2", "B"), ("002-1", "C")]


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _run(folder: Path, frames: int, said: str, stamp: str, results_name: str | None = None) -> None:
    """An lmms-eval Video-MME run: <folder>/..__<model>/<stamp>_samples_videomme.jsonl and its results file."""
    d = folder / f"..__{MODEL}"
    d.mkdir(parents=True)
    lines = [
        {
            "doc_id": n,
            "target": ans,
            "filtered_resps": [said],
            "doc_hash": "same",
            "videomme_perception_score": {
                "question_id": qid,
                "task_category": "Counting",
                "pred_answer": said,
                "answer": ans,
            },
        }
        for n, (qid, ans) in enumerate(ITEMS)
    ]
    (d / f"{stamp}_samples_videomme.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    args = f"pretrained=lmms-lab/{MODEL},max_frames_num={frames}"
    name = results_name or f"{stamp}_results.json"
    (d / name).write_text(json.dumps({"config": {"model": "llava_vid", "model_args": args}}))


def test_dry_run_refuses_two_runs_that_collide_with_the_ingests_own_line(tmp_path, capsys):
    # two folders claiming the same model and budget with different answers: the ingest refuses them
    _run(tmp_path / "a", 8, "A", "20260101_080000")
    _run(tmp_path / "b", 8, "B", "20260101_090000")
    store = tmp_path / "store"
    argv = ["ingest", str(tmp_path / "a"), str(tmp_path / "b"), "--store", str(store)]
    rc_dry, out_dry, err_dry = _cli(capsys, *argv, "--dry-run")
    rc, _, err = _cli(capsys, *argv)
    assert (rc_dry, rc) == (2, 2) and out_dry == ""
    assert err_dry == err and err.count("\n") == 1 and "appear more than once with different values" in err
    assert not any(store.rglob("*.parquet")) if store.exists() else True


def test_dry_run_refuses_a_change_against_the_store_and_counts_what_it_would_add(tmp_path, capsys):
    _run(tmp_path / "a", 8, "A", "20260101_080000")
    _run(tmp_path / "b", 8, "B", "20260101_090000")
    _run(tmp_path / "c", 16, "B", "20260101_100000")
    store = tmp_path / "store"
    assert _cli(capsys, "ingest", str(tmp_path / "a"), "--store", str(store))[0] == 0
    before = Store(store).version()
    rc_dry, _, err_dry = _cli(capsys, "ingest", str(tmp_path / "b"), "--store", str(store), "--dry-run")
    rc, _, err = _cli(capsys, "ingest", str(tmp_path / "b"), "--store", str(store))
    assert (rc_dry, rc) == (2, 2) and err_dry == err and "pass --replace" in err and err.count("\n") == 1
    rc, out, err = _cli(
        capsys, "ingest", str(tmp_path / "a"), str(tmp_path / "c"), "--store", str(store), "--dry-run", "--json"
    )
    summary = json.loads(out)
    assert rc == 0 and (summary["new"], summary["already_stored"]) == (3, 3) and Store(store).version() == before


def test_config_that_differs_from_the_logged_budget_is_refused_unless_forced(tmp_path, capsys):
    _run(tmp_path / "a", 16, "A", "20260101_080000")
    store = str(tmp_path / "store")
    rc, _, err = _cli(capsys, "ingest", str(tmp_path / "a"), "--store", store, "--config", "8f")
    assert rc == 2 and err.count("\n") == 1
    assert "--config 8f differs from the budget logged by 20260101_080000_results.json (max_frames_num=16): 16f" in err
    assert "--force-config" in err and "Traceback" not in err
    assert _cli(capsys, "ingest", str(tmp_path / "a"), "--store", store, "--config", "16f", "--dry-run")[0] == 0
    rc, out, err = _cli(
        capsys, "ingest", str(tmp_path / "a"), "--store", store, "--config", "8f", "--force-config", "--json"
    )
    summary = json.loads(out)
    assert rc == 0 and summary["configs"] == ["8f"]
    assert summary["files"][0]["config_hint"] == "config 8f from --force-config, overriding the logged 16f"


def test_a_suffixed_results_file_is_found_by_its_stamp(tmp_path, capsys):
    # a patched harness (adaptive keyframe selection) writes <stamp>_results_aks.json; another run's results
    # file in the same folder must not be taken for it
    _run(tmp_path / "a", 32, "A", "20260101_080000", results_name="20260101_080000_results_aks.json")
    d = tmp_path / "a" / f"..__{MODEL}"
    (d / "20251231_000000_results.json").write_text(
        json.dumps({"config": {"model_args": "pretrained=x/other,max_frames_num=8"}})
    )
    rc, out, err = _cli(
        capsys, "ingest", str(d / "20260101_080000_samples_videomme.jsonl"), "--store", str(tmp_path / "s"), "--json"
    )
    summary = json.loads(out)
    assert rc == 0, err
    assert (summary["models"], summary["configs"]) == ([MODEL], ["32f"])


def test_no_results_file_names_what_was_looked_for(tmp_path, capsys):
    _run(tmp_path / "run", 32, "A", "20260101_080000", results_name="20251231_000000_other.json")
    rc, _, err = _cli(capsys, "ingest", str(tmp_path / "run"), "--store", str(tmp_path / "s"))
    assert rc == 2 and err.count("\n") == 1
    assert "no results file beside it shares its stamp (<stamp>_results*.json), and the file and folder names" in err


def test_an_uppercase_label_is_refused_with_the_rule_and_its_spelling(tmp_path, capsys):
    _run(tmp_path / "a", 8, "A", "20260101_080000")
    rc, _, err = _cli(capsys, "ingest", str(tmp_path / "a"), "--store", str(tmp_path / "s"), "--config", "8F/Adaptive")
    assert rc == 2 and err.count("\n") == 1
    assert "labels are lowercase (frames as 'f', policy names such as 'adaptive'): write '8f/adaptive'" in err


def test_an_empty_verdict_stays_empty_is_counted_and_left_out_of_accuracy_under_stored(tmp_path, capsys):
    rows = [
        {"item_id": "a", "prediction": "a coin", "target": "A coin.", "correct": "yes"},
        {"item_id": "b", "prediction": "a dog", "target": "A cat.", "correct": ""},
        {"item_id": "c", "prediction": "a dog", "target": "A cat.", "correct": None},
        {"item_id": "d", "prediction": "a dog", "target": "A cat.", "correct": "no"},
    ]
    (tmp_path / "judge.json").write_text(json.dumps(rows))
    store = str(tmp_path / "s")
    argv = [
        "ingest",
        str(tmp_path / "judge.json"),
        "--store",
        store,
        "--model",
        "m",
        "--benchmark",
        "b",
        "--config",
        "8f",
    ]
    rc, out, err = _cli(capsys, *argv, "--json")
    assert rc == 0, err
    report = json.loads(out)
    assert [n.split(": ", 1)[1][:30] for n in report["notes"]] == ["2 row(s) give an empty verdict"]
    assert report["flagged"] == {"no-verdict": 2} and report["files"][0]["flagged"] == {"no-verdict": 2}
    assert Store(store).query("SELECT item_id FROM responses WHERE flags = 'no-verdict' ORDER BY 1")[
        "item_id"
    ].tolist() == ["b", "c"]
    rc, out, err = _cli(capsys, "metrics", "--store", store, "--models", "m", "--grid", "8f", "--json")
    assert rc == 0, err
    # stored cut-off: the two items without a verdict are left out of accuracy and counted (1 of the 2 judged,
    # docs/metrics.md "Empty verdicts"), their Token-F1 scores kept in the score numbers
    report = json.loads(out)
    assert report["models"]["m"]["accuracy"] == {"8f": 0.5} and report["n_items"] == 2
    assert {k: report["binary"][k] for k in ("n_scored_items", "n_scored_in_accuracy")} == {
        "n_scored_items": 4,
        "n_scored_in_accuracy": 2,
    }
    assert report["models"]["m"]["continuous"]["n_items"] == 4
    rc, text, _ = _cli(capsys, "metrics", "--store", store, "--models", "m", "--grid", "8f", "--bootstrap", "0")
    assert "2 without a verdict left out" in text
    rc, out, err = _cli(
        capsys, "metrics", "--store", store, "--models", "m", "--grid", "8f", "--json", "--score-cutoff", "0.5"
    )
    assert json.loads(out)["models"]["m"]["accuracy"] == {"8f": 0.25}  # Token-F1: only "a coin" = "A coin." reaches 0.5
    assert json.loads(out)["n_items"] == 4  # a cut-off judges every scored item


def _table(path: Path, config: str, correct: list[int]) -> Path:
    rows = [
        {"model": "m", "benchmark": "b", "item_id": f"q{i}", "config": config, "correct": y}
        for i, y in enumerate(correct)
    ]
    path.write_text(json.dumps(rows))
    return path


def test_a_cell_with_several_runs_says_which_it_shows_and_run_picks_another(tmp_path, capsys):
    store = str(tmp_path / "s")
    for name, config, y in (("a", "8f", [1, 1, 1, 1]), ("b", "16f", [0, 0, 0, 0])):
        assert _cli(capsys, "ingest", str(_table(tmp_path / f"{name}.json", config, y)), "--store", store)[0] == 0
    # a second prompting protocol of the same 16f cell, ingested later under its own run name
    assert (
        _cli(
            capsys, "ingest", str(_table(tmp_path / "cot.json", "16f", [1, 1, 1, 0])), "--store", store, "--run", "cot"
        )[0]
        == 0
    )
    rc, out, err = _cli(capsys, "metrics", "--store", store, "--models", "m", "--json")
    report = json.loads(out)
    assert rc == 0 and report["models"]["m"]["accuracy"] == {"8f": 1.0, "16f": 0.0}  # main wins the cell
    assert report["scope"]["runs"] == [{"model": "m", "config": "16f", "runs": ["main", "cot"], "shown": "main"}]
    assert (
        err
        == "trajaudit metrics: several runs in one cell: m at 16f holds runs main, cot, showing main. Pick another with --run RUN (the URL's run=RUN)\n"
    )
    rc, out, err = _cli(capsys, "metrics", "--store", store, "--models", "m", "--grid", "16f", "--run", "cot", "--json")
    report = json.loads(out)
    assert rc == 0 and report["models"]["m"]["accuracy"] == {"16f": 0.75}  # 3 of 4 under run cot, by hand
    assert report["scope"]["run"] == "cot" and report["scope"]["runs"][0]["shown"] == "cot"
    rc, out, err = _cli(capsys, "flows", "--store", store, "--model", "m", "--from", "8f", "--to", "16f", "--json")
    assert rc == 0 and "showing main" in err


def test_a_yes_no_target_is_judged_by_the_word_and_never_token_f1_scored(tmp_path, capsys):
    rows = [
        {"item_id": "a", "prediction": "Yes, the man opens the door.", "target": "yes"},
        {"item_id": "b", "prediction": "The answer is: no", "target": "Yes"},
        {"item_id": "c", "prediction": "I cannot tell.", "target": "no"},
        {"item_id": "d", "prediction": "No.", "target": "No."},
    ]
    (tmp_path / "yn.json").write_text(json.dumps(rows))
    store = str(tmp_path / "s")
    argv = ["ingest", str(tmp_path / "yn.json"), "--store", store, "--model", "m", "--benchmark", "b", "--config", "8f"]
    rc, out, err = _cli(capsys, *argv, "--json")
    assert rc == 0 and json.loads(out)["scores"] == {}, err  # no Token-F1 score
    got = Store(store).query(
        "SELECT item_id, coalesce(answer, '(none)') AS answer, correct, score FROM responses ORDER BY item_id"
    )
    assert got["answer"].tolist() == ["yes", "no", "(none)", "no"] and got["correct"].tolist() == [1, 0, 0, 1]
    assert got["score"].isna().all()
