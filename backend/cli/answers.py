"""Kept answers: a read command's printed output, stored beside the store and printed again while nothing
it depends on has changed.

Why: a warm ``metrics --json`` at 10M responses took 1.30 s, 0.44 s of it importing pandas, against
0.37 s for the 20-line DuckDB script a user would write instead (issue 37, ``benchmarks/cli_vs_sql.py``).
A read command's output is a function of its command line, the store's published snapshot
(``manifest.json``, which every write swaps), the model registry (``models.toml``: default grids follow
its frame ceilings), the ``TRAJAUDIT_*`` environment (and ``TZ``), this code and the libraries it
imports. The key hashes all six (and the listed files' sizes and times), so a kept
answer is printed without importing the command, pandas, NumPy or DuckDB, and a write (a new manifest)
makes every earlier answer unreachable: nothing stale is ever printed.

Only this module's standard-library imports run before a hit. Listed are the commands whose output
depends on nothing else (``inspect`` is not: it reads video files; ``explain --items`` reads a file
outside the store). An answer is kept only for a run that returned 0 while the manifest stayed the one
it was keyed on. A missing manifest (read from the write log), a listed file gone from disk, or a
``.cache`` folder that leaves the store (``store/paths.py``'s rule) runs the command as before, keeping
nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import stat
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

# Commands whose answers are kept -> arguments (parsed names) that make a run depend on something outside
# the key: a run with one of them set keeps nothing, so no line (however abbreviated) ever finds an answer.
KEPT: dict[str, tuple[str, ...]] = {
    "info": (),
    "metrics": (),
    "flows": (),
    "items": (),
    "compare": (),
    "explain": ("items",),
}
FOLDER = Path(".cache") / "answers"
KEEP = 64  # answers kept per store (newest first); a write makes all of them unreachable anyway
_CODE = Path(__file__).resolve().parents[2]  # the checkout: backend/ and store/ are the code that answers


class Kept:
    """One command line's answer slot in one store snapshot: ``hit`` prints it, ``record`` runs and keeps."""

    def __init__(self, root: Path, manifest: bytes, key: str) -> None:
        self.root, self.manifest, self.key = root, manifest, key
        self.path = root / FOLDER / f"{key}.json"

    def hit(self) -> bool:
        """Print the kept answer (stdout, then stderr) if there is one."""
        try:
            kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return False
        try:
            sys.stdout.write(kept["stdout"])
            sys.stderr.write(kept["stderr"])
        except BrokenPipeError:  # the reader went away (`| head`), as ``main`` takes it: not an error of ours
            sys.stdout = open(os.devnull, "w")
        return True

    def record(self, args: argparse.Namespace, run: Callable[[], int]) -> int:
        """``run()`` with its output copied as it is printed; kept when it returned 0 on an unchanged store,
        and the parsed line names the store the key read (argparse takes ``--sto``) and nothing outside it."""
        if Path(_store_root(["--store", args.store] if args.store else [])) != self.root or any(
            getattr(args, name, None) for name in KEPT[args.command]
        ):
            return run()
        out, err = _Tee(sys.stdout), _Tee(sys.stderr)
        sys.stdout, sys.stderr = out, err
        try:
            code = run()
        finally:
            sys.stdout, sys.stderr = out.stream, err.stream
        if code == 0 and _read(self.root / "manifest.json") == self.manifest:
            self._save(out.copy.getvalue(), err.copy.getvalue())
        return code

    def _save(self, stdout: str, stderr: str) -> None:
        """Written to a temporary name and renamed (readers never see half an answer); older answers beyond
        ``KEEP`` deleted. Best effort: a read-only store keeps nothing."""
        folder = self.path.parent
        tmp = folder / f".{self.key}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not _inside(self.root, folder):
                return
            tmp.write_text(json.dumps({"stdout": stdout, "stderr": stderr}))
            os.replace(tmp, self.path)
            entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in entries[KEEP:]:
                old.unlink(missing_ok=True)
        except OSError:
            tmp.unlink(missing_ok=True)


class _Tee(io.TextIOBase):
    """Writes to ``stream`` and to a copy (the answer kept), so a run prints as it goes."""

    def __init__(self, stream) -> None:
        self.stream, self.copy = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def slot(argv: list[str]) -> Kept | None:
    """The answer slot of ``argv`` (the command line after ``trajaudit``), or None when its answer is not
    kept: not a listed command, an option reading outside the store, or a store whose snapshot cannot be
    vouched for from here."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in KEPT or "-h" in argv or "--help" in argv:
        return None
    root = _store_root(argv)
    manifest = _read(root / "manifest.json")
    files = None if manifest is None else _listed_files(root, manifest)
    if manifest is None or files is None or not _inside(root, root / FOLDER):
        return None
    registry = _read(root / "models.toml") or b""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("TRAJAUDIT_") or k == "TZ")
    h = hashlib.sha256(json.dumps([argv, str(root), env, files, _code_stamp(), _libraries()]).encode())
    for part in (manifest, registry):
        h.update(hashlib.sha256(part).digest())
    return Kept(root, manifest, h.hexdigest()[:32])


def _store_root(argv: list[str]) -> Path:
    """``--store``'s folder as ``store.store.resolve_root`` finds it (the argument, ``TRAJAUDIT_STORE``,
    ``./trajaudit-data``), read from the raw line so nothing is parsed or imported before a hit."""
    given = None
    for k, a in enumerate(argv):
        if a == "--store" and k + 1 < len(argv):
            given = argv[k + 1]
        elif a.startswith("--store="):
            given = a.split("=", 1)[1]
    return Path(given or os.environ.get("TRAJAUDIT_STORE") or "trajaudit-data").expanduser().resolve()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _listed_files(root: Path, manifest: bytes) -> list[tuple[str, int, int, int]] | None:
    """Every file the manifest lists, with its size, modification time and inode: a file changed in place
    (damaged, restored by hand) keys new answers. None when one is gone, a link or not the store's own
    (the command runs, and names it), never following an entry out of the store."""
    out = []
    try:
        for rel in (rel for files in json.loads(manifest)["files"].values() for rel in files):
            if Path(rel).is_absolute() or ".." in Path(rel).parts:  # not the store's own file: the run refuses it
                return None
            st = os.lstat(root / rel)
            if not stat.S_ISREG(st.st_mode):  # a link (maybe out of the store) or no file: left to the run
                return None
            out.append((rel, st.st_size, st.st_mtime_ns, st.st_ino))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return out


def _inside(root: Path, path: Path) -> bool:
    """``path`` (as far as it exists) resolves inside the store: a ``.cache`` linked out is never used."""
    return path.resolve().is_relative_to(root)


def _libraries() -> list[tuple[str, int]]:
    """The interpreter and the modification time of each folder on the import path: installing, upgrading
    or removing a package (NumPy, DuckDB, SciPy compute the numbers) changes its site-packages folder."""
    folders = [p for p in sys.path if p and os.path.isdir(p)]  # not "" (the working folder of `python -c`)
    return [(sys.executable, 0), *((p, os.stat(p).st_mtime_ns) for p in folders)]


def _code_stamp() -> list[tuple[str, int, int]]:
    """Every source file of the code that answers, with its modification time and size: an edited or
    upgraded checkout keys new answers (177 files, about 2 ms to list)."""
    stamp = []
    for top in ("backend", "store"):
        for folder, _, names in os.walk(_CODE / top):
            for name in names:
                if name.endswith(".py"):
                    st = os.stat(os.path.join(folder, name))
                    stamp.append((os.path.join(folder, name), st.st_mtime_ns, st.st_size))
    return sorted(stamp)
