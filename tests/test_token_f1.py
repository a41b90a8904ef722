"""Token-F1 (``store.token_f1``): cases from the definition, and the module stays a leaf that both
ingest (store) and analysis/worker (backend) may import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from store.token_f1 import token_f1

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("prediction", "references", "expected"),
    [
        ("The cat sat.", "a cat sat", 1.0),  # case, punctuation and articles do not count
        ("", "", 1.0),  # both empty
        ("the", "a an", 1.0),  # both empty after normalisation
        ("", "cat", 0.0),  # one side empty
        ("cat", "", 0.0),
        ("cat dog", "dog", 2 * 0.5 * 1.0 / 1.5),  # precision 1/2, recall 1
        ("dog dog cat", "dog cat cat", 2 / 3),  # multisets: common {dog, cat} = 2 of 3 each
        ("red car", ["blue bike", "a red car!"], 1.0),  # max over references
        ("red car", ["blue bike", "red"], 2 * 0.5 * 1.0 / 1.5),
        ("Hello, world", "hello world", 1.0),
        ("none", [], 0.0),  # no reference = one empty reference
    ],
)
def test_token_f1(prediction, references, expected):
    assert token_f1(prediction, references) == pytest.approx(expected)


def test_token_f1_is_a_leaf_module():
    tree = ast.parse((REPO / "store" / "token_f1.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported, "the parse found no imports at all: the check would pass vacuously"
    assert {m.split(".")[0] for m in imported} <= {"__future__", "re", "collections"}
