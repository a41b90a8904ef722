"""Kept answers of the read commands (``backend/cli/answers.py``, issue 37): what each command imports when it
runs in a fresh interpreter, computing (from the store, or patching its caches after a write) and answering
from what it kept; a kept answer equals the computed one and is never printed after a write, for another store
or for a line that reads outside the store. ``inspect``, never kept, imports no pandas in any of its forms."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from backend.cli import answers, main
from backend.videos import catalog
from tests.matrix_fixtures import BASIC, basic_store, build_store

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "duckdb", "pyarrow", "scipy", "sklearn", "sliceline", "torch", "transformers")
NUMBERS = ("numpy", "duckdb", "pyarrow")  # the store's reads, the matrix and the numbers computed on it
STORE = ("pandas", *NUMBERS)  # and the tables built as DataFrames (explain's slices)
# Each read command's line -> what its computing run may import beyond the standard library, and why. No scipy
# but in explain: McNemar's exact p is backend/analysis/mcnemar.py, Wilson's z the standard library's. No pandas
# in metrics (the Overview's numbers are NumPy's, its task-type table too), info, flows (its links and classes;
# a flow's items, ``--kind``, are a frame), items (its rows and pages are Arrow tables; ``--format csv``, an
# export, builds a DataFrame), compare (its disagreement ranking is sorted by Arrow) or inspect (an item's
# responses, frame plan and history are records read with DuckDB's fetchall, its catalog row too: INSPECT)
# (issue 37). explain alone imports pandas.
READS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "info": (["info", "--json"], NUMBERS),
    "metrics": (["metrics", "--models", "m", "--bootstrap", "0", "--json"], NUMBERS),
    "metrics-bootstrap": (["metrics", "--models", "m", "--json"], NUMBERS),
    "flows": (["flows", "--model", "m", "--from", "8f", "--to", "16f", "--json"], NUMBERS),
    "items": (["items", "--model", "m", "--json", "--page", "1"], NUMBERS),
    "items-table": (["items", "--model", "m", "--json", "--annotations"], NUMBERS),
    "items-sorted": (["items", "--model", "m", "--json", "--sort", "drop", "--desc"], NUMBERS),
    "items-text": (["items", "--model", "m", "--sort", "changes", "--desc"], NUMBERS),  # the page as a table
    "compare": (["compare", "--models", "m", "--json"], NUMBERS),
    # scipy.stats' Fisher test for each slice; sliceline (scikit-learn) for the two-attribute slices
    "explain": (
        ["explain", "--model", "m", "--flow", "8f:32f:harmed", "--json"],
        STORE + ("scipy", "sklearn", "sliceline"),
    ),  # fmt: skip
}
# inspect reads video files, so its answer is never kept; each form computes with NUMBERS alone.
INSPECT = {
    "json": ["inspect", "--item", "i0", "--benchmark", "bench", "--json"],
    "text": ["inspect", "--item", "i2", "--benchmark", "bench"],
    "models": ["inspect", "--item", "i1", "--benchmark", "bench", "--models", "m", "--json"],
    "history": ["inspect", "--item", "i0", "--benchmark", "bench", "--history", "--json"],
    "history-text": ["inspect", "--item", "i0", "--benchmark", "bench", "--history"],
}


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> str:
    return str(basic_store(tmp_path_factory.mktemp("answers") / "s").root)


def heavy_after(argv: list[str], cached: bool = False) -> list[str]:
    """Run ``trajaudit ARGV`` in a fresh interpreter; the heavy modules loaded when it exits. ``cached``: the
    matrix is kept in the cache folder however small (``CACHE_MIN_CELLS``), as a large store's is."""
    return fresh(argv, cached)[1]


def fresh(argv: list[str], cached: bool = False) -> tuple[str, list[str]]:
    """``heavy_after``, with what the command printed."""
    lower = "import backend.scope.matrix as mx; mx.CACHE_MIN_CELLS = 0; " if cached else ""
    code = (
        f"import json, sys; {lower}from backend.cli import main; code = main(sys.argv[1:]); "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True, env={"PYTHONPATH": str(REPO)}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(READS))
def test_a_kept_answer_imports_nothing_heavy(store_dir, name):
    argv, allowed = READS[name]
    argv = [*argv, "--store", store_dir]
    computing = heavy_after(argv)
    assert set(computing) <= set(allowed), f"{name} computing its answer imports {computing}"
    assert heavy_after(argv) == [], f"{name} answering from what it kept imports heavy modules"


@pytest.mark.parametrize("bootstrap", ["0", "50"])
def test_metrics_after_a_write_imports_no_pandas(tmp_path, bootstrap):
    """The first ``metrics`` after a one-row write (the kept answer gone, the matrix, coverage and runs caches
    patched from the new row) computes with NumPy, DuckDB and pyarrow alone, and prints what a cold read prints."""
    store = basic_store(tmp_path / "s")
    argv = ["metrics", "--store", str(store.root), "--models", "m", "--bootstrap", bootstrap, "--json"]
    assert set(heavy_after(argv, cached=True)) <= set(NUMBERS)  # builds the caches
    row = {"model": "m", "benchmark": "bench", "item_id": "i0", "config": "8f", "correct": 0, "run": "again"}
    store.append({"responses": pd.DataFrame([row])})  # a repeat under another run: the cell keeps its main row
    patched, imported = fresh(argv, cached=True)
    assert set(imported) <= set(NUMBERS), f"the read after a write imports {imported}"
    assert list((store.root / ".cache").glob(f"matrix-*-{store.version():012d}-*")), "no matrix entry was patched"
    shutil.rmtree(store.root / ".cache")
    assert fresh(argv)[0] == patched  # a cold read prints the same


def test_compare_of_two_models_imports_no_pandas(tmp_path):
    """The disagreement ranking, which needs two models (the basic store has one), is sorted by Arrow."""
    store = build_store(tmp_path / "s", {"a": BASIC["m"], "b": {c: ys[::-1] for c, ys in BASIC["m"].items()}})
    argv = ["compare", "--store", str(store.root), "--models", "a,b", "--bootstrap", "0", "--top", "2", "--json"]
    printed, imported = fresh(argv)
    assert set(imported) <= set(NUMBERS), f"compare of two models imports {imported}"
    assert len(json.loads(printed)["disagreement"]) == 2


@pytest.mark.parametrize("form", list(INSPECT))
def test_inspect_is_never_kept_and_imports_no_pandas(store_dir, form):
    argv = [*INSPECT[form], "--store", store_dir]
    assert answers.slot(argv) is None
    imported = heavy_after(argv)
    assert set(imported) <= set(NUMBERS), f"inspect ({form}) imports {imported}"


def test_inspect_of_a_linked_item_with_reconstructed_frames_imports_no_pandas(tmp_path):
    """The catalog's row (``catalog.entry``) and a sampler's reconstructed frames are read without pandas too."""
    store = basic_store(tmp_path / "s")
    row = {"model": "m", "benchmark": "bench", "item_id": "i0", "config": "8f", "run": "harness", "correct": 1}
    store.append({"responses": pd.DataFrame([row | {"frames_source": "reconstructed", "sampler": "vlmevalkit"}])})
    link = {"item_id": "i0", "path": "v0.mp4", "status": "linked", "n_frames": 90, "fps": 30.0, "layout": "paths"}
    catalog.replace(store, "bench", pd.DataFrame([link]))
    printed, imported = fresh(["inspect", "--store", str(store.root), "--benchmark", "bench", "--item", "i0", "--json"])
    assert set(imported) <= set(NUMBERS), f"inspect of a linked item imports {imported}"
    frames = {(f["config"], f["source"]): f["indices"] for f in json.loads(printed)["frames"]}
    assert frames[("8f", "reconstructed")] == [10, 20, 30, 40, 50, 60, 70, 80]  # VLMEvalKit's over the linked 90


def _run(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_kept_answer_equals_the_computed_one_until_a_write(tmp_path, capsys):
    store = basic_store(tmp_path / "s")
    argv = ["metrics", "--store", str(store.root), "--models", "m", "--bootstrap", "50", "--json"]
    computed = _run(capsys, argv)
    assert len(list((store.root / answers.FOLDER).glob("*.json"))) == 1
    assert _run(capsys, argv) == computed  # from the kept answer
    assert answers.slot(argv).hit()  # type: ignore[union-attr]
    capsys.readouterr()
    # a write: one more item, answered at every configuration
    before = json.loads(computed)["n_items"]
    store.append(
        {
            "items": pd.DataFrame({"benchmark": ["bench"], "item_id": ["i9"]}),
            "responses": pd.DataFrame(
                {
                    "model": "m",
                    "benchmark": "bench",
                    "item_id": "i9",
                    "config": ["text", "8f", "16f", "32f"],
                    "run": "main",
                    "correct": 1,
                }
            ),
        }
    )
    after = json.loads(_run(capsys, argv))
    assert after["n_items"] == before + 1


def test_a_line_that_reads_elsewhere_keeps_nothing(tmp_path, capsys, monkeypatch):
    """``--sto`` (argparse's abbreviation of ``--store``) and ``explain --items FILE`` run, keeping nothing."""
    one, other = basic_store(tmp_path / "one"), basic_store(tmp_path / "other")
    monkeypatch.setenv("TRAJAUDIT_STORE", str(one.root))
    _run(capsys, ["metrics", "--sto", str(other.root), "--models", "m", "--bootstrap", "0", "--json"])
    ids = tmp_path / "ids.txt"
    ids.write_text("i0\ni1\n")
    _run(capsys, ["explain", "--store", str(one.root), "--model", "m", "--items", str(ids), "--json"])
    assert not (one.root / answers.FOLDER).exists() and not (other.root / answers.FOLDER).exists()


def test_no_answer_is_kept_in_a_cache_folder_linked_out(tmp_path):
    store = basic_store(tmp_path / "s")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.rmtree(store.root / ".cache", ignore_errors=True)
    (store.root / ".cache").symlink_to(outside)
    assert answers.slot(["info", "--store", str(store.root), "--json"]) is None


def test_the_key_follows_what_an_answer_depends_on(tmp_path, monkeypatch):
    """The registry (default grids follow its ceilings), a listed file changed in place, the environment."""
    store = basic_store(tmp_path / "s")
    argv = ["metrics", "--store", str(store.root), "--models", "m", "--json"]

    def key() -> str:
        kept = answers.slot(argv)
        assert kept is not None
        return kept.key

    keys = [key()]
    (store.root / "models.toml").write_text("# no model\n")
    keys.append(key())
    listed = next(iter(sorted((store.root / "responses").glob("*.parquet"))))
    listed.write_bytes(listed.read_bytes() + b"damage")  # changed in place, the manifest as it was
    keys.append(key())
    monkeypatch.setenv("TRAJAUDIT_VIDEO_ROOT", str(tmp_path))
    keys.append(key())
    assert len(set(keys)) == len(keys)
    listed.unlink()
    assert answers.slot(argv) is None  # a listed file gone: the command runs, and names it
