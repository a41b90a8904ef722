"""Runs trajaudit commands in forked children, each killed with SIGKILL at a chosen point of its write.

The store promises that a write is committed exactly when its write-log entry is in place (``store.log``),
so a test needs to kill a writer before, at and after that point and know which happened. Starting a
Python process per command costs a second or more (pandas, DuckDB, pyarrow); this driver imports them
once and forks a child per command. The parent never opens DuckDB or writes anything, so the fork is
clean. Protocol: one JSON request per stdin line, ``{"argv": [...], "kill": null | ["add", n] |
["commit"] | ["publish"]}``; one JSON answer per line, ``{"rc": int | null, "killed": bool,
"committed": bool}``: ``committed`` is whether the command's first write-log entry was written (the
child says so through a pipe before any kill after it).

* ``["add", n]``: killed right after the n-th data file of the command is renamed into place;
* ``["commit"]``: right after the first write-log entry (committed, manifest not yet swapped);
* ``["publish"]``: right after the first manifest swap (before the write settles).
"""

from __future__ import annotations

import json
import os
import signal
import sys

import backend.cli
import store.log
import store.store


def _child(argv: list[str], kill: list | None, report: int) -> None:
    """Patch the kill point in, run the command, exit with its code (or die by SIGKILL)."""
    adds, commits = [0], [0]
    add, write, save = store.store.Writer.add, store.log.write, store.store.Manifest.save

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def counted_add(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = add(self, *args, **kwargs)
        adds[0] += 1
        if kill == ["add", adds[0]]:
            die()
        return out

    def logged(root, version, text):  # type: ignore[no-untyped-def]
        write(root, version, text)
        commits[0] += 1
        os.write(report, b"C")
        if kill == ["commit"] and commits[0] == 1:
            die()

    def saved(self, target):  # type: ignore[no-untyped-def]
        save(self, target)
        if kill == ["publish"] and commits[0] == 1:
            die()

    store.store.Writer.add = counted_add  # type: ignore[method-assign]
    store.log.write = logged
    store.store.Manifest.save = saved  # type: ignore[method-assign]
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        rc = backend.cli.main(argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        rc = 1
    os._exit(rc)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        read, report = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(request["argv"], request.get("kill"), report)
        os.close(report)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read, "rb") as pipe:
            committed = bool(pipe.read())
        killed = os.WIFSIGNALED(status)
        rc = None if killed else os.WEXITSTATUS(status)
        print(json.dumps({"rc": rc, "killed": killed, "committed": committed}), flush=True)


if __name__ == "__main__":
    main()
