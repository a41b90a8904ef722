"""Annotations: add/list/delete with tombstones, vocabulary checks, concurrent writers, the CLI."""

from __future__ import annotations

import json
import multiprocessing as mp

import pandas as pd
import pytest

from backend.cli import main
from backend.scope.annotations import add_annotation, annotations_for, delete_annotation, item_annotation_summary
from backend.scope.filters import ItemFilter, filter_sql
from store.errors import UserError
from store.store import Store


@pytest.fixture
def items_store(store):
    store.append({"items": pd.DataFrame({"benchmark": "vmme", "item_id": ["q1", "q2", "q3"], "question": "?"})})
    return store


def test_add_list_delete_applies_tombstones(items_store):
    a = add_annotation(items_store, "vmme", "q1", "counting", "counts the cups", "ana")
    b = add_annotation(items_store, "vmme", "q2", "ocr", None, "bo", model="m1")
    listed = annotations_for(items_store)
    assert set(listed.annotation_id) == {a.annotation_id, b.annotation_id}
    assert annotations_for(items_store, item_id="q1").note.tolist() == ["counts the cups"]
    assert annotations_for(items_store, tag="ocr").item_id.tolist() == ["q2"]
    assert annotations_for(items_store, model="m2").item_id.tolist() == ["q1"]  # q1's note is for every model

    gone = delete_annotation(items_store, a.annotation_id, author="cy")
    assert gone.tag == "counting"
    assert annotations_for(items_store).annotation_id.tolist() == [b.annotation_id]
    raw = items_store.query("select deleted, author from annotations where annotation_id = ?", [a.annotation_id])
    assert sorted(raw.deleted.tolist()) == [False, True] and "cy" in raw.author.tolist()
    with pytest.raises(UserError, match="already deleted"):
        delete_annotation(items_store, a.annotation_id)


def test_bad_input_is_refused_with_a_message(items_store):
    with pytest.raises(UserError, match="unknown annotation tag 'blurry'.*evidence-missed-by-sampling"):
        add_annotation(items_store, "vmme", "q1", "blurry", None, "ana")
    with pytest.raises(UserError, match="unknown item 'nope' in benchmark 'vmme'"):
        add_annotation(items_store, "vmme", "nope", "ocr", None, "ana")
    with pytest.raises(UserError, match="author is empty"):
        add_annotation(items_store, "vmme", "q1", "ocr", None, "  ")
    assert annotations_for(items_store).empty


def test_item_filter_by_tag_agrees_with_tombstones(items_store):
    keep = add_annotation(items_store, "vmme", "q1", "letter-prior", None, "ana")
    drop = add_annotation(items_store, "vmme", "q3", "letter-prior", None, "ana")
    delete_annotation(items_store, drop.annotation_id)
    where, params = filter_sql(ItemFilter(tags=("letter-prior",)), alias="it")
    got = items_store.query(f"select item_id from items it where {where}", params)
    assert got.item_id.tolist() == [keep.item_id]


def test_summary_for_exports(items_store):
    add_annotation(items_store, "vmme", "q1", "ocr", "reads the sign", "ana")
    add_annotation(items_store, "vmme", "q1", "counting", None, "bo")
    s = item_annotation_summary(items_store, "vmme")
    assert s.to_dict(orient="records") == [
        {
            "benchmark": "vmme",
            "item_id": "q1",
            "annotation_tags": "counting;ocr",
            "annotation_notes": "ana: reads the sign",
            "n_annotations": 2,
        }
    ]


def _annotate_many(root: str, author: str, n: int) -> None:
    s = Store(root)
    for k in range(n):
        add_annotation(s, "vmme", "q2", "other", f"{author}-{k}", author)


@pytest.mark.slow
def test_concurrent_appends_from_two_processes_are_all_kept(items_store):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_annotate_many, args=(str(items_store.root), who, 8)) for who in ("p1", "p2")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    notes = annotations_for(items_store, item_id="q2").note
    assert sorted(notes) == sorted([f"p{w}-{k}" for w in (1, 2) for k in range(8)])


def test_cli_add_list_delete(items_store, capsys):
    root = str(items_store.root)
    assert (
        main(
            [
                "annotate",
                "add",
                "--store",
                root,
                "--benchmark",
                "vmme",
                "--item",
                "q3",
                "--tag",
                "temporal-order",
                "--note",
                "before/after",
                "--author",
                "ana",
                "--json",
            ]
        )
        == 0
    )
    added = json.loads(capsys.readouterr().out)
    assert added["tag"] == "temporal-order" and added["author"] == "ana"
    assert main(["annotate", "list", "--store", root, "--json"]) == 0
    assert [r["annotation_id"] for r in json.loads(capsys.readouterr().out)] == [added["annotation_id"]]
    assert main(["annotate", "delete", "--store", root, added["annotation_id"], "--json"]) == 0
    capsys.readouterr()
    assert main(["annotate", "list", "--store", root, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["annotate", "add", "--store", root, "--benchmark", "vmme", "--item", "q3", "--tag", "nope"]) == 2
    assert "unknown annotation tag 'nope'" in capsys.readouterr().err
