"""The texts side by side (issue 22.2): the word-level diff on hand-written pairs, the texts of an item
(ranks, re-runs, references), the view on the demo store's open-ended item, and the panel's escaping."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.contracts.inspector import DiffWord, InspectedItem
from backend.scope.textdiff import word_diff
from backend.scope.texts import item_texts, ranks, references
from store.token_f1 import token_f1


def states(words: list[DiffWord]) -> list[tuple[str, str]]:
    return [(w.text, w.state) for w in words]


def test_matched_words_are_token_f1s_overlap_articles_and_punctuation_are_ignored():
    d = word_diff("The cat sat on the mat!", "A cat on a mat")
    assert states(d.answer_words) == [
        ("The", "ignored"),
        ("cat", "matched"),
        ("sat", "unmatched"),
        ("on", "matched"),
        ("the", "ignored"),
        ("mat!", "matched"),
    ]
    assert states(d.reference_words) == [
        ("A", "ignored"),
        ("cat", "matched"),
        ("on", "matched"),
        ("a", "ignored"),
        ("mat", "matched"),
    ]
    # pred tokens: cat sat on mat (4); ref: cat on mat (3); overlap 3: F1 = 2*3 / (4+3)
    assert (d.matched, d.answer_tokens, d.reference_tokens) == (3, 4, 3)
    assert d.token_f1 == pytest.approx(6 / 7)


def test_a_reference_word_matches_once_claimed_left_to_right():
    d = word_diff("dog Dog dog", "dog cat")
    assert states(d.answer_words) == [("dog", "matched"), ("Dog", "unmatched"), ("dog", "unmatched")]
    assert states(d.reference_words) == [("dog", "matched"), ("cat", "unmatched")]
    assert d.token_f1 == pytest.approx(2 * 1 / (3 + 2))


def test_the_best_of_several_references_is_shown_the_first_of_equals():
    d = word_diff("red ball rolls", ["blue box", "red ball", "ball red"])
    assert d.reference_index == 1 and d.token_f1 == pytest.approx(0.8)
    assert states(d.reference_words) == [("red", "matched"), ("ball", "matched")]


def test_empty_sides():
    assert word_diff(None, "a b").token_f1 == 0.0 and word_diff(None, "a b").answer_words == []
    both = word_diff("", [])
    assert both.token_f1 == 1.0 and both.reference_words == []
    only_article = word_diff("The.", "the")  # nothing counted on either side: both empty, as Token-F1 says
    assert states(only_article.answer_words) == [("The.", "ignored")] and only_article.token_f1 == 1.0


WORDS = st.lists(st.sampled_from(["the", "A", "cat", "Cat.", "on", "mat", "don't", "dont", "!", "an", "x-y", "xy"]))


@given(WORDS, st.lists(WORDS, max_size=3))
def test_the_marks_agree_with_token_f1(pred, refs):
    prediction, references_ = " ".join(pred), [" ".join(r) for r in refs]
    d = word_diff(prediction, references_)
    assert d.token_f1 == token_f1(prediction, references_)
    assert [w.text for w in d.answer_words] == prediction.split()
    if d.answer_tokens and d.reference_tokens:
        assert d.token_f1 == pytest.approx(2 * d.matched / (d.answer_tokens + d.reference_tokens))
    assert d.matched == sum(w.state == "matched" for w in d.reference_words)


def _rows(scores: dict[tuple[str, str], float | None], live: bool = False, **fields) -> list[dict]:
    """Response records as ``item_detail`` reads them (``fields`` on every one)."""
    return [
        {
            "model": m,
            "config": c,
            "run": "rerun-1" if live else "main",
            "live_rerun": live,
            "answer": None,
            "raw_output": f"answer at {c}",
            "score": s,
            "seq": 2 if live else 1,
        }
        | fields
        for (m, c), s in scores.items()
    ]


def test_best_and_worst_per_model_every_tied_row_and_none_when_all_equal():
    logged = _rows(
        {
            ("m", "8f"): 0.2,
            ("m", "16f"): 0.9,
            ("m", "32f"): 0.2,
            ("m", "64f"): None,
            ("flat", "8f"): 0.5,
            ("flat", "16f"): 0.5,
        }
    )
    assert ranks(logged) == ["worst", "best", "worst", None, None, None]


def an_item(**fields) -> InspectedItem:
    """An item's metadata as ``item_detail`` reads it (options: none unless given)."""
    return InspectedItem(**({"benchmark": "bench", "item_id": "i0", "options": []} | fields))


def test_item_texts_rows_and_references():
    item = an_item(answer_type="open", target="answer at 16f", references=json.dumps(["answer at 16f", "other"]))
    responses = _rows({("m", "8f"): 0.4, ("m", "16f"): 1.0}) + _rows({("m", "8f"): 1.0}, live=True)
    out = item_texts(item, responses)
    assert out is not None and out.references == ["answer at 16f", "other"]
    got = [(r.config, r.run, r.rank, r.score, r.diff.matched) for r in out.rows]
    # "answer at 8f" vs "answer at 16f": answer, at match (2 of 3 tokens each); the re-run is never ranked
    assert got == [("8f", "main", "worst", 0.4, 2), ("16f", "main", "best", 1.0, 3), ("8f", "rerun-1", None, 1.0, 2)]
    assert item_texts(an_item(answer_type="mcqa", options=["A. x"]), responses) is None
    assert references(an_item(target="only the target")) == ["only the target"]
    assert references(an_item(references="not json", target="t")) == ["not json"]


def test_the_view_on_the_demo_stores_open_ended_item(demo_store):
    from backend import views
    from backend.scope.inspector import inspect_record, item_detail
    from store.store import Store

    store = Store(demo_store)
    open_items = store.query("SELECT benchmark, item_id FROM items WHERE answer_type = 'open' ORDER BY item_id")
    assert len(open_items), "the demo store has open-ended items"
    bench, item_id = open_items.iloc[0]
    detail = item_detail(store, bench, item_id)
    texts = views.texts_view(detail)
    assert texts is not None
    logged = {(r["model"], r["config"]) for r in detail.responses if not r["live_rerun"]}
    assert len(texts.rows) == len(logged)
    # The demo writes predictions whose Token-F1 is the stored score: the diff recomputes it from the texts.
    for row in texts.rows:
        assert row.diff.token_f1 == pytest.approx(row.score, abs=1e-9)
    for model in {r.model for r in texts.rows}:
        mine = [r for r in texts.rows if r.model == model]
        best = max(r.score for r in mine)
        assert {r.config for r in mine if r.rank == "best"} == {r.config for r in mine if r.score == best}
    assert inspect_record(store, bench, item_id, demo_store / "videos").texts == texts
    mcqa = store.query("SELECT benchmark, item_id FROM items WHERE answer_type = 'mcqa' LIMIT 1").iloc[0]
    assert inspect_record(store, mcqa.benchmark, mcqa.item_id, demo_store / "videos").texts is None


def test_the_panel_shows_answers_as_text_never_markup():
    from pages.common.texts_panel import texts_table

    hostile = "<script>alert(1)</script> **bold** [x](http://attacker.invalid) red <img src=x>"
    rows = _rows({("m<i>", "8f"): 0.5}, raw_output=hostile)
    texts = item_texts(an_item(answer_type="open", target="red <b>ball</b>"), rows)
    assert texts is not None
    page = texts_table(texts, ["m<i>"], {"m<i>": "#1b9e77"})
    assert "<script>" not in page and "<img" not in page and "<b>ball" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;ball&lt;/b&gt;" in page
    assert '<span class="hit">red</span>' in page  # the matched word, marked
