"""The docs document what the code offers: the CLI reference (docs/cli.md) is the parser's, every command
and every dashboard page is described (the README's tour), and every document the README links to exists
(the way datasette tests its documentation against its code)."""

from __future__ import annotations

import re
from pathlib import Path

from backend.cli import COMMANDS, build_parser
from backend.cli.reference import END, START, reference, replace_block

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
CLI_DOC = (REPO / "docs" / "cli.md").read_text()


def test_the_cli_reference_in_the_docs_is_generated_from_the_parser():
    current = CLI_DOC.split(START, 1)[1].split(END, 1)[0].strip()
    assert current == reference(), "stale: run `python -m backend.cli.reference --write docs/cli.md`"


def test_every_command_is_in_the_reference_with_its_usage():
    block = reference()
    for name in COMMANDS:
        assert f"| `{name}` |" in block
        assert re.search(rf"^trajaudit {name}\b", block, re.M), name


def test_every_registered_command_is_listed_in_the_commands_table():
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(subparsers.choices) == set(COMMANDS)


def test_every_page_of_the_app_is_described_in_the_readme():
    app = (REPO / "app.py").read_text()
    pages = re.findall(r'st\.Page\("pages/(\w+)\.py", title="([^"]+)"', app)
    assert {p for p, _ in pages} == {p.stem for p in (REPO / "pages").glob("*.py") if p.stem != "__init__"}
    table = README.split("| page | what it shows |", 1)[1]
    for _, title in pages:
        assert re.search(rf"^\| {re.escape(title)} \| \S", table, re.M), (
            f"page {title!r} is not in the README's page table"
        )


def test_replace_block_keeps_the_text_around_the_markers():
    text = f"before\n{START}\nold\n{END}\nafter"
    assert replace_block(text, "new") == f"before\n{START}\nnew\n{END}\nafter"


def test_every_document_the_readme_links_to_exists():
    links = re.findall(r"\]\(((?:docs|benchmarks|assets)/[^)#]+)", README)
    assert len(links) >= 9
    for link in links:
        assert (REPO / link).is_file(), link
