"""``trajaudit models add|list|remove|demo``: the model registry (``<store>/models.toml``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from backend.cli.common import add_json, add_store, command_group, print_json
from backend.runtime import registry
from store.store import resolve_root


def register(sub: argparse._SubParsersAction) -> None:
    actions = command_group(sub, "models", "action")

    a = actions.add_parser("add", help="register a model")
    add_store(a)
    a.add_argument("name")
    a.add_argument("--family", required=True, help="adapter family, e.g. qwen2_5_vl")
    a.add_argument("--path", required=True, help="local checkpoint folder (never downloaded)")
    a.add_argument("--max-frames", type=int, default=registry.DEFAULT_MAX_FRAMES, help="context ceiling (frames)")
    a.add_argument("--default-pixels", type=int, default=None, help="pixels per frame for labels without @<n>k")
    a.add_argument("--dtype", default="auto", choices=registry.DTYPES)
    a.add_argument("--device", default="auto", choices=registry.DEVICES)
    a.add_argument("--note", default="")
    a.add_argument("--replace", action="store_true", help="overwrite a model of the same name")
    add_json(a)
    a.set_defaults(func=run_add)

    ls = actions.add_parser("list", help="list registered models")
    add_store(ls)
    add_json(ls)
    ls.set_defaults(func=run_list)

    rm = actions.add_parser("remove", help="unregister a model (its checkpoint stays on disk)")
    add_store(rm)
    rm.add_argument("name")
    add_json(rm)
    rm.set_defaults(func=run_remove)

    d = actions.add_parser("demo", help="build a tiny random-weight model under <store>/models/ and register it")
    add_store(d)
    d.add_argument("name")
    d.add_argument("--family", default="qwen2_5_vl")
    add_json(d)
    d.set_defaults(func=run_demo)


def _show(spec: registry.ModelSpec, verb: str, as_json: bool) -> int:
    if as_json:
        print_json(spec)
    else:
        print(f"{verb} {spec.name} ({spec.family}, {spec.path})")
    return 0


def run_add(args: argparse.Namespace) -> int:
    spec = registry.ModelSpec(
        name=args.name,
        family=args.family,
        path=str(Path(args.path).expanduser().resolve()),
        dtype=args.dtype,
        device=args.device,
        max_frames=args.max_frames,
        default_pixels=args.default_pixels,
        note=args.note,
    )
    return _show(registry.add(resolve_root(args.store), spec, replace=args.replace), "registered", args.json)


def run_list(args: argparse.Namespace) -> int:
    models = registry.list_models(resolve_root(args.store))
    if args.json:
        print_json(models)
    elif not models:
        print("no models registered (trajaudit models add NAME --family F --path P)")
    else:
        for m in models:
            pixels = m.default_pixels or "processor default"
            print(f"{m.name}\t{m.family}\tmax {m.max_frames} frames\tpixels {pixels}\t{m.path}\t{m.note}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    return _show(registry.remove(resolve_root(args.store), args.name), "removed", args.json)


def run_demo(args: argparse.Namespace) -> int:
    spec = registry.register_demo_model(resolve_root(args.store), args.name, args.family)
    return _show(spec, "built and registered", args.json)
