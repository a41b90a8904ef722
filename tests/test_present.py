"""``backend.present``: how numbers read (hand values), the table frames and figure series built once, and the
page, the CLI and the report showing the same strings for one scope."""

from __future__ import annotations

import json
import math

import msgspec
import pytest

from backend.cli import main
from backend.contracts.catalog import parsed
from backend.contracts.views import McqaMetrics, Sankey
from backend.present import series, tables
from backend.present.metrics import HEADLINES
from backend.present.text import ci_text, interval, number, p_value, pct, pp, signed_pp

NAN = float("nan")


def test_rates_read_as_percentage_points_with_their_interval():
    assert (pp(0.683), pp(0.0), pp(1), pp(None), pp(NAN)) == ("68.3", "0.0", "100.0", "—", "—")
    assert (pct(0.5), pct(0.12345, 2), pct(None)) == ("50.0%", "12.35%", "—")
    assert (signed_pp(0.015), signed_pp(-0.007), signed_pp(0.0), signed_pp(None)) == ("+1.5", "-0.7", "+0.0", "—")
    assert interval(0.683, [0.617, 0.756]) == "68.3 [61.7, 75.6]"
    assert interval(0.5, None) == interval(0.5, [None, None]) == interval(0.5, [NAN, 0.6]) == "50.0"
    assert interval(None, [0.1, 0.2]) == interval(NAN, None) == "—"
    assert ci_text([0.617, 0.756]) == "95% CI 61.7–75.6" and ci_text(None) is None and ci_text([None, 0.2]) is None
    assert (p_value(0.031234), p_value(1e-5), p_value(1.0), p_value(NAN), p_value(None)) == (
        "0.0312",
        "1e-05",
        "1",
        "—",
        "—",
    )
    assert number("0.5", 100) == 50.0 and number(None) is None and number(NAN) is None and number("x") is None


def _model(best: float, oracle: float, ci: bool) -> dict:
    """A model's metrics as ``views.overview`` gives them (two configurations, one transition)."""
    rates = {
        "oracle_accuracy": oracle,
        "oracle_headroom": oracle - best,
        "visual_confusion_rate": 0.125,
        "text_overwrite_rate": None,
        "text_overwrite_of_text_correct": None,
        "mean_churn": 0.25,
    }
    return {
        "accuracy": {"8f": 0.5, "16f": best},
        "best_fixed": {"config": "16f", "accuracy": best},
        **rates,
        "terminal_regressions": 3,
        "transitions": [
            {"from": "8f", "to": "16f", "rescued": 4, "harmed": 2, "net": 0.05, "churn": 0.15, "mcnemar_p": 0.6875}
        ],
        "ci": {"best_fixed": [0.55, 0.7], "accuracy": {"8f": [0.4, 0.6], "16f": [0.55, 0.7]}} if ci else {},
    }


OVERVIEW = msgspec.convert(  # the metrics as views.overview builds them, validated as it does
    {
        "grid": ["8f", "16f"],
        "n_items": 40,
        "n_excluded": 0,
        "models": {"A<b>": _model(0.625, 0.75, True), "B": _model(0.6, 0.7, False)},
    },
    McqaMetrics,
)


def test_headline_and_transition_tables_on_hand_values():
    t = tables.headline_table(OVERVIEW.models, OVERVIEW.n_items, OVERVIEW.grid)
    assert t.columns == ["Model", "Best config", *(label for _, label in HEADLINES), "Terminal regressions"]
    assert t.rows[0] == ["A<b>", "16f", "62.5 [55.0, 70.0]", "75.0", "12.5", "12.5", "—", "—", "25.0", "3"]
    assert t.rows[1][:3] == ["B", "16f", "60.0"]  # no interval: the value alone
    assert t.values[0][2:5] == [0.625, 0.75, 0.125] and "40 matched items, grid 8f, 16f" in t.caption
    assert t.frame().loc[1, "Oracle"] == "70.0"
    trans = tables.overview_transitions(OVERVIEW.models)
    assert trans.rows[0] == ["A<b>", "8f → 16f", "4", "2", "+5.0", "15.0", "0.688"]
    # within-noise flips left out (the noise toggle): how many, per side, in two more columns
    from backend.contracts.common import QuietTransition

    quiet = QuietTransition(
        from_="8f",
        to="16f",
        rescued=3,
        harmed=2,
        net=0.025,
        churn=0.125,
        mcnemar_p=1.0,
        hidden_rescued=1,
        hidden_harmed=0,
    )
    hidden = tables.transitions_table({"A": [quiet]})
    assert hidden.rows == [["A", "8f → 16f", "3", "2", "+2.5", "12.5", "1", "1", "0"]]
    assert hidden.columns[-2:] == ["Rescued within noise, left out", "Harmed within noise, left out"]
    assert "left out" in hidden.caption and "left out" not in trans.caption


def test_task_table_shows_an_interval_only_where_the_rate_has_one():
    rows = [
        {
            "task_type": "OCR",
            "n": 12,
            "best_fixed": 0.5,
            "best_fixed_lo": 0.25,
            "best_fixed_hi": 0.75,
            "oracle_accuracy": 0.75,
            "oracle_headroom": 0.25,
            "visual_confusion_rate": NAN,
            "visual_confusion_rate_lo": NAN,
            "visual_confusion_rate_hi": NAN,
            "text_overwrite_rate": None,
        }
    ]
    t = tables.task_table(rows, "A")
    assert t.rows == [["OCR", "12", "50.0 [25.0, 75.0]", "75.0", "25.0", "—", "—"]]
    assert t.columns[:2] == ["Task type", "n"] and "By task type, A" in t.caption


def test_curve_and_flow_series_on_hand_values():
    points = series.curve_points(series.Curve.of(OVERVIEW), {"A<b>": "#111111", "B": "#222222"})
    assert [(p["model"], p["x"], p["config"], p["accuracy"]) for p in points] == [
        ("A<b>", 0, "8f", 50.0),
        ("A<b>", 1, "16f", 62.5),
        ("B", 0, "8f", 50.0),
        ("B", 1, "16f", 60.0),
    ]
    assert (points[1]["lo"], points[1]["hi"]) == pytest.approx((55.0, 70.0)) and points[3]["lo"] is None
    bars = series.flow_bars(series.Curve.of(OVERVIEW))
    width = 0.72 / 2  # two models share 90% of 80% of a step
    first = bars[0]  # model A, rescued: left of the slot's centre (0.5) by half a bar
    assert first["kind"] == "rescued" and first["items"] == 4 and bars[1]["items"] == -2
    assert math.isclose(first["x0"], 0.5 - width) and math.isclose(first["x1"], 0.5)
    assert math.isclose(bars[2]["x0"], 0.5) and math.isclose(bars[2]["x1"], 0.5 + width)
    assert (first["net"], first["churn"], first["p"], first["step"]) == (5.0, 15.0, 0.6875, "8f → 16f")


def test_sankey_trace_escapes_only_through_the_given_function():
    view = {
        "model": "A",
        "n_items": 10,
        "configs": ["<8f>", "16f"],
        "nodes": [
            {"id": 0, "config": "<8f>", "state": "correct", "share": 0.6, "count": 6},
            {"id": 1, "config": "<8f>", "state": "wrong", "share": 0.4, "count": 4},
            {"id": 2, "config": "16f", "state": "correct", "share": 0.7, "count": 7},
            {"id": 3, "config": "16f", "state": "wrong", "share": 0.3, "count": 3},
        ],
        "links": [
            {
                "source": 0,
                "target": 2,
                "from": "<8f>",
                "to": "16f",
                "kind": "stable-correct",
                "count": 6,
                "share": 0.6,
                "rescued": 1,
                "harmed": 0,
                "mcnemar_p": 1.0,
            },
            {
                "source": 1,
                "target": 3,
                "from": "<8f>",
                "to": "16f",
                "kind": "harmed",
                "count": 0,
                "share": 0.0,
                "rescued": 1,
                "harmed": 0,
                "mcnemar_p": 1.0,
            },
            {
                "source": 1,
                "target": 2,
                "from": "<8f>",
                "to": "16f",
                "kind": "rescued",
                "count": 1,
                "share": 0.1,
                "rescued": 1,
                "harmed": 0,
                "mcnemar_p": 1.0,
            },
        ],
    }
    pair = {"net": 0.1, "churn": 0.1}  # the pair's numbers, which the trace does not draw
    view = msgspec.convert(view | {"n_excluded": 0, "links": [lk | pair for lk in view["links"]]}, Sankey)
    colours = {
        "correct": "c",
        "wrong": "w",
        "rescued": "r",
        "harmed": "h",
        "stable-correct": "sc",
        "stable-wrong": "sw",
    }
    raw = series.sankey_trace(view, colours, config_labels=True)
    assert raw["link"]["value"] == [6, 1] and raw["link"]["color"] == ["sc", "r"]  # the empty link is left out
    assert raw["link"]["customdata"][1][:3] == ["<8f>", "16f", "rescued (wrong → correct)"]
    assert raw["node"]["label"] == ["<8f> ✓ 6", "<8f> ✗ 4", "16f ✓ 7", "16f ✗ 3"]
    assert raw["node"]["x"] == [0.001, 0.001, 0.999, 0.999] and raw["node"]["y"][0] == pytest.approx(0.02 + 0.45 * 0.6)
    escaped = series.sankey_trace(view, colours, text=lambda t: t.replace("<", "&lt;"))
    assert escaped["link"]["customdata"][0][0] == "&lt;8f>" and escaped["node"]["label"][0] == "✓ 6"


SCOPE = ["--benchmark", "synthetic-videomme", "--models", "synthetic-A-7B,synthetic-B-13B", "--bootstrap", "100"]


@pytest.mark.slow
def test_cli_and_report_show_the_overview_tables_strings(demo_store, tmp_path, capsys):
    """``trajaudit metrics`` (text) and ``trajaudit report --format markdown`` print the very cells the Overview's
    tables show for the numbers of ``metrics --json``."""
    store = ["--store", str(demo_store)]
    assert main(["metrics", *store, *SCOPE, "--json"]) == 0
    out = parsed("metrics", json.loads(capsys.readouterr().out))
    assert main(["metrics", *store, *SCOPE]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the CLI aligns columns; compare word by word
    assert (
        main(["report", *store, *SCOPE, "--gallery", "0", "--format", "markdown", "--out", str(tmp_path / "r.md")]) == 0
    )
    markdown = (tmp_path / "r.md").read_text()
    headline = tables.headline_table(out.models, out.n_items, out.grid)
    for row in headline.rows:
        assert f"| {row[1]} | " + " | ".join(row[2:]) + " |" in markdown  # the report's row, cell for cell
        for cell in row[2:-1]:
            assert cell in text
    for row in tables.overview_transitions(out.models).rows:
        assert " ".join(row[2:7]) in text and "| " + " | ".join(row[2:]) + " |" in markdown
    focus = out.scope.models[0]  # the focus model: the first named
    for row in tables.task_table(out.task_types[focus], focus).rows:
        assert " | ".join(row[1:]) + " |" in markdown


def test_count_agrees_with_the_number():
    """No "1 items" anywhere a count is written with it (the report, the CLI, the pages)."""
    from backend.present.text import count

    assert [count(n, "item") for n in (0, 1, 2, 1024)] == ["0 items", "1 item", "2 items", "1,024 items"]
    assert count(1, "query", "queries") == "1 query" and count(3, "query", "queries") == "3 queries"


def test_frame_marks_say_the_first_row_has_no_row_above():
    """The first strip's frames are neither kept from nor added to a row above it; the next row's are."""
    from backend.present.series import ADDED, DROPPED, FIRST, KEPT, frame_marks

    plan = [  # a frame plan's rows (``backend.scope.inspector.frame_plan``)
        {"config": "8f", "models": ["A"], "indices": [0, 20], "added": None, "dropped": None, "rerun": None},
        {"config": "16f", "models": ["A"], "indices": [0, 10, 30], "added": [10, 30], "dropped": [20], "rerun": None},
    ]
    marks, rows = frame_marks(plan, fps=10.0)
    assert rows == ["8f", "16f"]
    assert [(m["row"], m["frame"], m["x"], m["status"]) for m in marks] == [
        ("8f", 0, 0.0, FIRST),
        ("8f", 20, 2.0, FIRST),
        ("16f", 0, 0.0, KEPT),
        ("16f", 10, 1.0, ADDED),
        ("16f", 30, 3.0, ADDED),
        ("16f", 20, 2.0, DROPPED),
    ]


def test_frame_caption_is_a_time_stamp_not_a_duration():
    from backend.present.series import frame_caption

    assert frame_caption(12, 0.375, added=True) == "new #12 @0.38 s"
    assert frame_caption(12, 0.375, added=False) == "#12 @0.38 s"
    assert frame_caption(12, 0.375, added=True, number=False) == "new @0.38 s"
    assert "+" not in frame_caption(3, 1.0, added=True)


def test_headers_are_plain_words_in_one_style():
    assert tables.header("recovery_rate") == "Recovery rate"
    assert tables.header("n_terminal") == "Terminal regressions"  # a listed field: what it counts
    assert tables.header("slice") == "Slice" and tables.header("on the base") == "On the base"
    for field in ("n_items", "kappa_top", "cost_vs_top_shared", "mean_flip_rate", "pixel_budget"):
        words = tables.header(field)
        assert "_" not in words and words[0].isupper(), words
    # the pages' own tables (Flows, Items) head their columns the same way, keeping a label a page gives as written:
    # it may be data (a model's name heads its column as it is; tests/test_policy_pages.py reads the pages' headers)
    from pages.common.ui import plain_headers

    assert plain_headers(["task_type", "item_id", "model"], {"model": "llava-next-video-7b"}) == {
        "task_type": "Task type",
        "item_id": "Item",
        "model": "llava-next-video-7b",
    }
    assert tables.sentence("share of items") == "Share of items" and tables.sentence("GPU") == "GPU"


def test_missing_cells_read_as_a_dash_and_numbers_keep_their_format():
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame(
        {
            "protocol": ["dense-start", None],
            "n_terminal": [2, 0],
            "recovery_rate": [0.5, None],
            "kappa_top": [np.nan, 0.3125],
            "p": [0.01234, pd.NA],
        }
    )
    shown, texts = tables.dashed(frame, {"recovery_rate": "percent", "kappa_top": "%.3f"})
    assert texts == ["protocol", "recovery_rate", "kappa_top", "p"]  # n_terminal has no gap: it stays numbers
    assert shown["n_terminal"].tolist() == [2, 0] and shown["n_terminal"].dtype.kind == "i"
    assert shown["protocol"].tolist() == ["dense-start", "—"]
    assert shown["recovery_rate"].tolist() == ["50.00%", "—"]
    assert shown["kappa_top"].tolist() == ["—", "0.312"]
    assert shown["p"].tolist() == ["0.01234", "—"]
    assert "None" not in shown.astype(str).to_numpy().ravel().tolist()
    assert (tables.cell_text(np.int64(12345)), tables.cell_text(3.0), tables.cell_text(True)) == ("12,345", "3", "True")
