"""The report's tables (``backend.present.tables``, from the report's data) and their paper-ready forms.

The HTML report, ``--format latex`` (booktabs) and ``--format markdown`` all render these same
``Table`` values, which the Overview page and ``trajaudit metrics`` share, so a number reads the same
everywhere: percentage points with one decimal and the 95% interval in brackets, ``68.3 [61.7, 75.6]``;
a dash where a metric is not available (never 0). Text from data (model, config and task names) is
escaped for each target.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from backend.contracts.base import to_json, unset
from backend.contracts.common import Interval
from backend.contracts.explain import ExplainReport
from backend.contracts.report import ReportData
from backend.contracts.views import ContinuousMetrics, ModelMetrics
from backend.present import tables as frames
from backend.present.metrics import SCORE_METRICS
from backend.present.tables import Table
from backend.present.text import MISSING, count, interval, p_value, pp


def headline_table(data: ReportData) -> Table:
    """The Overview's headline table for the report's scope."""
    return frames.headline_table(data.overview.models, data.overview.n_items, data.scope.grid)


def transitions_table(data: ReportData) -> Table:
    """The Overview's transitions (rescued, harmed, net, churn, McNemar p) for the report's models."""
    return frames.overview_transitions(data.overview.models)


def task_table(data: ReportData) -> Table:
    """The Overview's table per task type of the focus model (Wilson intervals)."""
    return frames.task_table(data.task_types.rows, data.task_types.model)


SCORE_UNITS = "score points: mean score x 100; 95% paired-bootstrap interval in brackets"


def scored_models(models: Mapping[str, ModelMetrics]) -> dict[str, ContinuousMetrics]:
    """Per model with scores, its ``continuous`` summaries (the report's, the Overview's and Compare's)."""
    return {m: rec.continuous for m, rec in models.items() if rec.continuous}


def score_table(grid: Sequence[str], scored: Mapping[str, ContinuousMetrics]) -> Table:
    """Per scored model: mean score per configuration, best fixed, oracle mean and oracle gap, in score points.

    Scored items only: these numbers are never averaged with multiple-choice accuracy."""
    rows, values = [], []
    for model, c in scored.items():
        ci = c.ci
        means = [c.mean_score[g] for g in grid]
        best = c.best_fixed
        rows.append(
            [
                model,
                str(c.n_items),
                *(interval(v, (ci.mean_score or {}).get(g)) for v, g in zip(means, grid, strict=True)),
                f"{best.config} {pp(best.mean_score)}",
                pp(c.oracle_mean),
                interval(c.oracle_gap, unset(ci.oracle_gap)),
            ]
        )
        values.append([None, c.n_items, *means, best.mean_score, c.oracle_mean, c.oracle_gap])
    caption = (
        f"Scores of the scored (open-ended) items ({SCORE_UNITS}). Oracle mean: mean over items of the best score "
        "over configurations; oracle gap: oracle mean minus the best fixed configuration's mean score."
    )
    columns = [
        "Model",
        "Scored items",
        *grid,
        *(SCORE_METRICS[k].label for k in ("best_fixed", "oracle_mean", "oracle_gap")),
    ]
    keys = [None, "n_items", *(f"mean_score[{g}]" for g in grid), "best_fixed", "oracle_mean", "oracle_gap"]
    return Table("scores", caption, columns, rows, values, keys)


def score_transitions_table(scored: Mapping[str, ContinuousMetrics]) -> Table:
    """Per scored model and consecutive pair: items improved, regressed, unchanged, regression rate, sign-test p."""
    rows, values = [], []
    for model, c in scored.items():
        rates = unset(c.ci.regression_rate)
        cis: list[Interval | None] = list(rates) if rates else [None] * len(c.transitions)
        for t, ci in zip(c.transitions, cis, strict=True):
            rows.append(
                [
                    model,
                    f"{t.from_} → {t.to}",
                    str(t.improved),
                    str(t.regressed),
                    str(t.unchanged),
                    interval(t.regression_rate, ci),
                    p_value(t.sign_p),
                ]
            )
            values.append([None, None, t.improved, t.regressed, t.unchanged, t.regression_rate, t.sign_p])
    tolerance = next(iter(scored.values())).tolerance if scored else 0.0
    shown = ["improved", "regressed", "unchanged", "regression_rate", "sign_p"]
    caption = (
        f"Score transitions between consecutive configurations: items whose score rose (improved), fell (regressed) "
        f"or changed by at most {tolerance:g} (unchanged); regression rate in % of scored items with its 95% interval; "
        "exact sign-test p of improved vs regressed."
    )
    columns = ["Model", "Transition", *(SCORE_METRICS[k].label for k in shown)]
    return Table("score_transitions", caption, columns, rows, values, [None, None, *shown])


def paper_tables(data: ReportData) -> list[Table]:
    """The tables ``--format latex|markdown`` prints: headline, per-transition, per task type, and where the
    scope has scored items, the score tables."""
    return [headline_table(data), transitions_table(data), task_table(data), *score_tables(data)]


def score_tables(data: ReportData) -> list[Table]:
    """Where the scope has scored items, the score tables (per model, then per transition); else none."""
    scored = scored_models(data.overview.models)
    return [score_table(data.overview.grid, scored), score_transitions_table(scored)] if scored else []


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
                  "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                  "→": r"$\rightarrow$"}  # fmt: skip
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def latex_escape(text: str) -> str:
    """Text for a LaTeX document: every character TeX acts on becomes its literal form."""
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m[0]], " ".join(str(text).split()))


def latex(tables: list[Table]) -> str:
    """booktabs tables (``\\usepackage{booktabs}``), one ``table`` float each."""
    out = []
    for t in tables:
        spec = "l" + "r" * (len(t.columns) - 1)
        body = [" & ".join(latex_escape(c) for c in row) + r" \\" for row in t.rows]
        out += [
            r"\begin{table}[t]",
            r"\centering",
            r"\small",
            rf"\caption{{{latex_escape(t.caption)}}}",
            rf"\label{{tab:trajaudit-{t.name.replace('_', '-')}}}",
            rf"\begin{{tabular}}{{{spec}}}",
            r"\toprule",
            " & ".join(latex_escape(c) for c in t.columns) + r" \\",
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{table}",
            "",
        ]
    return "\n".join(out)


_MD_RE = re.compile(r"([\\`*_\[\]<>|#!~])")


def markdown_escape(text: str) -> str:
    """Text for a Markdown table cell: literal (no emphasis, link, HTML or column break), on one line."""
    return _MD_RE.sub(r"\\\1", " ".join(str(text).split()))


def _markdown_row(row: list[str], values: list[float | None]) -> str:
    """Text cells (names from data) escaped; number cells (written here, e.g. ``68.3 [61.7, 75.6]``) as they are."""
    return "| " + " | ".join(markdown_escape(c) if v is None else c for c, v in zip(row, values, strict=True)) + " |"


def markdown(tables: list[Table]) -> str:
    """GitHub-flavoured pipe tables, each after its caption."""
    out = []
    for t in tables:
        align = ["---"] + ["---:"] * (len(t.columns) - 1)
        out += [
            f"**{markdown_escape(t.caption)}**",
            "",
            "| " + " | ".join(markdown_escape(c) for c in t.columns) + " |",
            "| " + " | ".join(align) + " |",
            *(_markdown_row(row, values) for row, values in zip(t.rows, t.values, strict=True)),
            "",
        ]
    return "\n".join(out)


def as_json(data: ReportData) -> str:
    """The report's data as strict JSON (what the HTML draws), keys in a stable order."""
    return json.dumps(to_json(data), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def explain_table(report: ExplainReport) -> Table:
    """ "Why these items?": the ranked slices (one attribute, then two) with rate, lift, difference and p, q."""
    rows, values = [], []
    for s in report.slices + report.pairs:
        diff = interval(s.diff, s.diff_ci)
        rows.append(
            [
                s.label + (" (small)" if s.small else ""),
                f"{s.n_selected} / {s.n_slice}",
                pp(s.rate),
                MISSING if s.lift is None else f"{s.lift:.2f}",
                diff,
                p_value(s.p),
                p_value(s.q),
            ]
        )
        values.append([None, s.n_selected, s.rate, s.lift, s.diff, s.p, s.q])
    caption = (
        f"Why these items? {report.target.describe} of {report.model}: {report.n_selected:,} of "
        f"{count(report.n_scope, 'item')} (base rate {pp(report.base_rate)}%). Rate: % of the slice's items selected; "
        "difference: percentage points against the rest of the scope (Newcombe 95% interval); Fisher's exact p; "
        f"Benjamini-Hochberg q over {report.n_tests} slices; small: under {count(report.min_size, 'item')}."
    )
    columns = ["Slice", "Selected / in slice", "Rate", "Lift", "Difference", "p", "q"]
    return Table("explain", caption, columns, rows, values, [None, "n_selected", "rate", "lift", "diff", "p", "q"])
