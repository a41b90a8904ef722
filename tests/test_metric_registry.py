"""One definition per metric (``backend.present.metrics``): every metric a surface shows (the Overview's cards,
the headline, transition and task-type tables that the pages, the report and ``compare`` draw, the CLI's
``metrics`` text, the Compare page's bars) is in the registry, with a plain definition, a formula in
``backend/analysis`` and an anchor in docs/metrics.md, whose plain-words table is the registry's (the way
datasette's ``test_docs`` holds its settings to their documentation)."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import re
from pathlib import Path

import pytest

from backend import views
from backend.cli import main
from backend.cli.metrics import render, score_lines
from backend.contracts.audits import CrossmodelAudit, IsoGroup, NoiseAudit
from backend.contracts.policies import CascadeMatch, CascadeThresholdReport, PredictorReport
from backend.contracts.runs import BatchComparison
from backend.contracts.views import OverviewReport
from backend.present import tables
from backend.present.metrics import (
    AUDIT_METRICS,
    AUDIT_QUANTITIES,
    CARDS,
    COMPARE_METRICS,
    END,
    HEADLINES,
    METRICS,
    POLICY_METRICS,
    POLICY_QUANTITIES,
    RATES,
    RERUN_QUANTITIES,
    SCORE_METRICS,
    START,
    TASK_RATES,
    glossary,
    replace_block,
)
from backend.report import tables as report_tables
from backend.report.data import report_data
from backend.scope.resolve import Scope
from backend.scope.view import open_view
from store.store import Store
from tests.matrix_fixtures import BASIC, build_store

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "metrics.md").read_text()
NOT_METRICS = {"n"}  # a group's size: a count of the rows it stands for, not a metric of the items


@pytest.fixture(scope="module")
def basic_store(tmp_path_factory) -> Store:
    return build_store(tmp_path_factory.mktemp("registry") / "store", BASIC)


@pytest.fixture(scope="module")
def overview(basic_store) -> OverviewReport:
    resolved = Scope(benchmark="bench", models=("m",)).resolve(basic_store)
    return views.overview(open_view(basic_store, resolved), bootstrap=50)


REGISTRIES = {
    "accuracy": METRICS,
    "scores": SCORE_METRICS,
    "audits": AUDIT_METRICS,
    "policies": POLICY_METRICS,
    "compare": COMPARE_METRICS,
}
EVERY_METRIC = [m for registry in REGISTRIES.values() for m in registry.values()]


@pytest.mark.parametrize(("registry", "key"), [(name, k) for name, registry in REGISTRIES.items() for k in registry])
def test_every_metric_has_a_plain_definition_a_formula_and_a_docs_anchor(registry, key):
    m = REGISTRIES[registry][key]
    assert m.key == key and m.label and m.label[0].isupper()
    assert "\n" not in m.definition and m.definition.endswith(".") and len(m.definition) <= 140, m.definition
    assert "_" not in m.definition, "a plain definition names no code"
    assert callable(m.formula) and m.formula.__module__.startswith(("backend.analysis.", "backend.scope.tags"))
    # a formula imported when called (the predictor's) names a function that is there
    assert callable(getattr(importlib.import_module(m.formula.__module__), m.formula.__name__))
    assert f'<a id="{m.anchor}"></a>' in DOC, f"docs/metrics.md has no anchor {m.anchor!r} for {key}"


def test_the_docs_plain_words_table_is_the_registrys():
    current = DOC.split(START, 1)[1].split(END, 1)[0].strip()
    assert current == glossary(), "stale: run `python -m backend.present.metrics --write docs/metrics.md`"
    assert replace_block(f"a\n{START}\nold\n{END}\nb", "new") == f"a\n{START}\nnew\n{END}\nb"


def surface_keys(table: tables.Table) -> set[str]:
    return {k for k in table.keys if k is not None} - NOT_METRICS


def test_every_table_the_pages_and_the_report_show_names_registered_metrics(overview, basic_store, tmp_path):
    shown = {
        "headlines": tables.headline_table(overview.models, overview.n_items, overview.grid),
        "transitions": tables.overview_transitions(overview.models),
        "task types": tables.task_table(overview.task_types["m"], "m"),
    }
    for name, table in shown.items():
        assert surface_keys(table) <= set(METRICS), (name, surface_keys(table) - set(METRICS))
        assert [table.columns[table.keys.index(k)] for k, _ in HEADLINES if k in table.keys] == [
            METRICS[k].label for k, _ in HEADLINES if k in table.keys
        ], f"{name}: a column's header is not its registered label"
    # the report's own tables (HTML, LaTeX, Markdown) are built from the same registry
    resolved = Scope(benchmark="bench", models=("m",)).resolve(basic_store)
    data = report_data(basic_store, resolved, gallery_items=0, bootstrap=0, video_root=tmp_path)
    for table in report_tables.paper_tables(data):
        assert surface_keys(table) <= set(METRICS), (table.name, surface_keys(table) - set(METRICS))


def test_the_overview_cards_and_task_rates_are_registered_headlines():
    assert set(CARDS) <= {k for k, _ in HEADLINES} and {k for k, _ in TASK_RATES} <= set(METRICS)


def test_the_cli_metrics_table_labels_every_line_with_a_registered_label(overview):
    lines = render(overview).splitlines()
    start = lines.index("== m")
    rows = lines[lines.index("accuracy (pp):", start) + 1 :]
    labels = [line[:31].strip() for line in rows if not line.startswith("  ")]
    header = next(line for line in labels if line.startswith("transitions"))
    labels = labels[: labels.index(header)]
    registered = {m.label for m in METRICS.values()}
    assert labels and set(labels) <= registered, set(labels) - registered
    assert [m.label for m in METRICS.values() if m.key in dict(HEADLINES) or m.key == "terminal_regressions"] == labels
    heads = next(line for line in lines if line.startswith("transitions"))
    for key in ("rescued", "harmed", "net", "churn", "mcnemar_p"):
        assert METRICS[key].label in heads, key


def test_the_compare_page_and_cli_show_registered_metrics(demo_store, capsys):
    tree = ast.parse((REPO / "pages" / "compare.py").read_text())
    bars = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and node.targets[0].id == "BAR_KEYS"  # type: ignore[attr-defined]
    )
    keys = {key.value for key in bars.elts}  # type: ignore[attr-defined]
    assert keys and keys <= set(METRICS), keys - set(METRICS)
    # The CLI's text prints the Overview's headline table: a column per headline, under its registered label.
    assert (
        main(["compare", "--store", str(demo_store), "--models", "synthetic-A-7B,synthetic-B-13B", "--bootstrap", "0"])
        == 0
    )
    header = capsys.readouterr().out.splitlines()[1]
    assert all(METRICS[key].label in header for key in RATES), header


def test_every_score_number_the_report_the_cli_and_the_page_show_is_a_registered_score_metric(demo_store, tmp_path):
    """On the demo's open-ended benchmark: the report's score tables' keys and headers, the CLI's score lines and
    the Overview's score cards all name registered score metrics, under their registered labels."""
    store = Store(demo_store)
    resolved = Scope(benchmark="synthetic-mlvu", models=("synthetic-A-7B", "synthetic-B-13B")).resolve(store)
    data = report_data(store, resolved, gallery_items=0, bootstrap=0, video_root=tmp_path)
    shown = [t for t in report_tables.paper_tables(data) if t.name in ("scores", "score_transitions")]
    assert len(shown) == 2, [t.name for t in report_tables.paper_tables(data)]
    for table in shown:
        keys = {re.sub(r"\[.*\]$", "", k) for k in table.keys if k is not None} - {"n_items"}
        assert keys and keys <= set(SCORE_METRICS), keys - set(SCORE_METRICS)
        for k in table.keys:
            if k in SCORE_METRICS:
                assert table.columns[table.keys.index(k)] == SCORE_METRICS[k].label, (table.name, k)
    scored = data.overview.models["synthetic-A-7B"].continuous
    assert scored, "the demo's open-ended benchmark is scored"
    lines = score_lines(scored)
    labels = {line[:31].strip() for line in lines if not line.startswith(("  ", "scores", "score transitions"))}
    assert labels and labels <= {m.label for m in SCORE_METRICS.values()}, labels
    heads = next(line for line in lines if line.startswith("score transitions"))
    for key in ("improved", "regressed", "unchanged", "regression_rate", "sign_p"):
        assert SCORE_METRICS[key].label in heads, key
    page = (REPO / "pages" / "common" / "scores.py").read_text()
    cards = set(re.findall(r'SCORE_METRICS\["(\w+)"\]', page)) | set(re.findall(r"SCORE_METRICS\['(\w+)'\]", page))
    assert cards >= {"best_fixed", "oracle_mean", "oracle_gap"} and cards <= set(SCORE_METRICS)


# Where a page writes a number's name: a card's label (``ui.Card``, ``ui.rate_card``, the score cards; st.metric's on
# the Workers page), a table column's header. A registered metric's name there comes from the registry, never typed.
LABEL_ARGUMENT = {"metric": 0, "Card": 0, "rate_card": 0, "_points_card": 0}
COLUMN_KINDS = {"Column", "NumberColumn", "TextColumn", "ProgressColumn"}


def _typed_labels(path: Path, with_kind: bool = False) -> list:
    """(line, text) of every label a page file types as a literal in a label position; with ``with_kind``,
    (line, text, "card" or "column"). An f-string's text is its literal parts; a card whose label is an f-string
    around a model or configuration name (``"{model} @ {config}"``) has no literal metric name to check."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        at = 0 if name in COLUMN_KINDS else LABEL_ARGUMENT.get(name or "")
        if at is None or len(node.args) <= at:
            continue
        arg, kind = node.args[at], "column" if name in COLUMN_KINDS else "card"
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.append((node.lineno, arg.value, kind))
        elif isinstance(arg, ast.JoinedStr) and kind == "column":  # an f-string: its literal parts
            found.append((node.lineno, "".join(v.value for v in arg.values if isinstance(v, ast.Constant)), kind))
        elif isinstance(arg, ast.JoinedStr):  # a card's f-string: its literal parts unless they only join names
            text = "".join(v.value for v in arg.values if isinstance(v, ast.Constant))
            found.append((node.lineno, "" if not text.strip(" @·()/→,:") else text, kind))
    return found if with_kind else [(line, text) for line, text, _ in found]


def _plain(text: str) -> str:
    return re.sub(r"\s*\((pp|%|pair)\)$", "", text.strip().lower())


# The contracts whose fields the quantities beside the metrics are (``backend.present.metrics.Quantity``).
QUANTITY_CONTRACTS = {
    "audits": (AUDIT_QUANTITIES, (IsoGroup, NoiseAudit, CrossmodelAudit)),
    "policies": (POLICY_QUANTITIES, (CascadeThresholdReport, CascadeMatch, PredictorReport)),
    "re-run": (RERUN_QUANTITIES, (BatchComparison,)),
}
# Card definitions a page words around data (the configurations compared), which no registry entry can say.
WORDED_AROUND_DATA = {"pages/common/rerun_panel.py": "Items wrong at  and right under  / the other way round."}


@pytest.mark.parametrize("where", QUANTITY_CONTRACTS)
def test_every_quantity_beside_the_metrics_is_a_contract_field_with_a_plain_definition(where):
    quantities, contracts = QUANTITY_CONTRACTS[where]
    fields = {f for contract in contracts for f in contract.__struct_fields__}
    for q in quantities.values():
        assert q.key in fields, f"{where}: {q.key} is no field of {[c.__name__ for c in contracts]}"
        assert q.label[0].isupper() and q.definition.endswith(".") and len(q.definition) <= 140, q
        assert "_" not in q.definition, "a plain definition names no code"
        assert f"| {q.label} ({where}) | `{q.key}` | {q.definition} |" in DOC, "docs/metrics.md's table lacks it"


def _card_calls(path: Path) -> list[ast.Call]:
    """Every card a page file draws: its calls of ``ui.Card``, ``ui.rate_card`` and ``_points_card``."""
    calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]
    return [c for c in calls if _name(c) in LABEL_ARGUMENT and _name(c) != "metric"]


def _name(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)


def _card_definitions(path: Path) -> list[tuple[int, str]]:
    """(line, literal text) of every definition a page types for a card: the fourth argument or ``definition=``; an
    f-string's text is its literal parts, unless it qualifies a registered definition."""
    found = []
    for call in _card_calls(path):
        args = [a for k, a in enumerate(call.args) if k == 3] + [
            k.value for k in call.keywords if k.arg == "definition"
        ]
        for arg in args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value:
                found.append((call.lineno, arg.value))
            elif isinstance(arg, ast.JoinedStr) and not _qualifies_a_definition(arg):
                found.append((call.lineno, "".join(v.value for v in arg.values if isinstance(v, ast.Constant))))
    return found


def _qualifies_a_definition(text: ast.JoinedStr) -> bool:
    """An f-string that starts with a registered definition (``f"{rate.definition} The step with the most
    regressions."``): the registry's sentence, then which instance the card shows."""
    first = text.values[0] if text.values else None
    return (
        isinstance(first, ast.FormattedValue)
        and isinstance(first.value, ast.Attribute)
        and first.value.attr == "definition"
    )


def test_no_card_on_a_page_is_labelled_or_defined_by_hand():
    """A number on a page's card (``ui.Card``, ``ui.rate_card``, ``st.metric``) reads its label and its plain
    definition from ``backend.present.metrics``: a metric from its registry, a count or a setting from the quantities
    beside them. A card's label may be an f-string around a model's or a configuration's name (no literal text)."""
    files = [*sorted((REPO / "pages").rglob("*.py")), REPO / "app.py"]
    assert sum(len(_card_calls(path)) for path in files) > 25  # the scan sees the pages' cards
    typed = [
        (f"{path.relative_to(REPO)}:{line}", text)
        for path in files
        for line, text, kind in _typed_labels(path, with_kind=True)
        if kind == "card" and text.strip()
    ]
    assert not typed, f"read these cards' labels from backend.present.metrics: {typed}"
    defined = [
        (str(path.relative_to(REPO)), line, text)
        for path in files
        for line, text in _card_definitions(path)
        if WORDED_AROUND_DATA.get(str(path.relative_to(REPO))) != text
    ]
    assert not defined, f"read these cards' definitions from backend.present.metrics: {defined}"


def _run(argv: list[str]) -> str:
    from backend.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0, argv
    return out.getvalue()


# The text lines of the policies' and audits' commands: each registered number they print, from their --json.
CLI_TEXT = [
    (["cascade", "--threshold", "0.5"], POLICY_METRICS, lambda r: [r], ("accuracy", "mean_frames_shared", "mean_frames_unshared")),
    (["cascade", "--sweep"], POLICY_METRICS, lambda r: [*r["frontier"][:3], r["matching"]], ("accuracy",)),
    (["cascade", "--sweep"], POLICY_METRICS, lambda r: [r["matching"]], ("saving",)),
    (["predictor"], POLICY_METRICS, lambda r: [r], ("target_hit_rate",)),
    (["predictor"], POLICY_METRICS, lambda r: r["frontier"][:3], ("accuracy",)),
    (["audit", "noise"], AUDIT_METRICS, lambda r: [r], ("n_items_noisy", "mean_item_flip_rate")),
    (["audit", "interventions"], AUDIT_METRICS, lambda r: r["protocols"], ("kappa_pooled",)),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "registry", "parts", "keys"), CLI_TEXT, ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_the_policies_and_audits_cli_text_prints_registered_labels_and_formats(demo_store, argv, registry, parts, keys):
    """``trajaudit cascade|predictor|audit`` print each registered number as the pages and the report do: the
    registry's label, then the value in its format (``Accuracy 55.4%``), never a label typed again."""
    args = [*argv, "--store", str(demo_store), "--model", "synthetic-A-7B"]
    text = _run(args)
    report = json.loads(_run([*args, "--json"]))
    for part in parts(report):
        for key in keys:
            value = part.get(key)
            assert f"{registry[key].label} {registry[key].format(value)}" in text, (argv, key, value)


@pytest.mark.slow
def test_the_crossmodel_cli_text_prints_the_registered_transition_metrics(demo_store):
    args = ["audit", "crossmodel", "--store", str(demo_store), "--models", "synthetic-A-7B,synthetic-B-13B"]
    args += ["--config", "64f"]
    text, report = _run(args), json.loads(_run([*args, "--json"]))
    for key in ("rescued", "harmed", "net", "mcnemar_p"):
        assert f"{METRICS[key].label} {METRICS[key].format(report[key])}" in text, key
