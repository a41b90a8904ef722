"""Resolve the core and the worker extra for macOS arm64 and Linux aarch64 from the package index.

CI runs on x86-64 Linux, so a broken pin for another platform (a release without a wheel there, as
decord 0.6.0 has none for macOS arm64 or Linux aarch64) would only show on a user's machine. This
asks pip to resolve ``pyproject.toml``'s pinned dependencies plus the ``worker`` extra for each
target with ``--only-binary=:all: --platform ... --python-version 3.11`` and fails, naming the
requirement, when one has no wheel there.

Two things make it cheap and right:

- ``pip install --dry-run --report`` with ``--use-feature=fast-deps`` reads each wheel's metadata
  through HTTP range requests instead of downloading it (torch's wheels alone are GBs with their
  CUDA libraries; the index here serves no separate metadata files, PEP 658). Nothing is installed.
- pip evaluates environment markers against the machine it runs on, not ``--platform`` (torch's
  ``cuda-bindings; platform_system == "Linux"`` would be wanted on macOS, and decord's own marker
  would be judged for x86-64). So pip runs here with ``packaging``'s marker environment replaced
  by the target's: the same evaluation an install on that machine does.

Only the public index is asked (this machine's local mirrors and find-links are left out): a wheel
a user cannot get must not pass. Usage: ``python .ci/resolve_platforms.py [--target NAME]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = "3.11"
# name -> (pip --platform tags, marker environment of such a machine)
TARGETS: dict[str, tuple[list[str], dict[str, str]]] = {
    "macOS arm64": (
        ["macosx_14_0_arm64"],
        {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64", "os_name": "posix"},
    ),
    "Linux aarch64": (  # a glibc 2.28 machine (RHEL 8; Ubuntu 20.04 has 2.31): pip does not expand
        # manylinux_2_28 to the older tags itself, and torch ships 2_28 wheels, cuDNN 2_27, most 2014 (2_17)
        ["manylinux2014_aarch64", *(f"manylinux_2_{minor}_aarch64" for minor in range(28, 16, -1))],
        {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64", "os_name": "posix"},
    ),
}
# Runs inside the child pip: markers see the target (argv[1], JSON), then pip's own CLI (argv[2:]).
_PIP = """
import json, sys
from pip._vendor.packaging import markers
target, own = json.loads(sys.argv[1]), markers.default_environment
markers.default_environment = lambda: {**own(), **target}
from pip._internal.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def requirements() -> list[str]:
    """The core's pinned dependencies and the worker extra's, markers included."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["worker"]]


def start(name: str, reqs: list[str], workdir: Path) -> tuple[subprocess.Popen, Path, float]:
    """pip resolving ``reqs`` for target ``name`` (running; its JSON report goes to the returned path)."""
    platforms, env = TARGETS[name]
    env = env | {
        "python_version": PYTHON,
        "python_full_version": f"{PYTHON}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    workdir.mkdir(parents=True)
    report = workdir / "report.json"
    args = [
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--use-feature=fast-deps",
        "--report",
        str(report),
        "--only-binary=:all:",
        "--python-version",
        PYTHON,
        "--implementation",
        "cp",
        "--target",
        str(workdir / "target"),
        "--disable-pip-version-check",
    ]
    for platform in platforms:
        args += ["--platform", platform]
    # The public index only: no local mirrors, find-links or constraints from this machine's pip config.
    child_env = os.environ | {
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
        "PIP_CONSTRAINT": "",
        "PIP_NO_INPUT": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _PIP, json.dumps(env), *args, *reqs],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, report, time.perf_counter()


def finish(name: str, reqs: list[str], proc: subprocess.Popen, report: Path, t0: float) -> tuple[bool, str]:
    """(resolved, a summary naming each pinned wheel, or the requirement that has none) for target ``name``."""
    _, stderr = proc.communicate()
    seconds = time.perf_counter() - t0
    platforms = TARGETS[name][0]
    head = f"{name} ({', '.join(platforms[:2])}{', ...' if len(platforms) > 2 else ''}; CPython {PYTHON})"
    if proc.returncode != 0:
        missing = re.findall(r"No matching distribution found for (\S+)", stderr)
        why = f"no wheel there for {', '.join(missing)}" if missing else " ".join(stderr.strip().splitlines()[-1:])
        return False, f"{head}: FAILED after {seconds:.0f} s: {why}"
    installs = json.loads(report.read_text())["install"]
    pinned = {re.split(r"[=;\s]", r, maxsplit=1)[0].lower() for r in reqs}
    chosen = {i["metadata"]["name"].lower(): i["download_info"]["url"].rsplit("/", 1)[-1] for i in installs}
    skipped = sorted(pinned - set(chosen))  # left out by their markers here (decord)
    lines = [f"{head}: {len(installs)} wheels resolve in {seconds:.0f} s; pinned:"]
    lines += [f"  {chosen[p]}" for p in sorted(pinned & set(chosen))]
    if skipped:
        lines.append(f"  not installed here (environment marker): {', '.join(skipped)}")
    return True, "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=sorted(TARGETS), action="append", help="default: every target")
    args = parser.parse_args()
    reqs = requirements()
    ok = True
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trajaudit-resolve-") as tmp:
        names = args.target or list(TARGETS)
        running = {name: start(name, reqs, Path(tmp) / name.replace(" ", "-")) for name in names}  # in parallel
        for name, (proc, report, started) in running.items():
            resolved, summary = finish(name, reqs, proc, report, started)
            if not resolved and "no wheel there" not in summary:  # the index did not answer: once more, alone
                print(f"{summary}; trying {name} once more", flush=True)
                resolved, summary = finish(
                    name, reqs, *start(name, reqs, Path(tmp) / f"{name.replace(' ', '-')}-again")
                )
            print(summary, flush=True)
            ok &= resolved
    print(f"resolved {len(names)} platform(s) in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
