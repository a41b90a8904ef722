"""The ``trajaudit`` command line: one module per command, each with ``register(subparsers)``.

Output with ``--json`` is the machine contract that pages, scripts and tests rely on.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from backend.cli import answers
from backend.runtime import logs
from store.errors import UserError, user_message

# Every command: name -> (module under backend.cli, one-line help). ``trajaudit --help`` lists this
# table without importing any module; a command's module (and its heavy libraries) is imported only
# when that command runs. Adding a command is one line here plus its module with ``register(sub)``, which
# opens its parser with ``backend.cli.common.command`` (or ``command_group``): the help text is this table's.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("ingest", "read per-item outputs (lmms-eval, VLMEvalKit, Video-MME JSON, scale-grid CSV, long tables)"),
    "info": ("info", "models, benchmarks and configs in the store"),
    "metrics": ("metrics", "the Overview: accuracy, oracle, confusion, overwrite, transitions (95% CIs), task types"),
    "items": ("items", "the Items page: items with tags and per-config correctness (trajectory)"),
    "demo": ("demo", "build a synthetic demo store"),
    "compact": ("compact", "merge the store's small Parquet files"),
    "cascade": ("cascade", "confidence cascade: accuracy vs frame cost"),
    "predictor": ("predictor", "budget predictor from question, options and metadata (a bar per fold on a terminal)"),
    "audit": ("audit", "protocol, iso-compute, noise and cross-model audits"),
    "annotate": ("annotate", "tag items with evidence pathways and notes"),
    "rerun": ("rerun", "queue a re-run of one item or a selection (answered from the store when already there)"),
    "jobs": ("jobs", "list re-run jobs and workers; cancel a queued job"),
    "models": ("models", "register local checkpoints that workers may load"),
    "worker": ("worker", "run queued re-run jobs for one model"),
    "dispatch": ("dispatch", "run queued re-run jobs on Ray actors; this machine stays the store's one writer"),
    "flows": ("flows", "the Flows page: correct/wrong flows between configurations (the Sankey), with items"),
    "explain": ("explain", "why these items? slices, answer behaviour and agreement for a flow, tag or item list"),
    "compare": ("compare", "the Compare page: models side by side on their matched grid, confused-item overlap"),
    "inspect": ("inspect_item", "one item: question, every response, the frames each budget saw"),
    "sweep": ("sweep", "run a model over every missing (item, configuration) cell of a grid"),
    "check": ("check", "verify the store's manifest and every file it lists"),
    "repair": ("check", "rebuild a readable store from its intact files"),
    "videos": ("videos", "link benchmark items to their video files; check which are missing or unreadable"),
    "report": ("report", "a shareable report of the scope: one offline HTML file, LaTeX/Markdown tables or JSON"),
}


# Notes a command leaves for standard error (``backend.cli.common.note_benchmark``): printed after it
# succeeds, so a refusal stays the one line the error rule promises.
NOTES: list[str] = []


def _chosen(argv: list[str]) -> str | None:
    """The command named on the line (the first word that is not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


class _Version(argparse.Action):
    """``--version``: the installed package's version, read only when asked (``importlib.metadata`` costs every
    other command 25 ms to import)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("trajaudit")
        except PackageNotFoundError:
            found = "(not installed)"
        print(f"trajaudit {found}")  # on standard output, as argparse's own version action
        parser.exit()


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser with every command listed; only the module of the command in ``argv`` is imported.

    Without ``argv`` every command is registered in full (imports every module: for tests).
    """
    parser = argparse.ArgumentParser(
        prog="trajaudit",
        description="Audit how Video LLMs behave per item as their visual budget changes.",
    )
    parser.add_argument("--verbose", action="store_true", help="log debug lines too (timestamped, on stderr)")
    parser.add_argument("--version", action=_Version, nargs=0, help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = _chosen(argv) if argv is not None else None
    wanted = {module for name, (module, _) in COMMANDS.items() if argv is None or name == chosen}
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        if module in wanted:
            importlib.import_module(f"backend.cli.{module}").register(sub)
    for name, (_, help_text) in COMMANDS.items():
        if name not in sub.choices:  # listed for --help; its module is imported when it runs
            sub.add_parser(name, help=help_text.replace("%", "%%"), add_help=False)
    return parser


def _run(args: argparse.Namespace) -> int:
    """The command, then its notes on stderr (after it succeeded, so an error stays one line; inside what a
    kept answer records, so a kept answer prints them too)."""
    code = int(args.func(args) or 0)
    for note in NOTES:
        print(f"trajaudit {args.command}: {note}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    kept = answers.slot(argv)
    if kept is not None and kept.hit():  # printed as the same line printed it on this snapshot
        return 0
    args = build_parser(argv).parse_args(argv)
    logs.configure(args.verbose)
    NOTES.clear()
    try:
        if kept is not None:
            return kept.record(args, lambda: _run(args))
        return _run(args)
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
    finally:
        _settle()


def _settle() -> None:
    """Wait for the cache entries the command is still writing in the background, so that no thread it
    started outlives it (they are daemon threads: the process would otherwise end them half-way, which
    costs the next command a rebuild). Only where the command loaded the cache module: else none runs."""
    cache = sys.modules.get("backend.scope.cache_folder")
    if cache is not None:
        cache.settle()


if __name__ == "__main__":
    sys.exit(main())
