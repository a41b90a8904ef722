"""The ``trajaudit`` command line: one module per command, each with ``register(subparsers)``.

Output with ``--json`` is the machine contract that pages, scripts and tests rely on.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from backend.errors import UserError, user_message

# Module names under backend.cli; each registers one or more sub-commands.
COMMAND_MODULES = [
    "ingest",
    "info",
    "metrics",
    "items",
    "demo",
    "compact",
    "cascade",
    "predictor",
    "audit",
    "annotate",
    "rerun",
    "jobs",
    "models",
    "worker",
    "flows",
    "compare",
    "inspect_item",
    "sweep",
    "check",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trajaudit",
        description="Audit how Video LLMs behave per item as their visual budget changes.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"backend.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"backend.cli.{name}":
                continue  # a command still being written; the others keep working
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"trajaudit {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"trajaudit {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours; silence the flush at exit.
        sys.stdout = open(os.devnull, "w")
        return 0
    except Exception as exc:  # a user-caused failure gets one line; a bug keeps its traceback
        message = user_message(exc)
        if message is None:
            raise
        print(f"trajaudit {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
