"""The series a figure draws, laid out once for both chart libraries: the Overview's curve and flow bars
(Vega-Lite on the page, ``backend.present.charts``; Plotly in the report, ``backend.report.figures``) and the
Flows Sankey's trace (a Plotly trace dict the page's component draws and the report's figure wraps).

Rows are plain JSON (rates in percent, ``None`` where missing). Text from data stays raw here; a caller that
draws into markup passes its escape as ``text`` (Plotly parses a small HTML dialect; Vega-Lite does not).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from backend.contracts.common import Interval, Transition
from backend.contracts.views import McqaMetrics, Sankey
from backend.present.text import KIND_TEXT, MISSING, bounds, count, number

CURVE_TITLE = "Stable curve, unstable items: accuracy per budget (95% CI)"
BAR_SPAN = 0.8 * 0.9  # the share of a transition's slot the models' bars take together


def bar_width(n_models: int) -> float:
    """One model's bar width in a transition's slot (slots are one configuration step wide)."""
    return BAR_SPAN / max(n_models, 1)


@dataclass(frozen=True)
class CurveModel:
    """One model's curve and its flow bars: a value per configuration with its 95% interval, and each step's
    flips (the Overview's accuracy and transitions, or the score section's mean score and its improved and
    regressed items as ``rescued`` and ``harmed``)."""

    values: Mapping[str, float]
    intervals: Mapping[str, Interval | None]
    transitions: Sequence[Transition]


@dataclass(frozen=True)
class Curve:
    """What the curve-and-flows figure draws: the grid, and per model its ``CurveModel``."""

    grid: Sequence[str]
    models: Mapping[str, CurveModel]

    @classmethod
    def of(cls, metrics: McqaMetrics) -> Curve:
        """The Overview's curve: accuracy per configuration and the transitions shown."""
        return cls(
            metrics.grid,
            {m: CurveModel(r.accuracy, r.ci.accuracy or {}, r.transitions) for m, r in metrics.models.items()},
        )


def curve_points(overview: Curve, colours: Mapping[str, str]) -> list[dict]:
    """Accuracy per model and configuration with its 95% interval: ``model, colour, x, config, accuracy, lo, hi``
    (percent; ``lo``/``hi`` None without an interval), models in order, configurations cheapest first."""
    points = []
    for model, rec in overview.models.items():
        for x, config in enumerate(overview.grid):
            ends = bounds(rec.intervals.get(config))
            points.append(
                {
                    "model": model,
                    "colour": colours[model],
                    "x": x,
                    "config": config,
                    "accuracy": number(rec.values[config], 100),
                    "lo": None if ends is None else 100 * ends[0],
                    "hi": None if ends is None else 100 * ends[1],
                }
            )
    return points


def flow_bars(overview: Curve) -> list[dict]:
    """Rescued (up) and harmed (down) bars per model and transition, side by side in the transition's slot
    between its two configurations: ``model, kind, x0, x1, items`` (signed), the transition (``from``, ``to``,
    ``step``) and its ``rescued, harmed, net, churn`` (percent) and McNemar ``p``."""
    models = list(overview.models)
    width = bar_width(len(models))
    bars = []
    for k, (model, rec) in enumerate(overview.models.items()):
        centre = (k - (len(models) - 1) / 2) * width
        for t, tr in enumerate(rec.transitions):
            x = t + 0.5 + centre
            for kind, sign in (("rescued", 1), ("harmed", -1)):
                bars.append(
                    {
                        "model": model,
                        "kind": kind,
                        "x0": x - width / 2,
                        "x1": x + width / 2,
                        "items": sign * getattr(tr, kind),
                        "from": tr.from_,
                        "to": tr.to,
                        "step": f"{tr.from_} → {tr.to}",
                        "rescued": tr.rescued,
                        "harmed": tr.harmed,
                        "net": number(tr.net, 100),
                        "churn": number(tr.churn, 100),
                        "p": number(tr.mcnemar_p),
                    }
                )
    return bars


def _same(value: str) -> str:
    return value


def sankey_trace(
    view: Sankey,
    colours: Mapping[str, str],
    text: Callable[[str], str] = _same,
    config_labels: bool = False,
) -> dict:
    """The Flows Sankey as a Plotly trace dict: correct / wrong state nodes per configuration (correct above,
    each column's split at its share), non-empty links coloured by kind, hover text from ``KIND_TEXT``.

    ``colours``: a colour per state and per flow kind (``backend.present.palette``'s ``STATE_COLOURS | FLOW_COLOURS``,
    passed in so this layer stays below the report); ``text`` escapes data text for the target; ``config_labels``
    names the configuration in each node's label (where no column header does)."""
    nodes = view.nodes
    n_cfg = len(view.configs)
    share_correct = {n.config: n.share for n in nodes if n.state == "correct"}
    ys = [
        0.02 + 0.45 * share_correct[n.config] if n.state == "correct" else 0.98 - 0.45 * (1 - share_correct[n.config])
        for n in nodes
    ]
    links = [lk for lk in view.links if lk.count > 0]
    labels = [f"{'✓' if n.state == 'correct' else '✗'} {n.count}" for n in nodes]
    if config_labels:
        labels = [f"{text(n.config)} {label}" for n, label in zip(nodes, labels, strict=True)]
    return {
        "type": "sankey",
        "arrangement": "fixed",
        "valueformat": "d",
        "node": {
            "label": labels,
            "color": [colours[n.state] for n in nodes],
            "x": [column_x(n.id // 2, n_cfg) for n in nodes],
            "y": ys,
            "pad": 18,
            "thickness": 18,
            "line": {"width": 0},
            "customdata": [[text(n.config), n.state, 100 * n.share] for n in nodes],
            "hovertemplate": "%{customdata[0]}: %{value} items %{customdata[1]} (%{customdata[2]:.1f}%)<extra></extra>",
        },
        "link": {
            "source": [lk.source for lk in links],
            "target": [lk.target for lk in links],
            "value": [lk.count for lk in links],
            "color": [colours[lk.kind] for lk in links],
            "customdata": [
                [text(lk.from_), text(lk.to), KIND_TEXT[lk.kind], 100 * lk.share, lk.rescued, lk.harmed, lk.mcnemar_p]
                for lk in links
            ],
            "hovertemplate": (
                "%{customdata[0]} → %{customdata[1]}: <b>%{customdata[2]}</b><br>%{value} items (%{customdata[3]:.1f}%)"
                "<br>pair: rescued %{customdata[4]} vs harmed %{customdata[5]}, McNemar p = %{customdata[6]:.3g}<extra></extra>"
            ),
        },
    }


def sankey_figure(view: Sankey, colours: Mapping[str, str], font: dict) -> dict:
    """The Sankey as a Plotly-schema figure dict, which the Sankey script (``backend/report/static/sankey``) draws
    on the Flows page and in the report: state nodes per config, non-empty aggregated links coloured by kind,
    in ``font``. Never validated into a ``go.Figure`` (a cost on every run). The script shows hover values as
    text and decodes entities in labels and the title, where it reads ``<b>`` as markup: the title's model name
    is escaped."""
    trace = sankey_trace(view, colours, config_labels=True)  # no column headers: labels name them
    layout = {
        "title": {"text": sankey_title(view, lambda t: html.escape(t, quote=False)), "font": {"size": 16}},
        "font": font,
        "margin": {"l": 60, "r": 30, "t": 50, "b": 30},
        "height": 420 if len(view.configs) <= 2 else 480,
    }
    return {"data": [trace], "layout": layout}


def column_x(k: int, n_cfg: int) -> float:
    """The paper x of configuration ``k``'s node column (the first at the left edge, the last at the right)."""
    return 0.001 + 0.998 * k / max(n_cfg - 1, 1)


def sankey_title(view: Sankey, text: Callable[[str], str] = _same) -> str:
    """The Sankey's title: whose items, how many (``text`` escapes the model name for the target)."""
    return f"{text(view.model)}: correct (✓) and wrong (✗) items per configuration, {count(view.n_items, 'item')}"


# -- Inspector: the frame strips on one timeline ---------------------------------------------------------

FIRST = "first row"  # a strip with no row above: nothing to have kept or added
KEPT = "kept from the row above"
ADDED = "added"
DROPPED = "dropped"
FRAME_STATUSES = (FIRST, KEPT, ADDED, DROPPED)  # legend order


def strip_label(config: str, models: list[str], rerun: str | None, named: bool) -> str:
    """A frame plan row's name on the timeline, the strips and the player: its configuration, ``· re-run`` for
    a live re-run's frames, and whose frames they are where ``named`` (several rows share the configuration)."""
    label = f"{config} · re-run" if rerun is not None else config
    return f"{label} ({', '.join(models)})" if named else label


def strip_labels(plan: list[dict]) -> list[str]:
    """``strip_label`` of every row of a frame plan (``backend.scope.inspector.frame_plan``: one record a row)."""
    kinds = [(row["config"], row["rerun"] is not None) for row in plan]
    shared = {k for k in kinds if kinds.count(k) > 1}
    return [
        strip_label(row["config"], list(row["models"]), row["rerun"], kind in shared)
        for row, kind in zip(plan, kinds, strict=True)
    ]


def frame_marks(plan: list[dict], fps: float | None) -> tuple[list[dict], list[str]]:
    """The timeline's marks (``row, frame, x, status``) and rows of a frame plan
    (``backend.scope.inspector.frame_plan``): ``x`` in seconds (frame index without fps). A row's frames are
    kept from or added to the row above it; the first row's are neither, and say so (``FIRST``)."""
    marks: list[dict] = []
    rows: list[str] = []
    for label, row in zip(strip_labels(plan), plan, strict=True):
        if row["indices"] is None:
            continue
        rows.append(label)
        added = set(row["added"] or [])
        first = row["added"] is None
        frames = [(i, FIRST if first else ADDED if i in added else KEPT) for i in row["indices"]]
        frames += [(i, DROPPED) for i in row["dropped"] or []]
        marks += [{"row": label, "frame": int(i), "x": i / fps if fps else int(i), "status": s} for i, s in frames]
    return marks, rows


def frame_caption(index: int, seconds: float | None, added: bool, *, number: bool = True) -> str:
    """A thumbnail's caption: where in the video the frame is (``@0.38 s``: a time stamp, never a duration),
    ``#index`` when there is room (always without a time), and ``new`` for a frame the row above did not have:
    ``new #12 @0.38 s``."""
    at = None if seconds is None else f"@{seconds:.2f} s"
    where = f"#{index} {at}" if number and at else at or f"#{index}"
    return f"new {where}" if added else where


def dashed(frame: Any, digits: Mapping[str, int]) -> Any:
    """A table as it is shown: the columns of ``digits`` as text with that many decimals, and every missing
    value a dash (a table cell never reads "None" or "nan")."""
    out = frame.astype(object)
    for column, places in digits.items():
        out[column] = [None if v is None or v != v else f"{v:.{places}f}" for v in frame[column]]
    return out.where(out.notna(), MISSING)
