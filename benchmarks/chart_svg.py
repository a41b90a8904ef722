"""The Overview's first-screen chart drawn on the server (issue 33): vl-convert's whole conversion of the spec, as the
page drew it before, against ``backend.present.drawn.svg`` (its labels drawn whole, its Vega compiled once per
chart shape), on the charts a user's filters make.

For the store's default view and each task type's filter (one chart per view, as the sidebar's filter draws it),
both paths draw the chart, alternating, ``--rounds`` times each; printed: the median milliseconds of each, the
ratio, and whether the two SVGs are byte-identical (they must be: only the work to get there differs). The store is
``benchmarks/policies.py``'s generated one under ``--workdir`` (built when missing).

Usage: ``python benchmarks/chart_svg.py [--items 25000] [--workdir /work/bench-stores] [--rounds 12]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import vl_convert  # noqa: E402
from policies import build  # noqa: E402

from backend import views  # noqa: E402
from backend.present import charts, drawn  # noqa: E402
from backend.present.palette import model_colours  # noqa: E402
from backend.present.series import Curve  # noqa: E402
from backend.scope.filters import ItemFilter  # noqa: E402
from backend.scope.resolve import Scope, available  # noqa: E402
from backend.scope.view import open_view  # noqa: E402


def chart(store, info, task_types: tuple[str, ...]) -> tuple[dict, dict]:
    """The Overview's chart spec for the default view narrowed to ``task_types``, and the same spec as the page drew
    it before: the chart builders' own config (Vega-Lite's label and title limits, no ``drawn.WHOLE``)."""
    models = tuple(info.models)
    view = open_view(store, Scope(None, models, item_filter=ItemFilter(task_types=task_types)).resolve(store, info))
    metrics, colours = views.overview(view, bootstrap=1000), model_colours(models)
    spec = drawn.first_screen(metrics, colours, view.scope.focus)
    builders = charts.curve_and_flows(Curve.of(metrics), colours)[0]["config"]
    return spec, {**spec, "config": builders}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=25000)
    ap.add_argument("--workdir", type=Path, default=Path(".bench/policies"))
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    store = build(args.workdir, args.items)
    info = available(store)
    base = open_view(store, Scope(None, tuple(info.models)).resolve(store, info))
    kinds = [()] + [(t,) for t in sorted(set(base.matrix.items["task_type"].astype(str)))]
    specs = {"/".join(k) or "default view": chart(store, info, k) for k in kinds}
    vl_convert.vegalite_to_svg(next(iter(specs.values()))[0])  # the engine started before any clock
    print(f"{len(specs)} charts ({args.items:,} items, 4 models), {args.rounds} rounds each, alternating")
    print("| view | before: the whole conversion, ms | after: drawn.svg, ms | after / before | same SVG |")
    print("|---|---|---|---|---|")
    ratios = []
    for name, (spec, old_spec) in specs.items():
        same = drawn.svg(spec) == drawn.titled(vl_convert.vegalite_to_svg(old_spec))
        before, after = [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            drawn.titled(vl_convert.vegalite_to_svg(old_spec))
            before.append(time.perf_counter() - t)
            t = time.perf_counter()
            drawn.svg(spec)
            after.append(time.perf_counter() - t)
        b, a = statistics.median(before) * 1000, statistics.median(after) * 1000
        ratios.append(a / b)
        print(f"| {name} | {b:.0f} | {a:.0f} | {a / b:.2f} | {'yes' if same else 'NO'} |")
    print(f"chart_svg: median after/before {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
