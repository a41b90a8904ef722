"""``trajaudit audit interventions|isocompute|noise|crossmodel``: protocol and noise audits of the matrix."""

from __future__ import annotations

import argparse

from backend import views
from backend.analysis import isocompute
from backend.cli.common import (
    add_json,
    add_store,
    command_group,
    focus_model,
    note_benchmark,
    print_json,
    split_list,
)
from backend.present.metrics import AUDIT_METRICS, METRICS, labelled
from backend.present.text import count
from backend.runtime import rerun
from backend.scope.matrix import available
from backend.scope.resolve import Resolved, Scope, add_item_filters, default_benchmark, item_filter_from
from backend.scope.view import open_view
from store.errors import UserError
from store.store import Store


def _common(p: argparse.ArgumentParser, model: bool = True) -> None:
    add_store(p)
    if model:
        p.add_argument(
            "--model", default=None, help="default: the dashboard's focus model when it opens (said on standard error)"
        )
    p.add_argument(
        "--benchmark", default=None, help="default: the largest benchmark the model has (said on standard error)"
    )
    add_item_filters(p, ids=False)
    add_json(p)


def _boot(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for intervals (0 = none)")
    p.add_argument("--seed", type=int, default=0)


def register(sub: argparse._SubParsersAction) -> None:
    audits = command_group(sub, "audit", "audit")

    a = audits.add_parser(
        "interventions",
        help="recovery of terminal regressions and agreement under other sampling protocols",
        description="For every protocol (sampling policy or pipeline tag) the store holds at the grid's budgets: "
        "Cohen's kappa per config, tag changes, and the recovery rate of the base grid's terminal regressions "
        "at the top budget. --enqueue LABEL queues re-runs of those terminal regressions at LABEL.",
    )
    _common(a)
    a.add_argument("--grid", default=None, help="base grid (default: the model's uniform-protocol configs)")
    a.add_argument("--protocols", default=None, help="only these protocols, e.g. random-s1,dense-start")
    a.add_argument(
        "--enqueue", default=None, metavar="LABEL", help="queue re-runs of the terminal regressions at LABEL"
    )
    _boot(a)
    a.set_defaults(func=run_interventions)

    i = audits.add_parser("isocompute", help="allocations of (nearly) equal pixel budget: who wins per item")
    _common(i)
    i.add_argument("--tolerance", type=float, default=isocompute.DEFAULT_TOLERANCE, help="relative budget tolerance")
    i.add_argument(
        "--default-pixels",
        type=int,
        default=None,
        help="pixels per frame of labels without '@<n>k' (default: the model registry's default_pixels)",
    )
    i.add_argument("--configs", default=None, help="only these configs (default: all the model has)")
    _boot(i)
    i.set_defaults(func=run_isocompute)

    n = audits.add_parser("noise", help="per-item flip rate under repeats; flips within vs beyond noise")
    _common(n)
    n.add_argument("--grid", default=None, help="default: the model's uniform-protocol configs")
    n.set_defaults(func=run_noise)

    c = audits.add_parser("crossmodel", help="flows between two models or checkpoints on the same items")
    _common(c, model=False)
    c.add_argument("--models", required=True, help="A,B: flows go from A to B")
    c.add_argument("--config", required=True)
    c.add_argument("--config-b", default=None, help="B's config (default: --config)")
    c.add_argument("--limit", type=int, default=50, help="most items listed per flow")
    c.set_defaults(func=run_crossmodel)


def _grid(args: argparse.Namespace, store: Store) -> list[str]:
    """``--grid``, else the audits' default grid on the benchmark the scope takes (``default_benchmark``)."""
    model = focus_model(args)
    benchmark = args.benchmark or default_benchmark(available(store), (model,))
    return split_list(args.grid) or views.audit_grid(store, model, benchmark)


def _single(args: argparse.Namespace, store: Store, grid: list[str] | tuple[str, ...] = ()) -> Resolved:
    """The one-model scope the flags name (``views.single_scope``: the Audits page builds the same)."""
    scope = Scope(args.benchmark, (focus_model(args),), item_filter=item_filter_from(args))
    return views.single_scope(scope, tuple(grid)).resolve(store)


def run_interventions(args: argparse.Namespace) -> int:
    store = Store(args.store)
    resolved = note_benchmark(_single(args, store, _grid(args, store)))
    out = views.interventions_view(store, resolved, split_list(args.protocols), args.bootstrap, args.seed)
    if args.enqueue:
        view = open_view(store, _single(args, store, out.grid))
        requests = views.intervention_requests(view, args.enqueue)
        out.enqueued = rerun.submit_many(store.root, requests)
    if args.json:
        print_json(out)
        return 0
    print(f"{out.model} on {','.join(out.grid)} (top {out.top}, protocol {out.base_protocol})")
    if not out.protocols:
        print("  no other protocol at these budgets in the store")
    kappa = AUDIT_METRICS["kappa_pooled"]
    for row in out.protocols:
        rec = row.recovery
        rec_txt = (
            "no counterpart at the top"
            if rec is None or rec.recovery_rate is None
            else (f"recovers {rec.n_recovered}/{rec.n_terminal} terminal regressions ({100 * rec.recovery_rate:.1f}%)")
        )
        print(
            f"  {row.protocol:14s} {kappa.label} {kappa.format(row.kappa_pooled)} over {count(row.n_items, 'item')}; {rec_txt}"
        )
    if out.enqueued:
        e = out.enqueued
        print(f"enqueued {e.queued} re-runs ({e.from_store} already stored, {len(e.errors)} refused)")
    return 0


# The numbers each text line shows, labelled and formatted as the registry says (the pages' and report's too).
GROUP = ("oracle_accuracy", "complementarity")
CROSSMODEL = ("rescued", "harmed", "net", "mcnemar_p")


def run_isocompute(args: argparse.Namespace) -> int:
    store = Store(args.store)
    resolved = note_benchmark(_single(args, store))
    pixels = args.default_pixels or views.registered_pixels(store, resolved)
    out = views.isocompute_view(
        store, resolved, args.tolerance, pixels, split_list(args.configs), args.bootstrap, args.seed
    )
    if args.json:
        print_json(out)
        return 0
    if not out.groups:
        print(out.note)
    for g in out.groups:
        cfgs = ", ".join(f"{c.config} {100 * c.accuracy:.1f}%" for c in g.configs)
        print(f"{cfgs}: {labelled(AUDIT_METRICS, g, GROUP)} on {count(g.n_items, 'item')}")
    return 0


def run_noise(args: argparse.Namespace) -> int:
    store = Store(args.store)
    out = views.noise_audit(open_view(store, note_benchmark(_single(args, store, _grid(args, store)))))
    if args.json:
        print_json(out)
        return 0
    print(
        f"{out.model}: {out.n_items_with_repeats} of {count(out.n_items, 'item')} have repeats; "
        + labelled(AUDIT_METRICS, out, ("n_items_noisy", "mean_item_flip_rate"))
    )
    for t in out.transitions:
        print(
            f"  {t.from_} -> {t.to}: rescued {t.rescued} (beyond noise {t.rescued_beyond}), "
            f"harmed {t.harmed} (beyond noise {t.harmed_beyond})"
        )
    return 0


def run_crossmodel(args: argparse.Namespace) -> int:
    models = split_list(args.models) or []
    if len(models) != 2:
        raise UserError(f"--models needs exactly two models, A,B (got {args.models!r})")
    store = Store(args.store)
    resolved = note_benchmark(
        views.single_scope(Scope(args.benchmark, (models[0],), item_filter=item_filter_from(args))).resolve(store)
    )
    out = views.crossmodel_view(store, resolved, (models[0], models[1]), args.config, args.config_b, args.limit)
    if args.json:
        print_json(out)
        return 0
    print(
        f"{out.from_model}@{out.from_} -> {out.to_model}@{out.to} on {count(out.n_items, 'item')}: "
        + labelled(METRICS, out, CROSSMODEL)
    )
    for row in out.by_benchmark:
        print(f"  {row.benchmark:20s} n={row.n:6d} rescued {row.rescued:5d} harmed {row.harmed:5d}")
    return 0
