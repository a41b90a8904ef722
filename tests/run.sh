#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: the README's test command and what CI calls.
# - a virtual environment in .venv with the project and its test extras (pinned in pyproject.toml);
# - Debian's Chromium for the browser tests (Playwright cannot download its own browser here);
# - pytest over tests/, offline (no model or data downloads).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# This machine's pip config names local package mirrors that lack some folders; pip warns once per
# package. Drop only those lines (pipefail keeps pip's own exit status).
quiet() { "$@" 2>&1 | sed '/is ignored: it is neither a file nor a directory/d'; }
quiet .venv/bin/python -m pip install -q --upgrade pip
quiet .venv/bin/python -m pip install -q -e '.[test]'

if [ ! -x /usr/bin/chromium ]; then
  echo "Installing Debian's chromium for the browser tests..."
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium >/dev/null
fi

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONUNBUFFERED=1
# Lint and format first: a style diff fails the run like a failing test ([tool.ruff] in pyproject.toml).
.venv/bin/ruff check .
.venv/bin/ruff format --check --quiet .
set +e
.venv/bin/python -m pytest tests -q -ra --timeout=900 "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
