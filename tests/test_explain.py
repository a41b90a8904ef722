"""``trajaudit explain``: planted enrichments rank first; p, q and intervals equal scipy's and hand computations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.stats import fisher_exact

from backend.analysis import explain
from backend.cli import main
from backend.contracts.base import to_json
from backend.scope.answer_cells import AnswerCells, load_answer_cells
from backend.scope.loader import load_matrix
from backend.scope.matrix import ITEM_COLUMNS, Matrix
from store.store import Store
from tests.matrix_fixtures import item_rows, response_rows

GRID = ["text", "8f", "32f"]


def planted(n: int = 1200, seed: int = 0) -> tuple[Matrix, np.ndarray]:
    """Items with random metadata; the harmed flow 8f -> 32f is planted in two places.

    Counting items are harmed 60% of the time (a single-attribute slice), and long Sports items 70%
    (a pair: neither long nor Sports alone is much enriched); everything else 5%.
    """
    rng = np.random.default_rng(seed)
    items = pd.DataFrame({c: None for c in ITEM_COLUMNS}, index=range(n))
    items["benchmark"], items["item_id"] = "b", [f"q{k}" for k in range(n)]
    items["task_type"] = rng.choice(
        ["Counting", "OCR", "Action", "Object", "Spatial", "Temporal"], n, p=[0.1] + [0.18] * 5
    )
    items["duration"] = rng.choice(["short", "medium", "long"], n)
    items["domain"] = rng.choice(["Sports", "Knowledge", "Life", "Film"], n)
    items["target"], items["answer_type"] = rng.choice(list("ABCD"), n), "mcqa"
    items["question"] = "how many"
    p = np.where(items["task_type"] == "Counting", 0.6, 0.05)
    p = np.where((items["duration"] == "long") & (items["domain"] == "Sports"), 0.7, p)
    harmed = rng.random(n) < p
    correct = np.ones((1, n, 3), dtype=np.int8)
    correct[0, harmed, 2] = 0
    nan = np.full(correct.shape, np.nan, dtype=np.float32)
    return Matrix(["m"], GRID, pa.Table.from_pandas(items, preserve_index=False), correct, nan, nan.copy()), harmed


def cells_for(matrix: Matrix, kind: np.ndarray | None = None) -> AnswerCells:
    letter = np.repeat(explain.target_letters(matrix.items["target"])[:, None], len(matrix.grid), axis=1).astype(
        np.int8
    )
    return AnswerCells(letter, np.zeros(letter.shape, np.int8) if kind is None else kind)


def run_report(matrix: Matrix, **kwargs) -> dict:
    attributes = explain.attribute_table(matrix.items)
    target = explain.Target("flow", ("8f", "32f", "harmed"))
    return explain.report(matrix, "m", target, attributes, cells_for(matrix), top=None, **kwargs)


def test_benjamini_hochberg_equals_a_hand_computation():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005 (rank 1), 0.01 (2), 0.03 (3), 0.04 (4): p m / rank = 0.02, 0.02, 0.04, 0.04 (monotone already)
    assert explain.benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # two more tests at p = 1: m = 6, so 0.005*6, 0.01*6/2, 0.03*6/3, 0.04*6/4 -> 0.03, 0.03, 0.06, 0.06
    assert explain.benjamini_hochberg(p, 6) == pytest.approx([0.03, 0.06, 0.06, 0.03])
    # a later smaller ratio carries down: 0.02*2/1 = 0.04 > 0.021*2/2 = 0.021
    assert explain.benjamini_hochberg(np.array([0.02, 0.021])) == pytest.approx([0.021, 0.021])


def test_newcombe_interval_matches_newcombes_worked_example():
    """Newcombe (1998), Stat Med 17:873, example (a): 56/70 - 48/80, method 10: 0.0524 to 0.3339."""
    lo, hi = explain.newcombe_interval(56, 70, 48, 80)
    assert (float(lo), float(hi)) == pytest.approx((0.0524, 0.3339), abs=5e-5)


def test_planted_single_slice_ranks_first_with_scipys_fisher_p():
    matrix, harmed = planted()
    out = run_report(matrix)
    top = out.slices[0]
    assert top.label == "task type = Counting"  # plain names, not field names
    tt = matrix.items["task_type"].to_numpy() == "Counting"
    a, n_slice = int((tt & harmed).sum()), int(tt.sum())
    b, n_rest = int((~tt & harmed).sum()), int((~tt).sum())
    assert (top.n_slice, top.n_selected) == (n_slice, a)
    assert top.p == fisher_exact([[a, n_slice - a], [b, n_rest - b]])[1]
    assert top.rate == pytest.approx(a / n_slice) and top.base_rate == pytest.approx(harmed.mean())
    assert top.lift == pytest.approx((a / n_slice) / harmed.mean())
    assert top.diff == pytest.approx(a / n_slice - b / n_rest)
    lo, hi = explain.newcombe_interval(a, n_slice, b, n_rest)
    assert top.diff_ci == pytest.approx([float(lo), float(hi)])
    assert top.item_ids == matrix.items["item_id"][tt & harmed].tolist()


def test_planted_pair_ranks_first_among_pairs_and_q_is_one_bh_family():
    matrix, harmed = planted()
    out = run_report(matrix)
    assert out.pairs, "sliceline proposed no pair"
    assert set(zip(out.pairs[0].attributes, out.pairs[0].values, strict=True)) == {
        ("duration", "long"),
        ("domain", "Sports"),
    }
    # q: BH by hand over every reported p, padded with p = 1 up to n_tests
    rows = out.slices + out.pairs
    p = np.array([r.p for r in rows] + [1.0] * (out.n_tests - len(rows)))
    order = np.argsort(p, kind="mergesort")
    ratio = p[order] * len(p) / np.arange(1, len(p) + 1)
    q_hand = np.empty(len(p))
    q_hand[order] = np.minimum(1, [ratio[k:].min() for k in range(len(p))])
    assert [r.q for r in rows] == pytest.approx(q_hand[: len(rows)].tolist())
    # the family: every single value plus every value pair with at least min_size items
    items = matrix.items
    n_single = sum(items[c].nunique() for c in ("task_type", "duration", "domain", "target"))
    cols = ["task_type", "duration", "domain", "target"]
    n_pairs = sum(
        int((items.groupby([a, b]).size() >= out.min_size).sum()) for i, a in enumerate(cols) for b in cols[i + 1 :]
    )
    assert out.n_tests == n_single + n_pairs


def test_the_verdict_counts_the_slices_under_q_005_and_only_they_are_coloured():
    from backend.present import charts_items
    from backend.present.palette import NEUTRAL

    matrix, harmed = planted()
    out = run_report(matrix)
    rows = out.slices + out.pairs  # top=None: every slice tested that has a row (the rest enter at p = 1)
    surviving = sum(r.q < 0.05 for r in rows)
    assert surviving >= 2  # the planted slice and pair
    assert to_json(out.verdict) == {
        "q_level": 0.05,
        "n_surviving": surviving,
        "n_tests": out.n_tests,
        "text": f"{surviving} slices survive Benjamini-Hochberg at q < 0.05 ({out.n_tests} tested)",
    }
    assert [r.survives for r in rows] == [r.q < 0.05 for r in rows]
    bars = charts_items.explain_lifts(out, top=len(out.slices))["data"]["values"]
    drawn = out.slices + out.pairs[: len(out.slices) // 3]  # best first, from the top
    assert [b["colour"] == NEUTRAL for b in bars] == [not r.survives for r in drawn]
    assert [b["opacity"] for b in bars] == [0.35 if r.small else 0.9 for r in drawn]
    assert charts_items.explain_lifts(out)["title"]["subtitle"] == out.verdict.text


def test_with_nothing_planted_no_slice_survives_and_every_bar_is_grey():
    """The same items harmed at one rate everywhere: slices with lift over 1 by chance, none past BH, no colour."""
    from backend.present import charts_items
    from backend.present.palette import NEUTRAL

    matrix, _ = planted()
    rng = np.random.default_rng(7)
    matrix.correct[0, :, 2] = (rng.random(matrix.n_items) >= 0.1).astype(np.int8)
    out = run_report(matrix)
    assert out.verdict.n_surviving == 0 and not any(r.survives for r in out.slices + out.pairs)
    assert out.verdict.text == f"No slice survives Benjamini-Hochberg at q < 0.05 ({out.n_tests} tested)"
    assert any((r.lift or 0) > 1 for r in out.slices)  # what the chart once painted as enriched
    assert {b["colour"] for b in charts_items.explain_lifts(out)["data"]["values"]} == {NEUTRAL}


def test_small_slices_are_marked_and_never_ranked_above_supported_ones():
    matrix, harmed = planted()
    items = matrix.items
    first = np.flatnonzero(harmed)[:5]
    items.loc[first, "sub_category"] = "tiny"  # 5 items, all harmed: the highest rate of all
    out = run_report(matrix)
    small = [k for k, s in enumerate(out.slices) if s.small]
    assert small and min(small) > max(k for k, s in enumerate(out.slices) if not s.small)
    tiny = next(s for s in out.slices if s.values == ["tiny"])
    assert tiny.small and tiny.rate == 1.0


def test_exclude_unparsed_drops_items_with_unreadable_raw_outputs():
    matrix, harmed = planted()
    kind = np.zeros((matrix.n_items, 3), np.int8)
    hit = np.flatnonzero(harmed)[:7]
    kind[hit[:3], 2], kind[hit[3:5], 1], kind[hit[5:], 0] = 1, 2, 3  # empty, degenerate at 32f; unparsed at text
    attributes = explain.attribute_table(matrix.items)
    target = explain.Target("flow", ("8f", "32f", "harmed"))
    kept = explain.report(matrix, "m", target, attributes, AnswerCells(cells_for(matrix).letter, kind))
    assert to_json(kept.parser) == {
        "configs": ["8f", "32f"],
        "empty": 3,
        "degenerate": 2,
        "unparsed": 0,
        "affected": 5,
        "excluded": False,
    }
    dropped = explain.report(
        matrix, "m", target, attributes, AnswerCells(cells_for(matrix).letter, kind), exclude_unparsed=True
    )
    assert dropped.n_selected == kept.n_selected - 5


def test_letter_prior_and_answer_moves_by_hand():
    answer = np.array([[0, 0], [0, 1], [1, -1], [2, 0], [0, 0]])  # A A / A B / B - / C A / A A
    target = np.array([0, 1, 1, 2, 3])
    prior = explain.letter_prior(answer, target, 4)
    assert prior["chosen"].tolist() == [[3, 1, 1, 0], [3, 1, 0, 0]] and prior["no_answer"].tolist() == [0, 1]
    assert prior["targets"].tolist() == [1, 2, 1, 1]
    from scipy.stats import chi2_contingency

    assert prior["p"][0] == pytest.approx(chi2_contingency([[3, 1, 1, 0], [1, 2, 1, 1]], correction=False)[1])
    moved = explain.moved_to(answer[:, 0], answer[:, 1], target, 4)
    assert moved["to"].tolist() == [1, 3, 1, 0, 0]  # no answer, A, B, C, D
    assert (moved["to_target"], moved["to_other_letter"], moved["to_no_answer"], moved["same_letter"]) == (2, 2, 1, 2)


def test_agreement_against_hand_counts_and_sklearns_kappa():
    from sklearn.metrics import cohen_kappa_score

    a = np.array([1, 1, 1, 0, 0, 0, 0, 0, 1, 0], bool)
    b = np.array([1, 1, 0, 1, 0, 0, 0, 0, 1, 0], bool)
    out = explain.agreement({"x": a, "y": b})
    pair = out["pairs"][0]
    assert (pair.n_a, pair.n_b, pair.overlap) == (4, 4, 3)
    assert pair.expected == pytest.approx(4 * 4 / 10) and pair.jaccard == pytest.approx(3 / 5)
    assert pair.kappa == pytest.approx(cohen_kappa_score(a, b))
    from scipy.stats import hypergeom

    assert pair.p == pytest.approx(hypergeom.sf(2, 10, 4, 4))
    assert out["every"].tolist() == (a & b).tolist()


def test_raw_output_kinds_are_read_from_the_store(tmp_path, monkeypatch):
    ys = {"m": {"text": [1, 0, 0, 0, 1], "8f": [1, 1, 0, 1, 0]}}
    raw = {"text": ["A", "", "BBBB", "it is unclear", " A "], "8f": ["A", "A", "  ", "B", "C"]}
    answer = {"text": ["A", None, None, None, "A"], "8f": ["A", "A", None, "B", "C"]}
    rows = response_rows(ys)
    rows["raw_output"] = [raw[c][int(i[1:])] for c, i in zip(rows["config"], rows["item_id"], strict=True)]
    rows["answer"] = [answer[c][int(i[1:])] for c, i in zip(rows["config"], rows["item_id"], strict=True)]
    store = Store(tmp_path / "s")
    store.append({"responses": rows, "items": item_rows(5, target=list("AABBA"), answer_type=["mcqa"] * 5)})
    matrix = load_matrix(store, ["m"], grid=["text", "8f"])
    cells = load_answer_cells(store, matrix, "m")
    order = matrix.items["item_id"].tolist()
    kinds = {i: cells.kind[k].tolist() for k, i in enumerate(order)}
    # 0 parsed, 1 empty, 2 degenerate, 3 unparsed
    assert kinds == {"i0": [0, 0], "i1": [1, 0], "i2": [2, 1], "i3": [3, 0], "i4": [0, 0]}
    assert cells.letter[order.index("i4")].tolist() == [0, 2]  # "A", "C"
    assert cells.letter[order.index("i2")].tolist() == [-1, -1]
    from backend.scope import answer_cells

    monkeypatch.setattr(answer_cells, "CACHE_MIN_CELLS", 0)  # the cached path: written once, then read back
    for _ in range(2):
        again = load_answer_cells(store, matrix, "m")
        assert again.kind.tolist() == cells.kind.tolist() and again.letter.tolist() == cells.letter.tolist()
    assert len(list((store.root / ".cache").glob("answers-*"))) == 1


def test_cli_explains_a_flow_of_the_demo_store_and_rejects_bad_input(demo_store, capsys, tmp_path):
    s = ["--store", str(demo_store)]
    assert (
        main(
            [
                "explain",
                *s,
                "--model",
                "synthetic-A-7B",
                "--models",
                "synthetic-A-7B,synthetic-B-13B",
                "--flow",
                "8f:64f:harmed",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "flows",
                *s,
                "--model",
                "synthetic-A-7B",
                "--models",
                "synthetic-A-7B,synthetic-B-13B",
                "--from",
                "8f",
                "--to",
                "64f",
                "--kind",
                "harmed",
                "--json",
            ]
        )
        == 0
    )
    assert out["target"]["kind"] == "flow" and out["n_selected"] == json.loads(capsys.readouterr().out)["n_flow_items"]
    assert out["agreement"]["models"] == ["synthetic-A-7B", "synthetic-B-13B"]
    assert out["answers"]["moved"]["to_target"] == 0  # harmed: wrong at 64f, so never the target there
    bad = tmp_path / "ids.txt"
    bad.write_text("no-such-item\n")
    for argv, message in (
        (["--flow", "8f:64f"], "--flow takes FROM:TO:KIND"),
        (["--flow", "8f:9f:harmed"], "config '9f' is not in the grid"),
        (["--items", str(tmp_path / "missing.txt")], "--items: cannot read"),
        (["--items", str(bad)], "none of the 1 listed items is in the scope"),
        (["--tag", "confused", "--min-size", "0"], "--min-size must be >= 1"),
    ):
        assert main(["explain", *s, "--model", "synthetic-A-7B", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err


def test_attribute_codes_bin_and_mark_missing_values():
    bins = explain._binned(np.array([10, 50, 51, 100, 101, 250, np.nan]), explain.CHAR_BINS, explain.CHAR_LABELS)
    assert bins[0].tolist() == [0, 0, 1, 1, 2, 3, 4] and bins[1][-1] == explain.NONE
    codes, values = explain._option_counts(pd.Series(['["a", "b"]', '["a", "b", "c"]', None, "not json"]))
    assert (codes.tolist(), values) == ([0, 1, 2, 2], ["2", "3", explain.NONE])
    codes, values = explain._factor(pd.Series(["b", "a", None, "a"]), keep=np.array([True, True, True, False]))
    assert (codes.tolist(), values) == ([1, 0, 2, 2], ["a", "b", explain.NONE])


def test_a_sampled_pair_search_reports_exact_numbers(monkeypatch):
    """Over PAIR_SAMPLE items sliceline searches a sample; the pairs it proposes are still scored on every item."""
    matrix, harmed = planted()
    monkeypatch.setattr(explain, "PAIR_SAMPLE", 600)
    out = run_report(matrix)
    assert "a seeded sample of 600 of the 1,200 items" in out.pair_search
    pair = out.pairs[0]
    items = matrix.items
    mask = np.logical_and.reduce([items[a].to_numpy() == v for a, v in zip(pair.attributes, pair.values, strict=True)])
    assert (pair.n_slice, pair.n_selected) == (int(mask.sum()), int((mask & harmed).sum()))
    assert set(pair.values) == {"long", "Sports"}


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_overview_panel_draws_what_its_cli_twin_prints(demo_store, monkeypatch, capsys):
    """The Overview's panel (per tag) and its CLI twin: the same JSON, under a sidebar tag and task filter too."""
    import shlex
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from backend.cli.common import print_json
    from pages.common import explain_panel, ui

    monkeypatch.setenv("TRAJAUDIT_STORE", str(demo_store))
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.query_params.update(
        bench="synthetic-videomme",
        models="synthetic-A-7B,synthetic-B-13B",
        tag="confused",
        task="Counting Problem,OCR Problems",
    )
    at.run()
    at.session_state["explain-tags"] = True  # the panel (its tag's choice too) draws once its expander is opened
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    (line,) = [c.value for c in at.code if c.value.startswith("trajaudit explain")]
    scope = explain_panel.explain_scope(at.session_state["view"])
    capsys.readouterr()
    print_json(explain_panel.report(scope, "synthetic-A-7B", explain.Target("tag", ("confused",)), False))
    drawn = json.loads(capsys.readouterr().out)
    assert main(shlex.split(line)[1:]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == drawn
    assert printed["scope"]["tag"] is None and printed["scope"]["item_filter"]["task_types"] == [
        "Counting Problem",
        "OCR Problems",
    ]
    assert printed["agreement"]["models"] == ["synthetic-A-7B", "synthetic-B-13B"]
    verdict = ui.escape_md(printed["verdict"]["text"])
    assert any(verdict in m.value for m in at.markdown)  # the verdict line, above the chart


def test_cli_explains_listed_items_from_a_text_file_or_a_csv(demo_store, capsys, tmp_path):
    """Plain ids match in every benchmark of the scope; BENCHMARK/ITEM_ID (a CSV with both columns) only there."""
    s = ["--store", str(demo_store), "--model", "synthetic-A-7B"]
    assert main(["items", "--store", str(demo_store), "--model", "synthetic-A-7B", "--format", "json"]) == 0
    every = json.loads(capsys.readouterr().out)
    rows = [r for r in every if r["benchmark"] == every[0]["benchmark"]][:5]
    listed = tmp_path / "ids.txt"
    listed.write_text("\n".join(r["item_id"] for r in rows) + "\nnot-an-item\n")
    table = tmp_path / "ids.csv"
    table.write_text("benchmark,item_id\n" + "".join(f"{r['benchmark']},{r['item_id']}\n" for r in rows))
    plain = sum(r["item_id"] in {x["item_id"] for x in rows} for r in every)
    for path, extra, expected in (
        (listed, ["--benchmark", rows[0]["benchmark"]], 5),
        (listed, [], plain),
        (table, [], 5),
    ):
        assert main(["explain", *s, *extra, "--items", str(path), "--no-pairs", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["target"]["kind"] == "items" and out["n_selected"] == expected and out["agreement"] is None
        assert sum(sl["n_selected"] for sl in out["slices"] if sl["attributes"] == ["task_type"]) == expected


def test_linked_videos_frame_rate_is_an_attribute_counted_by_hand(demo_store, tmp_path, capsys):
    """Issue 21: where a video is linked, its probed frame rate is a slice attribute (and its probed
    duration stands in where the item records none); the slice sizes equal a hand count of the links."""
    import shutil

    from backend.videos import catalog
    from store.store import Store

    root = tmp_path / "store"
    shutil.copytree(demo_store, root, ignore=shutil.ignore_patterns(".cache"))
    store = Store(root)
    items = store.query("SELECT item_id FROM items WHERE benchmark = 'synthetic-videomme' ORDER BY item_id")["item_id"]
    linked = items.iloc[: len(items) - 3]  # three items stay unlinked: "(none)"
    fps = np.where(np.arange(len(linked)) % 3 == 0, 25.0, 29.97)
    rows = pd.DataFrame(
        {
            "item_id": linked,
            "path": "clip.mp4",
            "status": "linked",
            "n_frames": 300,
            "fps": fps,
            "duration_s": 10.0,
            "layout": "paths",
        }
    )
    catalog.replace(store, "synthetic-videomme", rows)
    capsys.readouterr()
    assert (
        main(
            [
                "explain",
                "--store",
                str(root),
                "--model",
                "synthetic-A-7B",
                "--benchmark",
                "synthetic-videomme",
                "--tag",
                "confused",
                "--top",
                "1000",
                "--min-size",
                "1",
                "--no-pairs",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert "video_fps" in out["attributes"]
    got = {s["values"][0]: s["n_slice"] for s in out["slices"] if s["attributes"] == ["video_fps"]}
    matched = set(store.query("SELECT DISTINCT item_id FROM responses WHERE model = 'synthetic-A-7B'")["item_id"])
    in_scope = linked[linked.isin(matched)]
    hand = {
        "20-26 fps": int((fps[linked.isin(matched)] == 25.0).sum()),
        "26-31 fps": int((fps[linked.isin(matched)] == 29.97).sum()),
    }
    assert {k: v for k, v in got.items() if k != explain.NONE} == hand and sum(hand.values()) == len(in_scope)


@pytest.fixture
def minimal_store(tmp_path) -> Path:
    """Issue 34 item 6: a long table of the required columns alone (docs/formats.md): two models, two
    configurations, 40 items, no item field, no raw output."""
    rng = np.random.default_rng(0)
    rows = pd.DataFrame(
        [
            {"model": m, "benchmark": "b", "item_id": f"q{i:02d}", "config": c, "correct": int(rng.integers(0, 2))}
            for m in ("m1", "m2")
            for i in range(40)
            for c in ("8f", "16f")
        ]
    )
    (tmp_path / "in").mkdir()
    rows.to_csv(tmp_path / "in" / "minimal.csv", index=False)
    root = tmp_path / "store"
    assert main(["ingest", str(tmp_path / "in" / "minimal.csv"), "--store", str(root)]) == 0
    return root


def test_explain_on_a_minimal_long_table_reports_what_it_can_and_says_what_it_cannot(minimal_store, capsys):
    capsys.readouterr()
    argv = ["explain", "--store", str(minimal_store), "--model", "m1", "--models", "m1,m2", "--flow", "8f:16f:harmed"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    harmed = Store(minimal_store).query(
        """SELECT count(*) AS n FROM responses a JOIN responses b USING (model, benchmark, item_id)
           WHERE model = 'm1' AND a.config = '8f' AND b.config = '16f' AND a.correct = 1 AND b.correct = 0"""
    )
    assert out["n_selected"] == int(harmed["n"].iloc[0]) > 0 and out["n_scope"] == 40
    assert out["slices"] == [] and out["attributes"] == []
    assert any(note.startswith("no item attributes to slice by") for note in out["untested"]), out["untested"]
    assert any(note.startswith("no answer letters stored") for note in out["untested"]), out["untested"]
    assert out["agreement"]["models"] == ["m1", "m2"]  # what it can test, it tests
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "not tested: no item attributes to slice by" in printed and "Traceback" not in printed


def test_the_flows_panel_on_a_minimal_long_table_shows_a_notice_not_a_traceback(minimal_store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRAJAUDIT_STORE", str(minimal_store))
    monkeypatch.delenv("TRAJAUDIT_STORES", raising=False)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.query_params.update({"bench": "b", "models": "m1,m2", "from": "8f", "to": "16f", "kind": "harmed"})
    at.run()
    at.switch_page("pages/flows.py").run()
    at.session_state["explain-flow-8f-16f-harmed"] = True  # the panel draws once its expander is opened
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert any("no item attributes to slice by" in i.value for i in at.info), [i.value for i in at.info]


def test_the_report_of_a_minimal_long_table_explains_its_harmed_flow_with_what_it_cannot_test(
    minimal_store, tmp_path, capsys
):
    out = tmp_path / "report.html"
    assert main(["report", "--store", str(minimal_store), "--models", "m1,m2", "--out", str(out)]) == 0
    html = out.read_text()
    assert '<section id="explain"><h2>Why these items? 8f → 16f harmed' in html
    assert "Not tested: no item attributes to slice by" in html
