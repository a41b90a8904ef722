"""Issue 11, point 4: any per-item file through the generic table and ``--map``.

Every file here is written by hand, small enough to check by eye; each test states the accuracy it
expects and why. Bad mappings go through the CLI: exit 2, one line, the store byte-identical.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from backend.cli import main
from store.errors import UserError
from store.ingest import detect, ingest_paths
from tests.ingest_fixtures import ingest_quietly, private_copy
from tests.test_ingest_gate import refused, snapshot

# Another project's per-item results: its own key names, the item id split over two fields, the
# target given as the option's text, the model's answer as a letter.
FOREIGN = [
    {
        "category": "Action Sequence",
        "qid": 0,
        "pred": "B",
        "gt": "Candles",
        "choices": ["Apples", "Candles", "Berries"],
    },
    {
        "category": "Action Sequence",
        "qid": 1,
        "pred": "The answer is A",
        "gt": "Apples",
        "choices": ["Apples", "Candles", "Berries"],
    },
    {"category": "Counting", "qid": 0, "pred": "C", "gt": "Berries", "choices": ["Apples", "Candles", "Berries"]},
    {"category": "Counting", "qid": 1, "pred": "A", "gt": "Berries", "choices": ["Apples", "Candles", "Berries"]},
]
# B = Candles (right), A = Apples (right), C = Berries (right), A != Berries (wrong): 3 of 4.
FOREIGN_MAP = "item_id=category+qid,prediction=pred,target=gt,options=choices"
CLI = ["--model", "m", "--benchmark", "b", "--config", "16f"]


def write_json(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def ingest(store, path: Path, field_map: str | list[str] | None, **kw):
    return ingest_paths(store, [path], field_map=field_map, **({"model": "m", "benchmark": "b", "config": "16f"} | kw))


def responses(store) -> pd.DataFrame:
    return store.query("SELECT * FROM responses ORDER BY item_id")


def accuracy(store) -> float:
    return float(responses(store)["correct"].mean())


# -- containers ----------------------------------------------------------------------------------
def test_json_array_with_joined_ids_and_option_text_targets(tmp_path, store):
    s = ingest(store, write_json(tmp_path / "results.json", FOREIGN), FOREIGN_MAP)
    assert (s.rows, s.new, s.flagged) == (4, 4, {})
    out = responses(store)
    assert out["item_id"].tolist() == ["Action Sequence/0", "Action Sequence/1", "Counting/0", "Counting/1"]
    assert out["answer"].tolist() == ["B", "A", "C", "A"] and out["correct"].tolist() == [1, 1, 1, 0]
    assert accuracy(store) == 3 / 4
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert items["target"].tolist() == ["B", "A", "C", "C"]  # option text -> its letter
    assert json.loads(items["options"].iloc[0]) == ["A. Apples", "B. Candles", "C. Berries"]


def test_object_holding_one_array(tmp_path, store):
    doc = {"model": "someone's run", "n": 4, "samples": FOREIGN}
    ingest(store, write_json(tmp_path / "run.json", doc), FOREIGN_MAP)
    assert len(responses(store)) == 4 and accuracy(store) == 3 / 4


def test_object_with_no_single_array_is_refused(tmp_path, store):
    doc = {"a": FOREIGN[:2], "b": FOREIGN[2:]}
    with pytest.raises(UserError, match=r"exactly one such array; found arrays of objects under 'a', 'b'"):
        ingest(store, write_json(tmp_path / "two.json", doc), FOREIGN_MAP)
    assert store.version() == 0


@pytest.mark.parametrize("ext", ["jsonl", "csv", "tsv", "parquet"])
def test_the_same_map_reads_every_container(tmp_path, store, ext):
    df = pd.DataFrame(FOREIGN).assign(choices=[json.dumps(r["choices"]) for r in FOREIGN])
    path = tmp_path / f"results.{ext}"
    if ext == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in FOREIGN) + "\n")
    elif ext == "parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False, sep="\t" if ext == "tsv" else ",")
    ingest(store, path, FOREIGN_MAP)
    assert responses(store)["item_id"].tolist()[0] == "Action Sequence/0" and accuracy(store) == 3 / 4


def test_json_array_given_format_table_without_map(tmp_path, store):
    rows = [
        {"model": "m", "benchmark": "b", "item_id": f"q{i}", "config": "8f", "correct": c}
        for i, c in enumerate([1, 0, 0, 1, 1])
    ]
    path = write_json(tmp_path / "long.json", rows)
    assert detect(path) == "table"
    ingest_paths(store, [path], format="table")
    assert accuracy(store) == 3 / 5
    bad = write_json(tmp_path / "other.json", [{"id": 1, "ok": True}])
    with pytest.raises(
        UserError,
        match=r"other.json: missing column\(s\) model, benchmark, item_id, config for a long table; the file has: id, ok; map them",
    ):
        ingest_paths(store, [bad], format="table")


# -- keys ----------------------------------------------------------------------------------------
def test_nested_keys(tmp_path, store):
    doc = [
        {"meta": {"video": {"id": "v1"}, "qid": "a"}, "out": {"text": "B", "conf": 0.8}, "label": {"letter": "B"}},
        {"meta": {"video": {"id": "v1"}, "qid": "b"}, "out": {"text": "C", "conf": 0.6}, "label": {"letter": "D"}},
        {"meta": {"video": {"id": "v2"}, "qid": "c"}, "out": {"text": "A", "conf": 0.3}, "label": {"letter": "A"}},
    ]
    spec = "item_id=meta.qid,video=meta.video.id,prediction=out.text,confidence=out.conf,target=label.letter"
    ingest(store, write_json(tmp_path / "nested.json", doc), spec)
    out = responses(store)
    assert out["correct"].tolist() == [1, 0, 1] and accuracy(store) == 2 / 3  # B=B, C!=D, A=A
    assert out["confidence"].tolist() == [0.8, 0.6, 0.3]
    assert store.query("SELECT video FROM items ORDER BY item_id")["video"].tolist() == ["v1", "v1", "v2"]


def test_integer_targets_match_integer_options(tmp_path, store):
    doc = [
        {"id": 1, "answer": 4, "options": [3, 4, 5], "response": "B"},  # 4 is B: right
        {"id": 2, "answer": 12, "options": [10, 11, 12, 13], "response": "(C)"},  # 12 is C: right
        {"id": 3, "answer": 0, "options": [0, 1], "response": "B"},  # 0 is A: wrong
    ]
    ingest(store, write_json(tmp_path / "counts.json", doc), "item_id=id,target=answer,prediction=response")
    assert store.query("SELECT target FROM items ORDER BY item_id")["target"].tolist() == ["B", "C", "A"]
    assert accuracy(store) == 2 / 3


def test_lettered_options_and_letter_targets_pass_through(tmp_path, store):
    doc = [
        {"id": "x", "gold": "(B)", "opts": ["A. red", "B. blue"], "said": "B"},
        {"id": "y", "gold": "B. blue", "opts": ["A. red", "B. blue"], "said": "A"},
    ]
    ingest(store, write_json(tmp_path / "l.json", doc), "item_id=id,target=gold,options=opts,prediction=said")
    items = store.query("SELECT * FROM items ORDER BY item_id")
    assert items["target"].tolist() == ["B", "B"] and json.loads(items["options"].iloc[0]) == ["A. red", "B. blue"]
    assert accuracy(store) == 1 / 2


def test_an_open_target_spelled_with_option_letters_stays_open(tmp_path, store):
    """ "CD" is a reference answer, not option C: only a single letter makes an item multiple choice."""
    doc = [{"id": "x", "gold": "CD", "ok": 1}, {"id": "y", "gold": "C", "said": "C"}]
    ingest(store, write_json(tmp_path / "o.json", doc), "item_id=id,target=gold,correct=ok,prediction=said")
    items = store.query("SELECT item_id, answer_type FROM items ORDER BY item_id")
    assert items["answer_type"].tolist() == ["open", "mcqa"]


def test_mapped_correct_is_used_and_its_disagreements_counted(tmp_path, store, capsys):
    doc = [
        {"id": "q1", "pred": "A", "gt": "A", "is_right": True},  # agrees (right)
        {"id": "q2", "pred": "B", "gt": "A", "is_right": False},  # agrees (wrong)
        {"id": "q3", "pred": "C", "gt": "C", "is_right": "false"},  # disagrees: the file says wrong
        {"id": "q4", "pred": "D", "gt": "A", "is_right": 1},  # disagrees: the file says right
        {"id": "q5", "pred": "A", "gt": "A", "is_right": 0},  # disagrees
    ]
    path = write_json(tmp_path / "judged.json", doc)
    s = ingest(store, path, ["item_id=id,prediction=pred", "target=gt,correct=is_right"])
    assert s.flagged == {"harness-mismatch": 3}
    assert responses(store)["correct"].tolist() == [1, 0, 0, 1, 0] and accuracy(store) == 2 / 5  # as the file says
    root = tmp_path / "cli-store"
    assert (
        main(
            [
                "ingest",
                str(path),
                "--store",
                str(root),
                "--map",
                "item_id=id,prediction=pred,target=gt,correct=is_right",
                *CLI,
            ]
        )
        == 0
    )
    assert "flagged: harness-mismatch 3" in capsys.readouterr().out


def test_command_line_fills_what_the_file_does_not_carry(tmp_path, store):
    doc = [{"id": "q1", "ok": 1, "cfg": "32f"}, {"id": "q2", "ok": 0, "cfg": None}]
    s = ingest_paths(
        store,
        [write_json(tmp_path / "c.json", doc)],
        field_map="item_id=id,correct=ok,config=cfg",
        model="m",
        benchmark="b",
        config="8f",
    )
    assert s.configs == ["8f", "32f"]
    assert dict(zip(responses(store)["item_id"], responses(store)["config"], strict=True)) == {"q1": "32f", "q2": "8f"}


def test_a_file_column_named_like_a_mapped_field_is_kept_in_provenance(tmp_path, store):
    doc = [{"qid": "q1", "item_id": "row-0", "correct": 1}]
    ingest(store, write_json(tmp_path / "p.json", doc), "item_id=qid")
    out = responses(store)
    assert out["item_id"].tolist() == ["q1"] and json.loads(out["provenance"].iloc[0]) == {"item_id": "row-0"}


# -- bad mappings: exit 2, one line, the store byte-identical ----------------------------------------
@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory) -> Path:
    """The foreign file ingested once through its map; each test takes a copy (``seeded_store``)."""
    base = tmp_path_factory.mktemp("seeded-map")
    path = write_json(base / "seed" / "results.json", FOREIGN)
    ingest_quietly(str(path), "--store", str(base / "store"), "--map", FOREIGN_MAP, *CLI)
    return base / "store"


@pytest.fixture
def seeded_store(seeded_template, tmp_path) -> Path:
    return private_copy(seeded_template, tmp_path)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "item_id=category+qidd,prediction=pred,target=gt",
            r"--map item_id=category\+qidd: no column or key 'qidd' in the file; it has: category, qid, pred, gt, choices",
        ),
        ("item_id=qid,prediction=pred,target=gt.text", r"--map target=gt.text: no column or key 'gt.text'"),
        ("item_id=qid,target=gt,target=pred", r"--map: target is mapped twice \(target=gt and target=pred\)"),
        ("item_id=qid,answer_text=gt", r"--map 'answer_text=gt': 'answer_text' is not a long-table field"),
        ("item_id=", r"--map 'item_id=': expected FIELD=SOURCE"),
    ],
)
def test_bad_mappings_are_refused(tmp_path, seeded_store, capsys, spec, message):
    path = write_json(tmp_path / "new" / "results.json", FOREIGN)
    err = refused(seeded_store, [str(path), "--map", spec, *CLI], capsys)
    assert re.search(message, err), err


def test_a_target_matching_no_option_is_refused_with_its_record(tmp_path, seeded_store, capsys):
    doc = [dict(r) for r in FOREIGN]
    doc[2]["gt"] = "Cherries"
    path = write_json(tmp_path / "new" / "results.json", doc)
    err = refused(seeded_store, [str(path), "--map", FOREIGN_MAP, *CLI], capsys)
    assert (
        "results.json record 3: `target` 'Cherries' is neither a letter nor the text of an option (A. Apples; B. Candles; C. Berries)"
        in err
    )


def test_map_with_another_format_is_refused(tmp_path, seeded_store, capsys):
    path = write_json(tmp_path / "new" / "results.json", FOREIGN)
    err = refused(seeded_store, [str(path), "--format", "videomme", "--map", FOREIGN_MAP, *CLI], capsys)
    assert "--map reads the generic table; it does not apply to --format videomme" in err


def test_a_record_that_is_not_an_object_is_refused(tmp_path, seeded_store, capsys):
    path = write_json(tmp_path / "new" / "results.json", [*FOREIGN[:2], "oops"])
    err = refused(seeded_store, [str(path), "--map", FOREIGN_MAP, *CLI], capsys)
    assert "results.json record 3: expected a JSON object (one per response)" in err
    assert snapshot(seeded_store)  # the seed wrote files, so "byte-identical" compared something
