"""Issue 25 (cases 1-4, 9, 10, 18, 19): a store that cannot be turned against its host.

Every case is first set up as the adversarial probe found it (an edited manifest, a planted link,
a full disk, a foreign Parquet file, an existing ``--out``), then the command must end with exit 2
and one line (or, for ``repair``, do its job), leave every file outside the store untouched, and
leave the store's own files byte-identical when it refuses.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from backend.cli import main
from backend.runtime.registry import ModelSpec
from backend.videos.decode import resolve_video
from store import health, retired
from store.errors import StoreError, UserError
from store.paths import inside, outside_reason, write_atomic
from store.store import MANIFEST, Store
from tests.ingest_fixtures import QIDS, table_frame, write_table
from tests.test_cli_errors import one_line_error
from tests.test_ingest_gate import snapshot

REPO = Path(__file__).resolve().parents[1]


def digest(folder: Path) -> dict[str, str]:
    """sha256 of every file below ``folder``, links not followed (what an attack would change)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def host(tmp_path) -> tuple[Path, Path]:
    """(a store holding one ingest, a folder beside it with files an attack would aim at)."""
    root, victim = tmp_path / "store", tmp_path / "victim"
    second = write_table(tmp_path / "in", df=table_frame(config="8f"), name="eight")
    assert main(["ingest", str(write_table(tmp_path / "in")), str(second), "--store", str(root)]) == 0
    victim.mkdir()
    for name in ("gc.txt", "secret.txt", "abs.txt", "x.tmp"):
        (victim / name).write_text(f"do not touch {name}")
    shutil.copy(next((root / "responses").glob("*.parquet")), victim / "evil.parquet")
    return root, victim


def edit_manifest(root: Path, change) -> None:
    raw = json.loads((root / MANIFEST).read_text())
    change(raw)
    (root / MANIFEST).write_text(json.dumps(raw))


def annotate(root: Path) -> list[str]:
    item = ["--benchmark", "videomme", "--item", QIDS[0]]
    return ["annotate", "add", "--store", str(root), *item, "--tag", "temporal-order", "--note", "n"]


def test_retired_entries_outside_the_store_are_never_deleted(host, capsys):
    """Case 1: ``retired`` naming ``../victim/gc.txt`` and an absolute path; the next write deleted both.
    Here in a manifest written before ``retired/`` held that list: readers and writers refuse it."""
    root, victim = host
    outside = victim.resolve() / "abs.txt"
    edit_manifest(root, lambda m: m.setdefault("retired", []).extend([["../victim/gc.txt", 0.0], [str(outside), 0.0]]))
    before, kept = snapshot(root), digest(victim)
    assert main(["check", "--store", str(root), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["sound"]
    assert {p["file"] for p in report["problems"]} == {"../victim/gc.txt", str(outside)}
    err = one_line_error(annotate(root), capsys)
    assert "'../victim/gc.txt'" in err and "not one of the store's own files" in err and "trajaudit repair" in err
    assert snapshot(root) == before and digest(victim) == kept

    assert main(["repair", "--store", str(root)]) == 0
    assert digest(victim) == kept
    assert "retired" not in json.loads((root / MANIFEST).read_text())
    assert main(annotate(root)) == 0  # the store writes again, and still touches nothing outside
    assert digest(victim) == kept


def test_a_retired_record_never_makes_a_write_delete_outside_or_a_listed_file(host, tmp_path, capsys):
    """Case 1 in a record of ``retired/`` (long past its grace): ``..``, an absolute path and a listed file.
    Readers never read it; a write deletes none of them and forgets the listed one, so the compaction that
    retires that file later still keeps it for its grace period; ``check`` names each, ``repair`` drops them."""
    root, victim = host
    outside = str(victim.resolve() / "abs.txt")
    listed = Store(root).manifest().files["responses"][0]
    live = (root / listed).read_bytes()
    old = retired.write(root, ["../victim/gc.txt", outside, listed], 0.0)
    os.utime(old, (0, 0))  # long past its grace on the file system's clock too
    kept = digest(victim)
    assert main(["check", "--store", str(root), "--json"]) == 1
    problems = {p["file"]: p["problem"] for p in json.loads(capsys.readouterr().out)["problems"]}
    assert set(problems) == {"../victim/gc.txt", outside, listed}
    assert "not one of the store's own files" in problems[outside] and "the manifest lists" in problems[listed]
    assert all("repair drops it from that record" in why for why in problems.values())
    second = write_table(tmp_path / "in2", df=table_frame(model="m2"), name="m2")
    assert main(["ingest", str(second), "--store", str(root)]) == 0  # a write; and a second response file
    assert [r.files for r in retired.records(root)] == [["../victim/gc.txt", outside]]
    assert main(["compact", "--store", str(root)]) == 0  # retires the listed file, kept for its grace period
    assert digest(victim) == kept and (root / listed).read_bytes() == live

    capsys.readouterr()
    assert main(["repair", "--store", str(root), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {d["file"] for d in out["dropped"]} == {"../victim/gc.txt", outside} and out["changed"]
    assert [r.files for r in retired.records(root) if listed in (r.files or [])]  # the compaction's record
    assert main(["check", "--store", str(root)]) == 0
    assert digest(victim) == kept and (root / listed).read_bytes() == live


def test_a_planted_record_and_a_linked_retired_folder_are_neither_read_nor_written_through(host, capsys):
    """A record that is a link to a file outside is not read (``check`` names it, ``repair`` removes the link);
    a ``retired`` folder linked out gets no record (a write that retires files refuses in one line) and
    ``repair`` removes the link."""
    root, victim = host
    kept = digest(victim)
    (root / retired.FOLDER).mkdir()
    planted = root / retired.FOLDER / "0000000000000000001-0123456789ab.json"
    planted.symlink_to(victim / "secret.txt")
    assert main(["check", "--store", str(root), "--json"]) == 1
    [problem] = json.loads(capsys.readouterr().out)["problems"]
    assert problem["file"] == f"{retired.FOLDER}/{planted.name}" and "link out of the store" in problem["problem"]
    assert main(annotate(root)) == 0
    assert main(["repair", "--store", str(root)]) == 0
    assert not planted.is_symlink() and digest(victim) == kept

    shutil.rmtree(root / retired.FOLDER)
    (root / retired.FOLDER).symlink_to(victim, target_is_directory=True)
    assert main(annotate(root)) == 0  # a write that retires nothing is unaffected
    err = one_line_error(["compact", "--store", str(root)], capsys)  # two annotation files now: it would retire
    assert "retired-files folder 'retired' points outside the store" in err
    assert digest(victim) == kept
    assert main(["check", "--store", str(root)]) == 1
    assert main(["repair", "--store", str(root)]) == 0
    assert not (root / retired.FOLDER).exists() and digest(victim) == kept
    assert main(["compact", "--store", str(root)]) == 0 and len(retired.records(root)) == 1


@pytest.mark.parametrize("entry", ["../victim/secret.txt", "ABSOLUTE", "responses/../../victim/secret.txt"])
def test_repair_drops_foreign_entries_without_moving_them(host, entry, capsys):
    """Case 2: repair moved ``../victim/secret.txt`` into the store; an absolute path gave a traceback."""
    root, victim = host
    entry = str(victim.resolve() / "secret.txt") if entry == "ABSOLUTE" else entry
    edit_manifest(root, lambda m: m["files"]["responses"].append(entry))
    kept = digest(victim)
    capsys.readouterr()
    assert main(["repair", "--store", str(root), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [d["file"] for d in out["dropped"]] == [entry] and out["moved_to_damaged"] == []
    assert digest(victim) == kept and not (root / "damaged").exists()
    assert entry not in json.loads((root / MANIFEST).read_text())["files"]["responses"]
    assert main(["info", "--store", str(root), "--json"]) == 0


@pytest.mark.parametrize("entry", ["/etc/hostname", "../../../etc/passwd"])
@pytest.mark.parametrize("command", [["info"], ["metrics", "--models", "m1"]])
def test_readers_refuse_foreign_entries_in_one_line(host, entry, command, capsys):
    """Case 3: ``info`` and ``metrics`` ended in a DuckDB traceback on such entries."""
    root, _ = host
    edit_manifest(root, lambda m: m["files"]["responses"].append(entry))
    before = snapshot(root)
    err = one_line_error([*command, "--store", str(root)], capsys)
    assert repr(entry) in err and "trajaudit check" in err
    assert snapshot(root) == before


def test_links_out_of_the_store_are_neither_read_deleted_nor_taken(host, capsys):
    """A listed file that is a link out, a table folder linked out (its files would be orphans to
    delete, or taken into a rebuilt manifest), a cache folder linked out (its entries pruned)."""
    root, victim = host
    (root / "responses" / "link.parquet").symlink_to(victim / "evil.parquet")
    edit_manifest(root, lambda m: m["files"]["responses"].append("responses/link.parquet"))
    (root / "annotations").symlink_to(victim, target_is_directory=True)  # this store has no annotations yet
    kept = digest(victim)
    err = one_line_error(["info", "--store", str(root)], capsys)
    assert "responses/link.parquet" in err and "outside the store" in err
    assert main(["check", "--store", str(root), "--json"]) == 1
    problems = {p["file"]: p["problem"] for p in json.loads(capsys.readouterr().out)["problems"]}
    assert "outside the store" in problems["responses/link.parquet"]
    assert "link out of the store" in problems["annotations"]
    assert "outside the store" in one_line_error(annotate(root), capsys)

    (root / MANIFEST).write_text("{ truncated")  # a rebuild globs the table folders
    assert main(["repair", "--store", str(root), "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)["taken"]
    assert taken and not any("link" in f or f.startswith("annotations") for f in taken)
    assert digest(victim) == kept and (victim / "x.tmp").exists()
    err = one_line_error(annotate(root), capsys)  # the first write into the linked folder
    assert "table folder 'annotations' points outside the store" in err
    assert digest(victim) == kept


def test_cache_folder_linked_out_is_refused_and_repaired(host, capsys):
    root, victim = host
    (victim / "matrix-v3-old").mkdir()
    (victim / "matrix-v3-old" / "data").write_text("a folder prune would remove")
    shutil.rmtree(root / ".cache", ignore_errors=True)
    (root / ".cache").symlink_to(victim, target_is_directory=True)
    kept = digest(victim)
    err = one_line_error(["metrics", "--models", "m1", "--store", str(root)], capsys)
    assert "cache folder '.cache'" in err
    assert main(["repair", "--store", str(root)]) == 0
    assert not (root / ".cache").exists() and digest(victim) == kept
    assert main(["metrics", "--models", "m1", "--store", str(root), "--json"]) == 0


def test_report_writes_no_file_through_a_planted_link(host, tmp_path, capsys):
    """Case 4: a link planted at ``.r2.html.tmp`` (the temporary name the report used) was written through."""
    root, victim = host
    out = tmp_path / "r2.html"
    (tmp_path / ".r2.html.tmp").symlink_to(victim / "secret.txt")
    kept = digest(victim)
    assert main(["report", "--models", "m1", "--store", str(root), "--out", str(out), "--bootstrap", "0"]) == 0
    assert digest(victim) == kept and (tmp_path / ".r2.html.tmp").is_symlink()
    assert out.read_bytes().startswith(b"<!DOCTYPE html>") and not out.is_symlink()


def test_report_out_refuses_a_folder_and_an_existing_file(host, tmp_path, capsys):
    """Cases 18 and 19: a folder gave a message naming the temporary file (and left a 2 MB one);
    an existing file was overwritten without a word."""
    root, _ = host
    report = ["report", "--models", "m1", "--store", str(root), "--bootstrap", "0", "--gallery", "0"]
    folder = tmp_path / "victim"
    err = one_line_error([*report, "--out", str(folder)], capsys)
    assert err.endswith(f"{folder} is a folder; name a file to write")
    existing = tmp_path / "existing.html"
    existing.write_text("mine")
    err = one_line_error([*report, "--out", str(existing)], capsys)
    assert "already exists; pass --force" in err and existing.read_text() == "mine"
    assert main([*report, "--out", str(existing), "--force"]) == 0
    assert existing.read_bytes().startswith(b"<!DOCTYPE html>")
    assert not list(tmp_path.glob(".*.tmp")) and not list(folder.glob(".*.tmp"))


def test_write_atomic_refuses_existing_without_a_race_and_leaves_nothing(tmp_path):
    target = tmp_path / "t.txt"
    write_atomic(target, "one", overwrite=False)
    with pytest.raises(Exception, match="already exists"):
        write_atomic(target, "two", overwrite=False)
    assert target.read_text() == "one" and sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
@pytest.mark.parametrize("command", ["ingest", "annotate"])
def test_full_disk_is_one_line_and_publishes_nothing(host, tmp_path, monkeypatch, capsys, code, command):
    """Case 9: a full disk during ingest or annotate ended in an OSError traceback."""
    root, _ = host
    before = snapshot(root)

    def full(table, where, **kwargs):
        raise OSError(code, os.strerror(code), str(getattr(where, "name", where)))

    monkeypatch.setattr("pyarrow.parquet.write_table", full)  # a write imports pyarrow.parquet where it writes
    argv = (
        annotate(root)
        if command == "annotate"
        else ["ingest", str(write_table(tmp_path / "in2", name="b")), "--store", str(root), "--run", "r2"]
    )
    err = one_line_error(argv, capsys)
    assert "nothing was published (the store is as it was)" in err
    assert snapshot(root) == before


@pytest.mark.slow
def test_file_size_limit_is_one_line_and_publishes_nothing(host, tmp_path):
    """Case 9 for real: a process under ``RLIMIT_FSIZE`` (SIGXFSZ ignored, as shells running ``ulimit -f``
    leave it to the program) gets EFBIG from the kernel while writing a Parquet file."""
    root, _ = host
    before = snapshot(root)
    frame = table_frame(model="m2")
    frame["question"] = [f"{q} {'padding ' * 500}" for q in frame["question"]]  # no file of it fits in 2 KiB
    src = write_table(tmp_path / "in2", df=frame, name="big")
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))\n"
        "from backend.cli import main\n"
        f"sys.exit(main(['ingest', {str(src)!r}, '--store', {str(root)!r}, '--run', 'r2']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert "\n" not in err and "a file-size limit was reached" in err and "Traceback" not in err
    assert snapshot(root) == before


@pytest.mark.parametrize("damage", ["missing column", "wrong type"])
def test_parquet_file_that_does_not_fit_its_table_is_one_line(host, damage, capsys):
    """Case 10: a Parquet file with a missing column or a wrong type ended ``metrics`` in a DuckDB traceback."""
    root, _ = host
    listed = root / json.loads((root / MANIFEST).read_text())["files"]["responses"][0]
    table = pq.read_table(listed)
    if damage == "missing column":
        table = table.drop(["correct"])
    else:
        table = table.set_column(table.schema.get_field_index("correct"), "correct", table["correct"].cast("string"))
    pq.write_table(table, listed)
    err = one_line_error(["metrics", "--models", "m1", "--store", str(root)], capsys)
    assert str(listed) in err and "schema differs from the responses table's" in err
    assert ("missing columns ['correct']" if damage == "missing column" else "correct is string, not int8") in err
    assert main(["check", "--store", str(root), "--json"]) == 1
    assert "schema differs" in capsys.readouterr().out


# -- the property: whatever path a store names, no file operation leaves the root ------------------------------------
COMPONENTS = ["..", ".", "", "a", "responses", "x.parquet", "out", "in", "damaged", "ｘ.parquet", "\u2024\u2024",
              "\u202e.parquet", "a\\..\\b", "..\\..", "%2e%2e", "evil.parquet", " ", "\x00"]  # fmt: skip


def _paths():
    body = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=4).map("/".join)
    return st.one_of(body, body.map(lambda p: "/" + p), st.sampled_from(["VICTIM", "responses/out.parquet"]))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A store with links planted in it: ``out`` -> the victim folder, ``responses/out.parquet`` -> a
    victim file, ``in`` -> the store's own responses folder (a link that stays inside)."""
    base = tmp_path_factory.mktemp("confine")
    root, victim = base / "store", base / "victim"
    assert main(["ingest", str(write_table(base / "in")), "--store", str(root)]) == 0
    victim.mkdir()
    (victim / "evil.parquet").write_bytes((root / "responses").joinpath(os.listdir(root / "responses")[0]).read_bytes())
    (victim / "x.parquet").write_text("victim")
    (root / "out").symlink_to(victim, target_is_directory=True)
    (root / "responses" / "out.parquet").symlink_to(victim / "x.parquet")
    (root / "in").symlink_to(root / "responses", target_is_directory=True)
    return base


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rel=_paths(), where=st.sampled_from(["files", "retired", "legacy"]))
@example(rel="a/\x00", where="files").via("a NUL byte")
@example(rel="../victim/x.parquet", where="retired").via("the probe's '..' case")
@example(rel="VICTIM", where="retired").via("the probe's absolute case")
@example(rel="out/x.parquet", where="files").via("through a planted folder link")
@example(rel="responses/out.parquet", where="retired").via("a planted file link")
@example(rel="../victim/x.parquet", where="legacy").via("a manifest's own retired list")
def test_no_path_a_manifest_names_reaches_outside(template, tmp_path_factory, rel, where):
    """For generated relative, absolute, ``..``, linked and Unicode-trick paths, listed or retired (in a
    record of ``retired/``, or in a manifest written before it):
    ``inside`` returns only paths under the root, and reading, writing (which collects retired files),
    ``check`` and ``repair`` leave every file outside untouched."""
    base = tmp_path_factory.mktemp("case")
    shutil.copytree(template, base, symlinks=True, dirs_exist_ok=True)
    root, victim = base / "store", base / "victim"
    (root / "out").unlink()
    (root / "out").symlink_to(victim, target_is_directory=True)
    (root / "responses" / "out.parquet").unlink()
    (root / "responses" / "out.parquet").symlink_to(victim / "x.parquet")
    (root / "in").unlink()
    (root / "in").symlink_to(root / "responses", target_is_directory=True)
    rel = str(victim / "x.parquet") if rel == "VICTIM" else rel
    kept = digest(victim)

    try:
        path = inside(root, rel)
    except StoreError:
        assert outside_reason(root, rel)
    else:
        assert path.resolve().is_relative_to(root.resolve())
    try:  # an item's video under the video root
        assert resolve_video(root, rel).is_relative_to(root.resolve())
    except UserError:
        pass
    if not Path(rel).is_absolute():  # an absolute checkpoint is the registering user's explicit choice
        try:
            assert ModelSpec("m", "qwen2_5_vl", rel).resolved_path(root).is_relative_to(root.resolve())
        except UserError:
            pass

    if where == "files":
        edit_manifest(root, lambda m: m["files"]["responses"].append(rel))
    elif where == "retired":
        os.utime(retired.write(root, [rel], 0.0), (0, 0))  # long past the grace period, by either clock
    else:
        edit_manifest(root, lambda m: m.setdefault("retired", []).append([rel, 0.0]))
    store = Store(root)
    note = pd.DataFrame({"annotation_id": ["a1"], "benchmark": ["videomme"], "item_id": ["q"], "note": ["n"]})
    for act in (
        lambda: store.query("SELECT count(*) FROM responses"),
        lambda: store.append({"annotations": note}),
        lambda: store.compact(),
        lambda: health.check(store),
        lambda: health.repair(store),
    ):
        try:
            act()
        except StoreError:
            pass
        assert digest(victim) == kept, rel
    assert (victim / "x.parquet").exists() and (victim / "evil.parquet").exists()


def test_registry_relative_checkpoints_stay_inside_the_store(host):
    """A copied store's ``models.toml`` cannot point a worker elsewhere with ``..`` or a link; an absolute
    path stays the registering user's explicit choice."""
    from backend.runtime import registry
    from store.errors import UserError

    root, victim = host
    (root / "models").mkdir()
    (root / "models" / "out").symlink_to(victim, target_is_directory=True)
    (root / "models.toml").write_text(
        '[models."up"]\nfamily = "qwen2_5_vl"\npath = "../victim"\n'
        '[models."link"]\nfamily = "qwen2_5_vl"\npath = "models/out"\n'
        f'[models."abs"]\nfamily = "qwen2_5_vl"\npath = "{victim}"\n'
    )
    for name in ("up", "link"):
        with pytest.raises(UserError, match="leaves the store"):
            registry.get(root, name).resolved_path(root)
    assert registry.get(root, "abs").resolved_path(root) == victim.resolve()


def test_worker_logs_and_pid_files_are_never_written_through_links(host):
    """The local worker pool appends to ``logs/<model>.log`` and replaces ``logs/<model>.pid``: a ``logs``
    folder linked out is refused, and a link planted at a log's name is not appended through."""
    from backend.runtime import worker_pool
    from store.errors import user_message

    root, victim = host
    kept = digest(victim)
    (root / "logs").symlink_to(victim, target_is_directory=True)
    with pytest.raises(StoreError, match="worker log folder 'logs' points outside the store"):
        worker_pool._files(root, "m")
    (root / "logs").unlink()
    (root / "logs").mkdir()
    log, _, _ = worker_pool._files(root, "m")
    log.symlink_to(victim / "secret.txt")
    with pytest.raises(OSError) as caught:
        worker_pool._append(log)
    assert "is a link; trajaudit never writes through a link" in user_message(caught.value)
    assert digest(victim) == kept
