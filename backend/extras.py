"""Which optional parts of trajaudit are installed here, and the one line that says what to install.

``pip install trajaudit`` (the core) browses: dashboard, CLI, ingest, metrics, reports, video strips.
Inference (workers, re-runs, sweeps, pruning) needs ``trajaudit[worker]``: torch, torchvision,
transformers, tokenizers, safetensors (6 GB with torch's CUDA libraries). Commands that answer items
check here first, so a browsing install says what is missing in one line instead of failing with an
``ImportError`` deep inside the inference stack. Imports nothing heavy itself.
"""

from __future__ import annotations

from importlib.util import find_spec

from store.errors import UserError

WORKER_EXTRA = ("torch", "torchvision", "transformers", "tokenizers", "safetensors")
WORKER_INSTALL = "pip install 'trajaudit[worker]'"


def importable(name: str) -> bool:
    """Whether ``import name`` can succeed, without importing it (a blocked ``sys.modules`` entry counts as absent)."""
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[name] is None or has no spec
        return False


def missing_worker_extra() -> list[str]:
    """The worker extra's packages that cannot be imported here (empty when inference can run)."""
    return [name for name in WORKER_EXTRA if not importable(name)]


def require_worker_extra(what: str) -> None:
    """``UserError`` naming what to install when ``what`` (e.g. ``"trajaudit worker"``) cannot run here."""
    missing = missing_worker_extra()
    if missing:
        raise UserError(f"{what} needs the inference extra ({', '.join(missing)} not installed): {WORKER_INSTALL}")
