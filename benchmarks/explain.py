"""Speed of ``trajaudit explain`` for one model (issue 21) on a generated store, printed as figures.

The store is ``benchmarks/policies.py``'s (4 models x N items x 10 configurations; items with task type,
duration, domain, options, question text and video): 250k items make 10M responses. It is built with
``Store.append`` under ``--workdir`` and reused when there. The explained selection is the harmed flow
8f -> 32f of one model, with the items matched over that model only (``--models`` absent), as the CLI's
default; ``--agreement`` matches over all four models and adds agreement across them.

Timed, after one warm-up call (the matrix then comes from the store's cache folder, as on a dashboard
that has opened the view before): the whole ``views.explain_view`` and its phases: the matrix load,
the attributes, the answer cells (one DuckDB query over the model's responses, then the cache folder), the
single slices, sliceline's pairs, the report assembly; and the whole view with ``--no-pairs``. Target: under
1 s for one model.

Usage: ``python benchmarks/explain.py [--items 250000] [--workdir .bench/policies] [--repeats 3] [--agreement]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from policies import MODELS, build  # noqa: E402  (the benchmark beside this one builds the store)

from backend import views  # noqa: E402
from backend.analysis import explain  # noqa: E402
from backend.scope.annotations import annotation_tags  # noqa: E402
from backend.scope.answer_cells import load_answer_cells  # noqa: E402
from backend.scope.filters import ItemFilter  # noqa: E402
from backend.scope.resolve import Scope  # noqa: E402
from backend.scope.view import open_view  # noqa: E402

TARGET = explain.Target("flow", ("8f", "32f", "harmed"))


def phases(store, resolved, model: str) -> dict[str, float]:
    """Each step of ``views.explain_view`` timed apart (the same calls, in its order)."""
    out, t = {}, time.perf_counter()
    matrix = resolved.load(store)
    out["matrix load"], t = time.perf_counter() - t, time.perf_counter()
    attributes = explain.attribute_table(matrix.items, annotation_tags(store, matrix.items, resolved.scope.benchmark))
    out["attributes"], t = time.perf_counter() - t, time.perf_counter()
    cells = load_answer_cells(store, matrix, model, scope=resolved.scope)
    out["answer cells"], t = time.perf_counter() - t, time.perf_counter()
    selected = explain.target_mask(matrix, model, TARGET)
    explain.explain_slices(attributes, selected, pairs=False)
    out["single slices"], t = time.perf_counter() - t, time.perf_counter()
    explain.pair_slices(attributes, selected, explain.MIN_SIZE)
    out["pairs (sliceline)"], t = time.perf_counter() - t, time.perf_counter()
    explain.report(matrix, model, TARGET, attributes, cells)
    out["report (all of it again, from the loaded inputs)"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=250_000)
    ap.add_argument("--workdir", default=".bench/policies")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--agreement", action="store_true", help="match over all four models (adds agreement)")
    args = ap.parse_args()
    store = build(Path(args.workdir), args.items)
    n_resp = store.query("SELECT count(*) n FROM responses").n[0]
    model = MODELS[0]
    models = tuple(MODELS) if args.agreement else (model,)
    print(
        f"store: {n_resp:,} responses ({len(MODELS)} models x {args.items:,} items x 10 configs); explaining "
        f"{model}'s {TARGET.describe()}, matched over {len(models)} model(s)"
    )
    resolved = Scope(benchmark="bench", models=models, grid=(), item_filter=ItemFilter()).resolve(store)

    def whole() -> dict:
        return views.explain_view(open_view(store, resolved), model, TARGET)

    t = time.perf_counter()
    out = whole()  # warm-up: writes the matrix cache entry, imports scipy.stats and sliceline
    print(f"first call (cold matrix cache, imports): {time.perf_counter() - t:.2f} s")
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        out = whole()
        times.append(time.perf_counter() - t)
    print(
        f"explain_view, {out['n_scope']:,} items, {out['n_selected']:,} selected, {out['n_tests']} slices tested, "
        f"{len(out['pairs'])} pairs: median {statistics.median(times):.3f} s of {args.repeats} "
        f"({', '.join(f'{x:.3f}' for x in times)}) (target < 1 s)"
    )
    quick = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        views.explain_view(open_view(store, resolved), model, TARGET, pairs=False)
        quick.append(time.perf_counter() - t)
    print(
        f"explain_view without pairs (--no-pairs): median {statistics.median(quick):.3f} s "
        f"({', '.join(f'{x:.3f}' for x in quick)})"
    )
    for name, seconds in phases(store, resolved, model).items():
        print(f"  {name}: {seconds:.3f} s")
    top = out["slices"][0] if out["slices"] else None
    if top:
        print(
            f"top slice: {top['label']} ({top['n_selected']:,} of {top['n_slice']:,}, lift {top['lift']:.2f}, q {top['q']:.3g})"
        )


if __name__ == "__main__":
    main()
