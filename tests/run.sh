#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: the README's test command and what CI calls.
# - a virtual environment in .venv with the project and its test extras (pinned in pyproject.toml);
# - Debian's Chromium for the browser tests (Playwright cannot download its own browser here);
# - lint and format checks;
# - the type check: mypy over backend/, store/ and pages/ ([tool.mypy] in pyproject.toml; cached in .mypy_cache);
# - the platform check: the core and the worker extra resolve to wheels for macOS arm64 and Linux
#   aarch64 (.ci/resolve_platforms.py: metadata only, nothing downloaded in full; needs the index);
# - pytest over tests/, offline (no model or data downloads), on every usable CPU (pytest-xdist: the
#   addopts in pyproject.toml; pass -n 0 for one process): the full tier in .venv, then the
#   torch-free tier in .venv-core (the core install plus the test tools, no inference stack), where
#   tests that need the worker extra are skipped with the reason (tests/conftest.py).
# Arguments go to both pytest runs. TRAJAUDIT_SKIP_RESOLVE=1 skips the platform check (offline work);
# TRAJAUDIT_VENV / TRAJAUDIT_CORE_VENV put the two environments elsewhere (default .venv, .venv-core).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${TRAJAUDIT_VENV:-.venv}
CORE=${TRAJAUDIT_CORE_VENV:-.venv-core}

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
# This machine's pip config names local package mirrors that lack some folders; pip warns once per
# package. Drop only those lines (pipefail keeps pip's own exit status).
quiet() { "$@" 2>&1 | sed '/is ignored: it is neither a file nor a directory/d'; }
# venv DIR EXTRAS: create DIR once, then (re)install the project with EXTRAS into it (a no-op when current).
venv() {
  [ -x "$1/bin/python" ] || "$PY" -m venv "$1"
  quiet "$1/bin/python" -m pip install -q --upgrade pip
  quiet "$1/bin/python" -m pip install -q -e ".[$2]"
}
# timed LABEL CMD...: run CMD, then print how long it took (the CI log keeps each step's cost).
timed() {
  local label=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  echo "[run.sh] $label: $((SECONDS - t0)) s"
  return "$rc"
}
# tier VENV: pytest over tests/ in VENV; pytest's "no tests collected" (5) is a failure here.
tier() {
  local rc=0
  "$1/bin/python" -m pytest tests -q -ra --timeout=900 "${@:2}" || rc=$?
  if [ "$rc" = 5 ]; then
    echo "pytest collected no tests in $1" >&2
    return 1
  fi
  return "$rc"
}

timed "full venv ($VENV, .[test])" venv "$VENV" test

if [ ! -x /usr/bin/chromium ]; then
  echo "Installing Debian's chromium for the browser tests..."
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium >/dev/null
fi

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONUNBUFFERED=1
# Lint and format first: a style diff fails the run like a failing test ([tool.ruff] in pyproject.toml).
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check --quiet .
# Types once, in the full venv (it has torch and transformers, whose annotations the runtime is checked against).
timed "type check (mypy backend store pages)" "$VENV/bin/mypy"
if [ "${TRAJAUDIT_SKIP_RESOLVE:-0}" != 1 ]; then
  timed "platform check (macOS arm64, Linux aarch64)" "$VENV/bin/python" .ci/resolve_platforms.py
fi

full=0 core=0
timed "full tier ($VENV)" tier "$VENV" "$@" || full=$?
timed "torch-free venv ($CORE, .[test-core])" venv "$CORE" test-core
timed "torch-free tier ($CORE)" tier "$CORE" "$@" || core=$?
echo "[run.sh] full tier exit $full, torch-free tier exit $core"
[ "$full" = 0 ] && [ "$core" = 0 ]
