"""The read-side CLI (metrics, items, info) through ``backend.cli.main``: JSON shapes and values."""

from __future__ import annotations

import csv
import io
import json

import pytest

from backend.cli import main
from tests.matrix_fixtures import HEADLINES_WITH_CI, basic_store, build_store, item_rows


@pytest.fixture
def store_dir(tmp_path):
    return str(basic_store(tmp_path / "s").root)


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_metrics_json_contract(store_dir, capsys):
    out = _json(capsys, ["metrics", "--store", store_dir, "--models", "m", "--bootstrap", "200", "--json"])
    assert out["grid"] == ["text", "8f", "16f", "32f"] and out["n_items"] == 5 and out["n_excluded"] == 0
    m = out["models"]["m"]
    assert set(m) == {"accuracy", "terminal_regressions", "transitions", "ci"} | HEADLINES_WITH_CI
    assert m["accuracy"] == {"text": 0.4, "8f": 0.4, "16f": 0.4, "32f": 0.6}
    assert m["best_fixed"] == {"config": "32f", "accuracy": 0.6}
    assert m["oracle_accuracy"] == pytest.approx(0.8) and m["terminal_regressions"] == 1
    assert set(m["transitions"][0]) == {"from", "to", "rescued", "harmed", "net", "churn", "mcnemar_p"}
    intervals = [v for k, v in m["ci"].items() if k != "accuracy"] + list(m["ci"]["accuracy"].values())
    assert list(m["ci"]["accuracy"]) == out["grid"] and len(intervals) == 7 + 4
    assert all(len(v) == 2 and v[0] <= v[1] for v in intervals)
    assert "continuous" not in m


def test_metrics_options(store_dir, capsys):
    argv = ["metrics", "--store", store_dir, "--models", "m", "--bootstrap", "0", "--json"]
    out = _json(capsys, [*argv, "--grid", "8f,32f", "--pairs", "32f:8f", "--task-type", "B"])
    m = out["models"]["m"]
    # B = {i2, i3, i4}: 8f [0,0,0], 32f [0,1,0]; 32f -> 8f harms i3.
    assert out["grid"] == ["8f", "32f"] and out["n_items"] == 3
    assert m["accuracy"] == pytest.approx({"8f": 0.0, "32f": 1 / 3})
    assert m["transitions"] == [
        {
            "from": "32f",
            "to": "8f",
            "rescued": 0,
            "harmed": 1,
            "net": pytest.approx(-1 / 3),
            "churn": pytest.approx(1 / 3),
            "mcnemar_p": 1.0,
        }
    ]
    assert m["text_overwrite_rate"] is None and m["ci"] == {}


def test_metrics_errors_exit_2(store_dir, capsys):
    assert main(["metrics", "--store", store_dir, "--models", "m", "--grid", "8f,64f"]) == 2
    assert "'m'" in capsys.readouterr().err
    assert main(["metrics", "--store", store_dir, "--models", "m", "--pairs", "8f-16f"]) == 2
    assert "FROM:TO" in capsys.readouterr().err


def test_metrics_readable_table(store_dir, capsys):
    assert main(["metrics", "--store", store_dir, "--models", "m", "--bootstrap", "100"]) == 0
    text = capsys.readouterr().out
    assert "Best fixed" in text and "32f  60.0 [" in text and "text -> 8f" in text


def test_metrics_with_scores_adds_continuous(tmp_path, capsys):
    scores = {"m": {"8f": [0.2, 0.5], "16f": [0.6, 0.1]}}
    build_store(tmp_path / "s", {"m": {"8f": [0, 1], "16f": [1, 0]}}, score=scores)
    out = _json(capsys, ["metrics", "--store", str(tmp_path / "s"), "--models", "m", "--bootstrap", "0", "--json"])
    cont = out["models"]["m"]["continuous"]
    assert cont["mean_score"] == pytest.approx({"8f": 0.35, "16f": 0.35}, abs=1e-6)
    assert cont["oracle_gap"] == pytest.approx(0.55 - 0.35, abs=1e-6)


def test_items_json_and_csv(store_dir, capsys):
    rows = _json(capsys, ["items", "--store", store_dir, "--model", "m", "--format", "json"])
    assert [r["item_id"] for r in rows] == ["i0", "i1", "i2", "i3", "i4"]
    assert {"benchmark", "item_id", "task_type", "video", "tags", "trajectory"} <= set(rows[0])
    assert rows[2]["tags"] == ["confused", "text-overwrite", "terminal-regression"]
    assert rows[2]["trajectory"] == {"text": 1, "8f": 0, "16f": 0, "32f": 0} and rows[2]["video"] == "v2"

    assert main(["items", "--store", store_dir, "--model", "m", "--tag", "confused", "--format", "csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["item_id"] for r in table] == ["i1", "i2"]
    assert {k: table[0][k] for k in ("text", "8f", "16f", "32f")} == {"text": "0", "8f": "1", "16f": "0", "32f": "1"}
    assert table[1]["tags"] == "confused;text-overwrite;terminal-regression"

    limited = _json(
        capsys, ["items", "--store", store_dir, "--model", "m", "--limit", "2", "--task-type", "B", "--json"]
    )
    assert [r["item_id"] for r in limited] == ["i2", "i3"]


def test_info_json(store_dir, capsys):
    out = _json(capsys, ["info", "--store", store_dir, "--json"])
    assert out["models"] == ["m"] and out["benchmarks"] == ["bench"]
    assert out["configs"] == {"m": {"bench": ["text", "8f", "16f", "32f"]}}
    assert out["n_responses"] == 20 and out["n_items"] == 5 and out["store_version"] == 1
    assert out["store"].endswith("/s")


def test_version(capsys):
    """``trajaudit --version``: the installed package's version, exit 0."""
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"trajaudit {version('trajaudit')}\n"


def test_items_text_is_the_items_page(store_dir, capsys):
    """Without --json the command prints the Items page as a terminal table: what it lists, one row per item
    (correct out of the grid's configurations, changes, tags), and how to get more; the JSON twin's rows, in order."""
    assert main(["items", "--store", store_dir, "--model", "m", "--sort", "changes", "--desc", "--page-size", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    page = _json(
        capsys,
        ["items", "--store", store_dir, "--model", "m", "--sort", "changes", "--desc", "--page-size", "3", "--json"],
    )
    assert lines[0].startswith("m · ") and "5 items on text -> 8f -> 16f -> 32f" in lines[0]
    assert "sorted by changes, largest first · page 1 of 2" in lines[0]
    assert lines[1].split()[:5] == ["item", "id", "task", "type", "correct"]
    rows = lines[2:5]
    assert [r.split()[0] for r in rows] == [r["item_id"] for r in page["rows"]]
    first = page["rows"][0]
    assert f"{first['n_correct']}/4" in rows[0] and ", ".join(first["tags"]) in rows[0]
    assert lines[5].startswith("--page 2 for the next page")
    assert "disagreement" not in lines[1]  # one model: no disagreement to show


def test_items_text_keeps_file_text_out_of_the_terminal_and_refuses_annotations(tmp_path, capsys):
    """A question's control characters (an escape sequence in a file) print as spaces; --annotations, which adds
    columns to the JSON and CSV exports, is refused in the text page with one line and exit 2."""
    root = tmp_path / "s"
    questions = ["Where\x1b[31m is it?\x07", "What is it?"]
    build_store(root, {"m": {"text": [1, 0], "8f": [0, 1]}}, items=item_rows(2, question=questions))
    assert main(["items", "--store", str(root), "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "Where [31m is it?" in out
    assert main(["items", "--store", str(root), "--model", "m", "--annotations"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["trajaudit items: error: --annotations adds columns to --json or --format csv, not to the text page"]
