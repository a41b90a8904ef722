"""The Overview's first-screen chart drawn on the server (backend/present/drawn.py): the same Vega-Lite specs as the
report's, one SVG whose marks carry their tooltips as hover titles, data text escaped, and a PNG to save."""

from __future__ import annotations

import re

import pytest

from backend.contracts.common import Transition
from backend.present import charts, drawn
from backend.present.series import Curve, CurveModel

GRID = ("8f", "16f", "32f")
HOSTILE = "m<b>&\"x'\n\n# y"  # markup, quotes and a blank line in a model name


def _curve(names: tuple[str, ...]) -> Curve:
    def steps(k: int) -> list[Transition]:
        return [
            Transition(from_=a, to=b, rescued=5 + k, harmed=3, net=(2 + k) / 100, churn=(8 + k) / 100, mcnemar_p=0.5)
            for a, b in zip(GRID, GRID[1:], strict=False)
        ]

    return Curve(
        GRID,
        {
            name: CurveModel(
                {c: 0.4 + 0.1 * j + 0.01 * k for j, c in enumerate(GRID)},
                {c: (0.35 + 0.1 * j, 0.45 + 0.1 * j) for j, c in enumerate(GRID)},
                steps(k),
            )
            for k, name in enumerate(names)
        },
    )


def _spec(names: tuple[str, ...]) -> dict:
    colours = dict(zip(names, ("#3b6fb6", "#8e5bd1"), strict=False))
    return drawn.stacked(charts.curve_and_flows(_curve(names), colours, labelled=names[0], step=("16f", "32f")), 600)


def test_the_pair_is_one_spec_at_a_fixed_width_with_its_own_legends():
    pair = charts.curve_and_flows(_curve(("a", "b")), {"a": "#3b6fb6", "b": "#8e5bd1"})
    spec = drawn.stacked(pair, 600)
    assert [part["title"] for part in spec["vconcat"]] == [p["title"] for p in pair]
    assert all(part["width"] == 600 and "$schema" not in part for part in spec["vconcat"])
    assert spec["resolve"]["legend"] == {"color": "independent", "fill": "independent", "stroke": "independent"}


def test_each_mark_with_a_tooltip_has_it_as_its_hover_title():
    out = drawn.svg(_spec(("a", "b")))
    titles = re.findall(r"<title>([^<]*)</title>", out)
    # the curve's points (and each line, as Vega's tooltip has it) and every flow bar
    points = [t for t in titles if t.startswith("model: a&#xA;configuration: 16f&#xA;")]
    assert points and "accuracy (%): 50.0&#xA;95% CI low (%): 45.0&#xA;95% CI high (%): 55.0" in points[0]
    bars = [t for t in titles if "transition: 8f → 16f" in t and t.startswith("model: b")]
    assert len(bars) == 2  # rescued up, harmed down
    assert "rescued: 6&#xA;harmed: 3&#xA;net (pp): +3.0&#xA;churn (pp): 9.0&#xA;McNemar p: 0.5" in bars[0]
    assert "\u2063" not in out  # the marker is gone
    assert not any(t.startswith(("x: ", "x0: ")) for t in titles)  # no default description becomes a title


def test_data_text_stays_text():
    out = drawn.svg(_spec((HOSTILE, "b")))
    assert "<b>" not in out
    assert "m&lt;b&gt;&amp;" in out  # in the legend, the bars' title and the hover titles


def test_a_format_that_is_not_a_number_format_is_refused():
    with pytest.raises(ValueError, match="not a number format"):
        drawn.hover_titles({"encoding": {"tooltip": [{"field": "x", "title": "x", "format": "') + alert(1) + ('"}]}})


def test_the_chart_saves_as_png():
    assert drawn.png(_spec(("a", "b"))).startswith(b"\x89PNG\r\n\x1a\n")


def test_a_spec_drawn_from_a_compiled_template_is_the_whole_compile():
    """``drawn.vega`` compiles a spec once per shape and puts each spec's data in: two specs of one shape (a filter:
    other numbers, the same models) come out as vl-convert's own compile of each, and so as its SVG."""
    import vl_convert

    first, second = _spec(("a", "b")), _spec(("a", "b"))
    second["vconcat"][0]["data"]["values"][0]["accuracy"] = 12.5
    assert drawn.vega(first) != drawn.vega(second)
    for spec in (first, second):
        assert drawn.vega(spec) == vl_convert.vegalite_to_vega(spec)
        assert drawn.svg(spec) == drawn.titled(
            vl_convert.vegalite_to_svg(spec)
        )  # byte-identical to the whole conversion
    assert "12.5" in drawn.svg(second)
    assert drawn._compiled.cache_info().hits >= 2


def test_labels_are_drawn_whole():
    """No truncation (``drawn.WHOLE``): a long model name is in the legend as written, not cut to "…"."""
    name = "a-model-with-a-name-longer-than-the-legend-would-draw-it"
    out = drawn.svg(_spec((name, "b")))
    assert f">{name}</text>" in out and "…" not in out
