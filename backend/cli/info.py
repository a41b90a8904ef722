"""``trajaudit info``: what the store holds (models, benchmarks, configs per model and benchmark)."""

from __future__ import annotations

import argparse

from backend.cli.common import add_json, command, print_json
from backend.contracts.base import asdict, validated
from backend.contracts.store import InfoReport
from backend.present.text import count
from backend.scope.frames_known import frames_known
from backend.scope.matrix import available
from store.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "info")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = Store(args.store)
    contents = asdict(available(store))
    out = validated(
        InfoReport(**contents, store_version=store.version(), store=str(store.root), frames=frames_known(store))
    )
    if args.json:
        print_json(out)
        return 0
    print(f"store {out.store} (version {out.store_version})")
    print(f"{out.n_responses} responses, {count(out.n_items, 'item')}")
    rows = [(m, b, ", ".join(labels)) for m, per_bench in out.configs.items() for b, labels in per_bench.items()]
    wm = max((len(m) for m, _, _ in rows), default=0)
    wb = max((len(b) for _, b, _ in rows), default=0)
    for model, bench, labels in rows:
        print(f"  {model:<{wm}}  {bench:<{wb}}  {labels}")
    known = [(m, b, c, f) for m, per in out.frames.items() for b, cfgs in per.items() for c, f in cfgs.items()]
    if known:
        print("frames seen (responses per source: logged, reconstructed:<sampler>, unknown):")
    for model, bench, config, sources in known:
        print(f"  {model:<{wm}}  {bench:<{wb}}  {config}: " + ", ".join(f"{s} {n}" for s, n in sources.items()))
    overlay = [(m, b, reran) for m, per in out.reruns.items() for b, reran in per.items()]
    if overlay:
        print(f"live re-runs (an overlay, never in default grids; {out.n_rerun_responses} responses):")
    for model, bench, reran in overlay:
        print(
            f"  {model:<{wm}}  {bench:<{wb}}  " + ", ".join(f"{c} ({n} item{'s' * (n != 1)})" for c, n in reran.items())
        )
    if out.task_types:
        print(f"task types: {', '.join(out.task_types)}")
    return 0
