"""Budget predictor: the target, folds grouped by video, the frontier table's rows, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from backend import views
from backend.analysis import predictor
from backend.cli import main
from store.errors import UserError
from tests import policy_fixtures as fx

LADDER = ["8f", "16f", "32f"]
N = 48


@pytest.fixture
def pred_store(store):
    """48 items on 12 videos (4 questions each) plus nothing else; 'colour' questions are right at 8f,
    'count' questions only at 32f, every sixth item never."""
    rng = np.random.default_rng(0)
    kind = np.arange(N) % 2  # 0 = colour, 1 = count
    correct = np.zeros((N, 3), dtype=int)
    correct[kind == 0] = [1, 1, 1]
    correct[kind == 1] = [0, 0, 1]
    correct[np.arange(N) % 6 == 5] = 0
    conf = rng.uniform(0.3, 1.0, (N, 3))
    words = np.where(kind == 0, "what colour is the car", "how many people count them")
    item_rows = fx.items(
        N,
        question=list(words),
        options=['["A. one", "B. two"]'] * N,
        task_type=list(np.where(kind == 0, "Attribute", "Counting")),
        video=[f"v{i // 4}" for i in range(N)],
    )
    return fx.build(store, fx.responses("m", LADDER, correct, conf), item_rows=item_rows)


def test_sufficient_budget_is_the_cheapest_correct_rung_else_the_top():
    y = np.array([[0, 1, 1], [0, 0, 0], [1, 0, 0], [0, 0, 1]])
    assert predictor.sufficient_budget(y).tolist() == [1, 2, 0, 2]


def test_video_groups_of_a_long_id_cost_its_length_not_width_times_items():
    """Issue 34 item 5: a fixed-width ('<U') group array gave each of the items the longest id's width."""
    items = pd.DataFrame({"benchmark": "b", "item_id": [f"q{i}" for i in range(10_000)], "video": None})
    items.loc[0, "item_id"] = "q" * 1_024
    groups = predictor.video_groups(items)
    assert groups.dtype == object and groups[0] == "item:b/" + "q" * 1_024 and groups[1] == "item:b/q1"
    assert predictor.grouped_folds(groups, 4).shape == (10_000,)


def test_folds_never_share_a_video():
    items = pd.DataFrame(
        {
            "benchmark": "b",
            "item_id": [f"q{i}" for i in range(30)],
            "video": [f"v{i % 7}" if i < 25 else None for i in range(30)],
        }
    )
    groups = predictor.video_groups(items)
    assert len(np.unique(groups)) == 7 + 5  # five video-less items are their own groups
    fold = predictor.grouped_folds(groups, 4, seed=1)
    videos = items["video"].to_numpy()
    for v in set(videos[:25]):
        assert len(set(fold[videos == v])) == 1, v
    assert set(fold) == {0, 1, 2, 3}
    with pytest.raises(UserError, match="needs at least 20 videos"):
        predictor.grouped_folds(groups, 20)


@pytest.mark.parametrize("seed", [0, 3])
def test_folds_are_group_k_folds_of_the_video_names(seed):
    """The groups enter ``GroupKFold`` as integer codes (fast), and the folds are the ones it gives their names."""
    from sklearn.model_selection import GroupKFold

    rng = np.random.default_rng(seed)
    groups = np.asarray([f"video:b/v{rng.integers(40):03d}" for _ in range(300)] + ["item:b/q1"], dtype=object)
    expected = np.empty(len(groups), dtype=np.int16)
    splits = GroupKFold(n_splits=5, shuffle=True, random_state=seed).split(np.zeros(len(groups)), groups=groups)
    for k, (_, test) in enumerate(splits):
        expected[test] = k
    assert predictor.grouped_folds(groups, 5, seed).tolist() == expected.tolist()


def _corpus(n: int, seed: int) -> list[list[str]]:
    """Texts over a small vocabulary with many equal term frequencies (``max_features``' ties), as cut terms."""
    rng = np.random.default_rng(seed)
    words = [f"w{k:02d}" for k in range(60)]
    return [list(rng.choice(words, size=rng.integers(0, 9))) for _ in range(n)]


@pytest.mark.parametrize(("max_features", "seed"), [(None, 0), (25, 0), (25, 1), (7, 2)])
def test_fold_tfidf_is_the_vectorizer_fitted_on_the_training_fold(max_features, seed):
    """Counting once and keeping the fold's terms gives TfidfVectorizer's vocabulary, idf and matrices (the training
    matrix to the last bit of a row's norm: the order of a row's terms differs, ``fold_tfidf``)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from backend.analysis.fold_tfidf import FoldTfidf, count_terms

    cut = _corpus(400, seed)
    train = np.sort(np.random.default_rng(seed).choice(400, 300, replace=False))
    test = np.setdiff1d(np.arange(400), train)
    ours = FoldTfidf(count_terms(cut), min_df=2, max_features=max_features, sublinear_tf=True)
    theirs = TfidfVectorizer(analyzer=lambda terms: terms, min_df=2, max_features=max_features, sublinear_tf=True)
    fitted, expected = ours.fit_transform(train), theirs.fit_transform([cut[i] for i in train])
    names = np.array(sorted({t for terms in cut for t in terms}))
    assert names[ours.kept_].tolist() == theirs.get_feature_names_out().tolist()
    assert np.array_equal(ours.tfidf_.idf_, theirs.idf_)
    assert (fitted != 0).toarray().tolist() == (expected != 0).toarray().tolist()
    assert np.abs(fitted - expected).max() <= 1e-15
    assert np.array_equal(ours.transform(test).toarray(), theirs.transform([cut[i] for i in test]).toarray())


def test_fold_tfidf_without_a_term_in_two_training_items_says_so_as_the_vectorizer_does():
    from backend.analysis.fold_tfidf import NO_TERMS, FoldTfidf, count_terms

    with pytest.raises(ValueError, match=NO_TERMS):
        FoldTfidf(count_terms([["a"], ["b"], ["a"]]), min_df=2).fit(np.array([0, 1]))
    empty = count_terms([[], []])
    assert empty.matrix.shape == (2, 0)
    with pytest.raises(ValueError, match=NO_TERMS):
        FoldTfidf(empty, min_df=2).fit(np.array([0, 1]))


def test_cross_validation_reports_each_fold_done(pred_store):
    calls: list[tuple[int, int]] = []
    predictor.cross_validate(
        views.model_ladder(pred_store, "m", LADDER), n_folds=4, progress=lambda *a: calls.append(a)
    )
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_folds_fitted_in_threads_give_the_one_thread_result(pred_store, monkeypatch):
    ladder = views.model_ladder(pred_store, "m", LADDER)
    threaded = predictor.cross_validate(ladder, n_folds=4, seed=0)
    monkeypatch.setattr(predictor, "usable_cpus", lambda: 1)
    alone = predictor.cross_validate(ladder, n_folds=4, seed=0)
    assert np.array_equal(threaded.proba, alone.proba)


def test_cross_validation_is_grouped_and_the_frontier_has_every_policy(pred_store):
    ladder = views.model_ladder(pred_store, "m", LADDER)
    cv = predictor.cross_validate(ladder, n_folds=4, seed=0)
    assert cv.proba.shape == (N, 3) and np.allclose(cv.proba.sum(axis=1), 1)
    by_video = pd.DataFrame({"g": cv.groups, "fold": cv.fold}).groupby("g").fold.nunique()
    assert (by_video == 1).all() and len(by_video) == 12
    out = predictor.report(ladder, n_folds=4)
    rows = {(r.policy, r.label): r for r in out.frontier}
    y = ladder.correct
    for j, lab in enumerate(LADDER):
        assert rows[("fixed", lab)].accuracy == pytest.approx(y[:, j].mean())
    oracle = rows[("oracle", "cheapest correct")]
    assert oracle.accuracy == pytest.approx(y.any(axis=1).mean())
    target = predictor.sufficient_budget(y)
    assert oracle.mean_frames == pytest.approx(ladder.frames[target].mean())
    assert rows[("predictor", "q=1")].mean_frames == 32  # the top rung for everyone
    assert any(r.policy == "cascade" for r in out.frontier) and out.cascade_note is None
    # The question words carry the target, so the predictor should find it on unseen videos.
    assert out.target_hit_rate > 0.7
    assert sum(out.target_share.values()) == pytest.approx(1)


def test_without_confidences_the_cascade_rows_are_left_out_with_a_reason(store):
    y = np.tile([[0, 1, 1], [1, 1, 1]], (6, 1))
    fx.build(
        store,
        fx.responses("m", LADDER, y),
        item_rows=fx.items(12, question=["q"] * 12, video=[f"v{i}" for i in range(12)]),
    )
    out = predictor.report(views.model_ladder(store, "m", LADDER), n_folds=3)
    assert not any(r.policy == "cascade" for r in out.frontier)
    assert "no confidences stored" in out.cascade_note


def test_cli_json(pred_store, capsys):
    assert (
        main(
            [
                "predictor",
                "--store",
                str(pred_store.root),
                "--model",
                "m",
                "--ladder",
                "8f,16f,32f",
                "--folds",
                "3",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["n_items"] == N and out["folds"] == 3 and out["n_groups"] == 12
    assert {r["policy"] for r in out["frontier"]} == {"fixed", "oracle", "predictor", "cascade"}
