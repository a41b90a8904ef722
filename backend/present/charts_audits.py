"""Vega-Lite specs of the Audits and Policies charts, drawn by ``ui.vega`` (the pages' one chart library:
docs/architecture.md, "Charts").

Each builder maps one report dict (``trajaudit audit ... --json``, ``cascade``/``predictor --json``) onto a plain
spec in the dashboard's look (``backend.present.charts.CONFIG``): every number is the report's, nothing is computed
here. A chart's points travel as one table of data values with a ``series`` column (layers filter it), so data
text (model, protocol, configuration names) stays data, never markup; a test reads them back from the Arrow
table Streamlit sends.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.contracts.audits import CrossmodelAudit, IsoGroup, NoiseAudit, Recovery
from backend.contracts.base import unset
from backend.contracts.policies import CascadePoint, CascadeSweep, Predictor, PredictorRow
from backend.present.charts import CONFIG, SCHEMA
from backend.present.palette import CORRECT, FLOW_COLOURS, INK, NEUTRAL, WRONG, rgba

FLIP_SHADES = {"beyond": 0.95, "unmeasured": 0.55, "within": 0.2}  # opacity of a flip class in the noise chart


def _spec(title: str, subtitle: str | list[str] | None, height: int, values: list[dict], **body: object) -> dict:
    """A spec at the page's width in the dashboard's look, titled (with a line under the title saying what every
    mark is counted on, where given), its ``values`` the one table its layers read."""
    return {
        **SCHEMA,
        "config": CONFIG,
        "title": {"text": title, **({"subtitle": subtitle, "subtitleColor": INK} if subtitle else {})},
        "height": height,
        "data": {"values": values},
        **body,
    }


def _only(series: str) -> list[dict]:
    return [{"filter": {"field": "series", "equal": series}}]


def _colour(domain: list[str], colours: list[str], legend: dict | None = None) -> dict:
    """The ``series`` colour channel, its legend's labels never cut short."""
    return {
        "field": "series",
        "type": "nominal",
        "title": None,
        "scale": {"domain": domain, "range": colours},
        "legend": {"labelLimit": 480, **(legend or {})},
    }


def recovery(rows: list[Recovery], top: str) -> dict:
    """Per protocol: the recovered share of its terminal regressions at ``top`` (Wilson 95% CI, "k of n" over the
    bar) beside the harmed share of the items right at ``top``; each protocol on its own items, said on the axis."""
    recovered, harmed = "recovered terminal regressions", f"harmed (right at {top}, wrong under the protocol)"
    values = []
    for r in rows:
        name = f"{r.protocol} ({r.n_items:,} items)"
        lo, hi = r.recovery_wilson or (None, None)
        values.append(
            {
                "series": recovered,
                "protocol": name,
                "value": None if r.recovery_rate is None else 100 * r.recovery_rate,
                "lo": None if lo is None else 100 * lo,
                "hi": None if hi is None else 100 * hi,
                "label": f"{r.n_recovered} of {r.n_terminal}",
            }
        )
        values.append({"series": harmed, "protocol": name, "value": None if r.harm_rate is None else 100 * r.harm_rate})
    protocols = list(dict.fromkeys(v["protocol"] for v in values))
    x = {"field": "protocol", "type": "nominal", "sort": protocols, "title": f"protocol at the top budget {top}",
         "axis": {"labelAngle": 0}}  # fmt: skip
    offset = {"field": "series", "type": "nominal", "sort": [recovered, harmed]}
    y = {"field": "value", "type": "quantitative", "title": "share of items (%)", "scale": {"domain": [0, 100]}}
    return _spec(
        f"Recovery of the terminal regressions at {top} under each protocol (Wilson 95% CI)",
        [
            f"recovered: share of the protocol's terminal regressions at {top} (k of n over the bar)",
            f"harmed: share of its items right at {top}; each protocol on the items with its answer at {top} (on the axis)",
        ],
        320,
        values,
        encoding={"x": x, "xOffset": offset},
        layer=[
            {
                "mark": "bar",
                "transform": [{"filter": "isValid(datum.value)"}],
                "encoding": {
                    "y": y,
                    "color": _colour([recovered, harmed], [CORRECT, WRONG]),
                    "tooltip": [
                        {"field": "protocol"},
                        {"field": "series", "title": "bar"},
                        {"field": "value", "title": "share (%)", "format": ".1f"},
                        {"field": "label", "title": "items"},
                    ],  # fmt: skip
                },
            },
            {
                "mark": {"type": "rule", "color": INK, "strokeWidth": 1.2},
                "transform": [{"filter": "isValid(datum.lo)"}],
                "encoding": {"y": {"field": "lo", "type": "quantitative"}, "y2": {"field": "hi"}},
            },
            {
                "mark": {"type": "text", "dy": -8, "color": INK},
                "transform": [*_only(recovered), {"filter": "isValid(datum.hi)"}],
                "encoding": {"y": {"field": "hi", "type": "quantitative"}, "text": {"field": "label"}},
            },
        ],
    )


def frontier(
    refs: Sequence[PredictorRow],
    sweep: CascadeSweep | None,
    point: CascadePoint | None,
    report: Predictor | None,
    colour: str,
    model: str,
    denominator: str,
) -> dict:
    """Accuracy (%) vs mean frames per item: fixed budgets, the oracle, the cascade's frontier (frames shared), its
    point matching the top budget (with its 95% interval), the chosen threshold, the predictor's levels and argmax;
    ``denominator`` (every point's items) under the title."""
    values: list[dict] = [
        {"series": "fixed budgets", "x": r.mean_frames, "y": 100 * r.accuracy, "label": r.label}
        for r in refs
        if r.policy == "fixed"
    ]
    oracle = next(r for r in refs if r.policy == "oracle")
    values.append({"series": "oracle (cheapest correct)", "x": oracle.mean_frames, "y": 100 * oracle.accuracy})
    series = ["fixed budgets", "oracle (cheapest correct)"]
    colours = [NEUTRAL, CORRECT]
    shapes = ["circle", "triangle-up"]
    sizes = [120, 220]  # marker areas: the curves' points small, the single points large
    matches = None
    if sweep is not None:
        values += [
            {"series": "cascade (frames shared)", "x": p.mean_frames_shared, "y": 100 * p.accuracy, "label": f"t={p.threshold:g}"}
            for p in sorted(sweep.frontier, key=lambda p: (p.mean_frames_shared, p.threshold))
        ]  # fmt: skip
        series.append("cascade (frames shared)")
        colours.append(colour)
        shapes.append("circle")
        sizes.append(20)
        match = sweep.matching
        if match is not None:
            matches = f"matches {sweep.ladder[-1]}"
            lo, hi = unset(match.accuracy_ci) or (match.accuracy, match.accuracy)
            values.append(
                {"series": matches, "x": match.mean_frames_shared, "y": 100 * match.accuracy, "lo": 100 * lo,
                 "hi": 100 * hi, "label": f"t={match.threshold:.3g}: saves {100 * (match.saving or 0):.0f}% of frames"}
            )  # fmt: skip
            series.append(matches)
            colours.append(colour)
            shapes.append("diamond")
            sizes.append(280)
    if point is not None:
        name = f"threshold {point.threshold:g}"
        values.append({"series": name, "x": point.mean_frames_shared, "y": 100 * point.accuracy})
        series.append(name)
        colours.append(INK)
        shapes.append("circle")
        sizes.append(160)
    if report is not None:
        rows = [r for r in report.frontier if r.policy == "predictor"]
        levels = sorted((r for r in rows if r.label != "argmax"), key=lambda r: r.mean_frames)
        values += [
            {"series": "budget predictor (levels q)", "x": r.mean_frames, "y": 100 * r.accuracy, "label": r.label}
            for r in levels
        ]  # fmt: skip
        arg = next(r for r in rows if r.label == "argmax")
        values.append({"series": "budget predictor (argmax)", "x": arg.mean_frames, "y": 100 * arg.accuracy})
        series += ["budget predictor (levels q)", "budget predictor (argmax)"]
        colours += [INK, INK]
        shapes += ["square", "cross"]  # two shapes: the legend draws no size, and two squares read as one policy
        sizes += [20, 140]
    area = dict(zip(series, sizes, strict=True))
    values = [{**v, "size": area[v["series"]]} for v in values]  # a marker's area as data: Vega scales no nominal size
    top_frames = max(r.mean_frames for r in refs if r.policy == "fixed")
    x = {"field": "x", "type": "quantitative", "title": "mean frames per item (frames shared across budgets)",
         "scale": {"domain": [0, top_frames * 1.08]}}  # fmt: skip
    y = {"field": "y", "type": "quantitative", "title": "accuracy (%)", "scale": {"zero": False}}
    tip = [{"field": "series", "title": "policy"}, {"field": "label", "title": "point"},
           {"field": "y", "title": "accuracy (%)", "format": ".1f"}, {"field": "x", "title": "mean frames", "format": ".1f"}]  # fmt: skip
    lines = [
        {"mark": {"type": "line", "color": c, "strokeWidth": w, **({"strokeDash": [6, 4]} if dash else {})},
         "transform": _only(name), "encoding": {"x": x, "y": y, "order": {"field": "x"}}}
        for name, c, w, dash in (("cascade (frames shared)", colour, 2.5, False), ("budget predictor (levels q)", INK, 2, True))
        if name in series
    ]  # fmt: skip
    layers = [
        *lines,
        {
            "mark": {"type": "point", "filled": True, "stroke": INK, "strokeWidth": 1, "opacity": 1},
            "encoding": {
                "x": x,
                "y": y,
                "color": _colour(series, colours, legend={"orient": "top", "columns": 4}),
                "shape": {
                    "field": "series",
                    "type": "nominal",
                    "title": None,
                    "scale": {"domain": series, "range": shapes},
                },
                "size": {"field": "size", "type": "quantitative", "scale": None, "legend": None},
                "tooltip": tip,
            },
        },
        {
            "mark": {"type": "text", "align": "left", "dx": 8, "dy": 10, "color": INK},
            "transform": _only("fixed budgets"),
            "encoding": {"x": x, "y": y, "text": {"field": "label"}},
        },
    ]
    if matches is not None:
        layers += [
            {"mark": {"type": "rule", "color": INK, "strokeWidth": 1.5}, "transform": _only(matches),
             "encoding": {"x": x, "y": {"field": "lo", "type": "quantitative"}, "y2": {"field": "hi"}}},
            {"mark": {"type": "text", "align": "right", "dx": -14, "dy": -16, "color": INK, "fontWeight": "bold"},
             "transform": _only(matches), "encoding": {"x": x, "y": y, "text": {"field": "label"}}},
        ]  # fmt: skip
    return _spec(
        f"{model}: accuracy vs frame cost of adaptive budgets", f"every point {denominator}", 460, values, layer=layers
    )


def noise(summary: NoiseAudit) -> dict:
    """Rescued (up) and harmed (down) per step, each split into beyond noise, no repeats and within noise."""
    classes = [("beyond", "beyond noise"), ("unmeasured", "no repeats"), ("within", "within noise")]
    kinds = [("rescued", 1, CORRECT), ("harmed", -1, WRONG)]
    names = [f"{kind}, {words}" for kind, _, _ in kinds for _, words in classes]
    shades = [rgba(c, FLIP_SHADES[cls]) for _, _, c in kinds for cls, _ in classes]
    steps = [f"{t.from_} → {t.to}" for t in summary.transitions]
    values = [
        {"series": f"{kind}, {words}", "step": step, "items": sign * getattr(t, f"{kind}_{cls}"), "count": getattr(t, f"{kind}_{cls}"),
         "order": k}
        for t, step in zip(summary.transitions, steps, strict=True)
        for k, (kind, sign, _) in enumerate(kinds)
        for cls, words in classes
    ]  # fmt: skip
    return _spec(
        f"{summary.model}: flips beyond the item's repeat noise, within it, or unmeasured",
        f"items flipping at each step, on the {summary.n_items:,} items of the grid "
        f"({summary.n_items_with_repeats:,} with repeats)",
        340,
        values,
        mark={"type": "bar", "stroke": INK, "strokeWidth": 0.3},
        encoding={
            "x": {"field": "step", "type": "nominal", "sort": steps, "title": "transition between configurations",
                  "axis": {"labelAngle": 0}},
            "y": {"field": "items", "type": "quantitative", "stack": "zero", "title": "items (↑ rescued, ↓ harmed)"},
            "color": _colour(names, shades, legend={"orient": "top", "columns": 3}),
            "order": {"field": "order"},
            "tooltip": [{"field": "step"}, {"field": "series", "title": "flips"}, {"field": "count", "title": "items"}],
        },
    )  # fmt: skip


def crossmodel(out: CrossmodelAudit) -> dict:
    """Rescued (right) and harmed (left) items per task type between two models' configurations."""
    rows = sorted(out.by_task_type, key=lambda r: (r.rescued, r.harmed))
    rescued, harmed = "rescued (wrong → right)", "harmed (right → wrong)"
    values = [
        {
            "series": name,
            "task_type": r.task_type,
            "items": sign * getattr(r, kind),
            "count": getattr(r, kind),
            "n": r.n,
        }
        for r in rows
        for name, kind, sign in ((rescued, "rescued", 1), (harmed, "harmed", -1))
    ]
    order = [r.task_type for r in rows][::-1]
    reach = max([1, *(r.rescued for r in rows), *(r.harmed for r in rows)])  # the axis symmetric about 0
    return _spec(
        f"{out.from_model} @ {out.from_} → {out.to_model} @ {out.to}: rescued and harmed items by task type",
        f"on the {out.n_items:,} items both models answered at both configurations",
        max(120, 26 * len(rows)),
        values,
        mark="bar",
        encoding={
            "y": {"field": "task_type", "type": "nominal", "sort": order, "title": "task type"},
            "x": {"field": "items", "type": "quantitative", "title": "items (← harmed, rescued →)",
                  "scale": {"domain": [-1.05 * reach, 1.05 * reach]},
                  "axis": {"labelExpr": "abs(datum.value)", "tickMinStep": 1, "format": "d"}},
            "color": _colour([rescued, harmed], [FLOW_COLOURS["rescued"], FLOW_COLOURS["harmed"]]),
            "tooltip": [{"field": "task_type", "title": "task type"}, {"field": "series", "title": "flow"},
                        {"field": "count", "title": "items"}, {"field": "n", "title": "of items"}],
        },
    )  # fmt: skip


def allocations(group: IsoGroup, colour: str) -> list[dict]:
    """Two specs side by side: accuracy per allocation beside the oracle over them; which allocations answer each
    item (both on the group's items, said under the first title)."""
    cfgs = group.configs
    acc = [{"series": "accuracy", "bar": c.config, "value": 100 * c.accuracy, "shade": "allocation"} for c in cfgs]
    acc.append({"series": "accuracy", "bar": "oracle", "value": 100 * group.oracle_accuracy, "shade": "oracle"})
    pats = [
        {"series": "patterns", "bar": p, "value": n, "shade": {"all": "all", "none": "none"}.get(p, "some")}
        for p, n in sorted(group.patterns.items(), key=lambda kv: -kv[1])
    ]
    shade = {"field": "shade", "type": "nominal", "legend": None,
             "scale": {"domain": ["allocation", "oracle", "all", "none", "some"], "range": [colour, CORRECT, CORRECT, WRONG, colour]}}  # fmt: skip

    def bars(title: str, subtitle: str | None, values: list[dict], x_title: str, y: dict, fmt: str) -> dict:
        x = {"field": "bar", "type": "nominal", "sort": [v["bar"] for v in values], "title": x_title,
             "axis": {"labelAngle": 0}}  # fmt: skip
        return _spec(
            title,
            subtitle,
            260,
            values,
            encoding={"x": x, "y": y},
            layer=[
                {"mark": "bar", "encoding": {"color": shade, "tooltip": [{"field": "bar", "title": x_title},
                                                                        {"field": "value", "title": y["title"]}]}},
                {"mark": {"type": "text", "dy": -8, "color": INK}, "encoding": {"text": {"field": "value", "format": fmt}}},
            ],
        )  # fmt: skip

    budget = cfgs[0].pixel_budget
    return [
        bars(
            f"Allocations of ~{budget / 1e6:.2f} M pixels: accuracy (%)",
            f"on the {group.n_items:,} items every allocation answered",
            acc,
            "allocation (frames@pixels per frame)",
            {"field": "value", "type": "quantitative", "title": "accuracy (%)", "scale": {"domain": [0, 105]}},
            ".1f",
        ),
        bars(
            "Items by which allocations answer them",
            "the same items",
            pats,
            "allocations right on the item",
            {"field": "value", "type": "quantitative", "title": "items"},
            "d",
        ),
    ]
