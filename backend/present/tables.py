"""The tables a view is read as: text cells beside the numbers they show, built once for the pages, the CLI
and the report (HTML, LaTeX, Markdown), so a cell reads the same everywhere (``backend.present.text``).

Inputs are the views' reports (``backend.views.overview``'s ``models``, typed by ``backend.contracts``, and
its task-type rows, NaN or None where a metric is not available); text from data (model, config and task names) is left as it is: each target
escapes it for itself.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

from backend.contracts.base import UNSET, to_json, unset
from backend.contracts.common import Interval, Transition
from backend.contracts.views import ModelMetrics, Sankey, SankeyLink
from backend.present.metrics import HEADLINES, METRICS, TASK_RATES
from backend.present.metrics import RATES as METRIC_ORDER
from backend.present.text import MISSING, RATE_UNITS, interval, p_value, pp, signed_pp

if TYPE_CHECKING:  # pandas (0.3-0.6 s) is imported by the functions that build a frame: ``flows --json`` builds none
    import pandas as pd

# A report field as a table header: plain words in sentence case, the one style of every table. A field not
# listed reads as its words (``header``); these are the ones whose words alone would not say what they count.
HEADERS: dict[str, str] = {
    "n": "Items",
    "n_items": "Items",
    "n_excluded": "Excluded",
    "n_terminal": "Terminal regressions",
    "n_recovered": "Recovered",
    "n_a": "Selected in a",
    "n_b": "Selected in b",
    "a": "Model a",
    "b": "Model b",
    "kappa": "Cohen's kappa",
    "kappa_top": "Kappa at the top budget",
    "recovery_wilson": "Recovery rate, Wilson 95% CI",
    "unique_wins": "Right only here",
    "pixel_budget": "Pixel budget",
    "cost_vs_top": "Cost vs top",
    "cost_vs_top_shared": "Cost vs top, shared",
    "cost_vs_top_unshared": "Cost vs top, not shared",
    "mean_frames_shared": "Mean frames, shared",
    "mean_frames_unshared": "Mean frames, not shared",
    "expected": "Expected overlap",
    "p": "p",
    "item_id": "Item",
    "split_configs": "Configs split",
    "hidden_rescued": "Rescued within noise, left out",
    "hidden_harmed": "Harmed within noise, left out",
}


def header(field: str) -> str:
    """``field`` (a report's key) as a table header: ``HEADERS``' words, else its own with spaces for underscores
    and a capital first letter (``recovery_rate`` -> ``Recovery rate``)."""
    return sentence(HEADERS.get(field) or field.replace("_", " "))


def sentence(label: str) -> str:
    """A header in the tables' one style: a capital first letter, the rest as written ("confidence at 8f" ->
    "Confidence at 8f", "GPU" stays)."""
    return label[:1].upper() + label[1:]


def cell_text(value: object, fmt: str | None = None) -> str:
    """One cell as text: a dash where missing, else a number in ``fmt`` (a table column's format: "percent" or a
    printf pattern such as "%.3f"; None: whole numbers with thousands separators, others to 4 significant
    digits), anything else as it prints."""
    na = getattr(sys.modules.get("pandas"), "NA", None)  # pandas' missing value, if pandas is loaded at all
    if value is None or value is na or (isinstance(value, Real) and value != value):
        return MISSING
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    number = float(value)
    if fmt == "percent":
        return f"{100 * number:.2f}%"
    if fmt and fmt.startswith("%"):
        return fmt % number
    return f"{int(number):,}" if number.is_integer() else f"{number:.4g}"


def dashed(frame: pd.DataFrame, formats: Mapping[str, str | None] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with a dash in every missing cell, and the columns that became text to hold one: their numbers
    written by ``cell_text`` in ``formats[column]``. Columns without a missing value keep their numbers (they sort
    as numbers). Per cell only in those columns, which are a table's few (the tables shown are tens of rows)."""
    out, texts = frame.copy(), []
    for col in frame.columns:
        values = frame[col]
        if values.isna().any():
            fmt = (formats or {}).get(col)
            out[col] = [cell_text(v, fmt) for v in values.astype(object)]
            texts.append(col)
    return out, texts


@dataclass(frozen=True)
class Table:
    """``rows`` are display text; ``values[r][c]`` the number a cell shows (None for text cells), ``keys`` its metric name."""

    name: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    values: list[list[float | None]]
    keys: list[str | None]

    def frame(self) -> pd.DataFrame:
        """The text cells as a frame (what a page's table shows), one column per ``columns``."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns, dtype=object)


def headline_value(rec: ModelMetrics, name: str) -> float | None:
    """A headline's value in a model's metrics (the best fixed accuracy sits under its configuration)."""
    value: float | None = rec.best_fixed.accuracy if name == "best_fixed" else getattr(rec, name)
    return value


def headline_ci(rec: ModelMetrics, name: str) -> Interval | None:
    """A headline's 95% interval (None: not available, or no bootstrap)."""
    return unset(getattr(rec.ci, name))


def headline_table(models: Mapping[str, ModelMetrics], n_items: int, grid: Sequence[str]) -> Table:
    """Per model: the Overview's headline numbers with intervals, the best fixed configuration, terminal regressions."""
    rows, values = [], []
    for model, rec in models.items():
        nums = [headline_value(rec, name) for name, _ in HEADLINES]
        cells = [interval(v, headline_ci(rec, name)) for v, (name, _) in zip(nums, HEADLINES, strict=True)]
        rows.append([model, rec.best_fixed.config, *cells, str(rec.terminal_regressions)])
        values.append([None, None, *nums, rec.terminal_regressions])
    caption = (
        f"Headline metrics on {n_items:,} matched items, grid {', '.join(grid)} ({RATE_UNITS}). "
        "Terminal regressions: items correct at a cheaper configuration and wrong at the top one."
    )
    columns = ["Model", "Best config", *(label for _, label in HEADLINES), "Terminal regressions"]
    keys = [None, None, *(n for n, _ in HEADLINES), "terminal_regressions"]
    return Table("headlines", caption, columns, rows, values, keys)


def transitions_table(steps: Mapping[str, Sequence[Transition]]) -> Table:
    """Per model and step (a pair of configurations: the Overview's consecutive ones, a Sankey's): rescued, harmed,
    net and churn, McNemar p; with within-noise flips left out (``--beyond-noise``), how many each side left out."""
    hidden = any(unset(getattr(t, "hidden_rescued", UNSET)) is not None for ts in steps.values() for t in ts)
    rows, values = [], []
    for model, transitions in steps.items():
        for t in transitions:
            counts: list[float | None] = [t.rescued, t.harmed, t.net, t.churn, t.mcnemar_p]
            cells = [f"{t.rescued:,}", f"{t.harmed:,}", signed_pp(t.net), pp(t.churn), p_value(t.mcnemar_p)]
            if hidden:
                left_out = [unset(getattr(t, f"hidden_{side}", UNSET)) for side in ("rescued", "harmed")]
                counts += left_out
                cells += [MISSING if n is None else f"{n:,}" for n in left_out]
            rows.append([model, f"{t.from_} → {t.to}", *cells])
            values.append([None, None, *counts])
    caption = (
        "Transitions: items rescued (wrong → correct) and harmed (correct → wrong) from one configuration to the "
        "next, net and churn in percentage points, exact McNemar p"
        + ("; within-noise flips left out of the counts, and how many." if hidden else ".")
    )
    keys = [None, None, "rescued", "harmed", "net", "churn", "mcnemar_p"]
    keys += ["hidden_rescued", "hidden_harmed"] if hidden else []
    units = {"net": " (pp)", "churn": " (pp)"}
    named = [f"{METRICS[k].label}{units.get(k, '')}" if k in METRICS else header(k) for k in keys[2:] if k]
    return Table("transitions", caption, ["Model", "Transition", *named], rows, values, keys)


def overview_transitions(models: Mapping[str, ModelMetrics]) -> Table:
    """The Overview's transitions: every model's consecutive steps (``transitions_table``)."""
    return transitions_table({model: rec.transitions for model, rec in models.items()})


def task_table(rows: Sequence[Mapping[str, Any]], model: str) -> Table:
    """Per task type of one model (rows in the order given): group size and rates with their Wilson 95% intervals
    (a rate without ``<name>_lo`` has none)."""
    names = [n for n, _ in TASK_RATES]
    cells, values = [], []
    for r in rows:
        nums = [r[n] for n in names]
        cis = [[r[f"{n}_lo"], r[f"{n}_hi"]] if f"{n}_lo" in r else None for n in names]
        cells.append([r["task_type"], str(r["n"]), *(interval(v, ci) for v, ci in zip(nums, cis, strict=True))])
        values.append([None, r["n"], *nums])
    caption = (
        f"By task type, {model} (% of items; Wilson 95% interval in brackets, valid for small groups); "
        "n is the number of matched items of the type."
    )
    columns = ["Task type", "n", *(label for _, label in TASK_RATES)]
    return Table("task_types", caption, columns, cells, values, [None, "n", *names])


def headline_frame(models: Mapping[str, ModelMetrics]) -> pd.DataFrame:
    """One row per model of ``backend.analysis.metrics.mcqa_metrics`` output: each headline with its 95% interval.

    Columns ``<name>``, ``<name>_lo``, ``<name>_hi`` (fractions; NaN where not available, e.g. text
    overwrite without ``text`` in the grid), plus ``best_fixed_config`` and ``terminal_regressions``.
    """
    rows = []
    for model, rec in models.items():
        row: dict = {"model": model, "best_fixed_config": rec.best_fixed.config}
        for name in METRIC_ORDER:
            lo, hi = headline_ci(rec, name) or (None, None)
            row |= {name: headline_value(rec, name), f"{name}_lo": lo, f"{name}_hi": hi}
        row["terminal_regressions"] = rec.terminal_regressions
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows).astype(
        {n: float for n in METRIC_ORDER} | {f"{n}_{s}": float for n in METRIC_ORDER for s in ("lo", "hi")}
    )


def _links(view: Sankey) -> pd.DataFrame:
    """The Sankey's links as a frame, columns by their JSON names (``from``)."""
    import pandas as pd

    return pd.DataFrame(to_json(view.links))


def flow_table(view: Sankey, kind: str | None = None) -> pd.DataFrame:
    """The Sankey's links as a table: one row per pair and kind, the non-empty flows, or every pair's ``kind``
    flow (empty ones too: the asked-for flow reads 0, not absent). A step's net, churn and McNemar p are the
    pair's, the same on all its rows: ``step_table`` shows them once."""
    table = _links(view)
    rows = table["count"] > 0 if kind is None else table["kind"] == kind
    return table.loc[rows, ["from", "to", "kind", "count", "share"]].reset_index(drop=True)


def step_table(view: Sankey) -> pd.DataFrame:
    """One row per step (pair of configurations) of the Sankey: its net change, churn and McNemar p."""
    import pandas as pd

    return pd.DataFrame(to_json(sankey_steps(view)), columns=["from", "to", "net", "churn", "mcnemar_p"])


def sankey_steps(view: Sankey) -> list[SankeyLink]:
    """One link per step of the Sankey, in order: its transition numbers (each link carries its pair's), for
    ``transitions_table``."""
    steps: dict[tuple[str, str], SankeyLink] = {}
    for link in view.links:
        steps.setdefault((link.from_, link.to), link)
    return list(steps.values())
