"""Arguments and output helpers shared by the commands."""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime
from typing import Any

import numpy as np

from backend.cli import COMMANDS, NOTES
from backend.contracts.base import Contract, to_json
from backend.scope.filters import split_list as split_list  # every command's comma lists, as the scope flags'
from backend.scope.resolve import Resolved
from backend.scope.runs import notice as runs_notice
from backend.scope.view import View, args_view, opening_models
from store.store import Store


def command(sub: argparse._SubParsersAction, name: str, description: str | None = None) -> argparse.ArgumentParser:
    """The parser of top-level command ``name``, with the ``--store`` option.

    Its one-line help is the one ``COMMANDS`` lists for ``trajaudit --help``: one text, so the two cannot
    disagree (a command's module is imported only when it runs, so the listing cannot read it from there).
    """
    p = _parser(sub, name, description)
    add_store(p)
    return p


def command_group(
    sub: argparse._SubParsersAction, name: str, dest: str, description: str | None = None
) -> argparse._SubParsersAction:
    """Top-level command ``name`` made of subcommands (one of which is required, stored in ``args.<dest>``);
    its help as ``command``'s. Each subcommand adds ``--store`` itself, after its name on the line."""
    actions = _parser(sub, name, description).add_subparsers(dest=dest, metavar=dest.upper())
    actions.required = True
    return actions


def _parser(sub: argparse._SubParsersAction, name: str, description: str | None) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=COMMANDS[name][1].replace("%", "%%"), description=description)


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, help="store folder (default: $TRAJAUDIT_STORE or ./trajaudit-data)")


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return _clean(float(o))
    if isinstance(o, np.ndarray):
        return _clean(o.tolist())
    if isinstance(o, datetime):  # a pandas Timestamp too (a subclass): its own isoformat
        return o.isoformat()
    if hasattr(o, "to_dict"):
        return _clean(o.to_dict())
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(o: Any) -> Any:
    """NaN and +-Infinity are not JSON: print null instead. A report (``backend.contracts``) as its JSON value."""
    if isinstance(o, Contract):
        return _clean(to_json(o))
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def note_benchmark(resolved: Resolved) -> Resolved:
    """Say on standard error which benchmark a command run without ``--benchmark`` took, when the store has
    others: its numbers are that benchmark's alone (``backend.scope.resolve.default_benchmark``), and the
    reader should not take them for the whole store's. ``--json`` states it as ``scope.benchmark_source``.
    The note is printed once the command succeeded (``backend.cli.main``), so a refusal stays one line."""
    if resolved.benchmark_source == "default" and len(resolved.benchmarks) > 1:
        others = ", ".join(b for b in resolved.benchmarks if b != resolved.scope.benchmark)
        NOTES.append(
            f"benchmark {resolved.scope.benchmark} (the largest the models share, as the dashboard opens; "
            f"also in the store: {others}; name one with --benchmark)"
        )
    return resolved


def note_models(models: tuple[str, ...] | list[str]) -> None:
    """Say on standard error which models a command run without ``--models`` took (``opening_models``)."""
    NOTES.append(f"models {', '.join(models)} (as the dashboard opens; name others with --models)")


def focus_model(args: argparse.Namespace) -> str:
    """A one-model command's ``--model``, else the dashboard's focus model when it opens (the first of
    ``opening_models``; said on standard error), so ``trajaudit flows`` alone prints what the Flows page first
    shows. The choice is written back to ``args.model``: a command that asks again gets the same model, and the
    note is said once."""
    if not args.model:
        args.model = opening_models(Store(args.store), args.benchmark)[0]
        NOTES.append(f"model {args.model} (the dashboard's focus model when it opens; name another with --model)")
    return str(args.model)


def note_runs(resolved: Resolved) -> Resolved:
    """Say on standard error which run each cell holding several shows (``backend.scope.runs``) and how to pick
    another; ``--json`` states it as ``scope.runs``. Printed once the command succeeded, like ``note_benchmark``."""
    said = runs_notice(resolved.runs)
    if said:
        NOTES.append(said)
    return resolved


def scope_view(args: argparse.Namespace, focus: str | None = None, pair: tuple[str, str] | None = None) -> View:
    """``backend.scope.view.args_view`` (the view the scope flags name; ``pair``: see there), with
    ``note_benchmark``'s and ``note_runs``' notes."""
    view = args_view(args, focus, pair)
    if focus is None and not getattr(args, "models", None):
        note_models(view.scope.models)
    note_benchmark(view.resolved)
    note_runs(view.resolved)
    return view


def print_json(obj: Any) -> None:
    """Strict JSON (``allow_nan=False``): a non-finite number that escaped cleaning raises, never prints."""
    json.dump(_clean(obj), sys.stdout, default=_default, indent=2, allow_nan=False)
    sys.stdout.write("\n")
