"""``trajaudit sweep``: build a response matrix, every missing cell of a grid, with repeated work skipped."""

from __future__ import annotations

import argparse
import sys

from backend.cli.common import add_json, command, print_json, split_list
from backend.contracts.runs import PhaseTotals, SweepReport
from backend.extras import require_worker_extra
from backend.runtime.sweep.accounting import PHASES, REUSES
from backend.runtime.sweep.plan import DEFAULT_BATCH
from store.errors import UserError


def register(sub) -> None:
    p = command(
        sub,
        "sweep",
        "Run every missing cell (model x item x configuration) and append the answers to the store in "
        "batches (origin=sweep, run=main). Decodes each video once for all budgets, shares one prompt "
        "prefix per (video, configuration) among the video's questions, and reuses per-frame vision "
        "features where the model encodes frames independently; --no-reuse turns these off (all off is "
        "the cold baseline). --verify K re-runs K random cells cold and fails on any changed answer.",
    )
    p.add_argument("--model", required=True, help="registered model name (trajaudit models list)")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--grid", required=True, help="configuration labels, e.g. text,8f,16f,32f,64f or 64f@151k")
    p.add_argument(
        "--policies",
        default=None,
        help="sampling policies crossed with the visual labels: uniform,random:0,random:1 (default uniform)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--items", default=None, metavar="FILE", help="file of item ids to sweep, one per line")
    which.add_argument("--limit", type=int, default=None, metavar="N", help="the first N items (by video, id)")
    p.add_argument("--executor", choices=("local", "ray"), default="local")
    p.add_argument("--workers", type=int, default=None, help="Ray actors (default: one per GPU, else 1)")
    p.add_argument("--ray-address", default=None, help="Ray cluster to join ('auto' for a running one)")
    p.add_argument(
        "--video-root",
        default=None,
        metavar="DIR",
        help="with --executor ray: the videos' folder on the nodes (default: TRAJAUDIT_VIDEO_ROOT there); the "
        "actors never see the store, and return their batches to this process, which appends them",
    )
    p.add_argument("--resume", action="store_true", help="skip cells already stored (else refuse to start)")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH, help="cells per store write")
    p.add_argument("--no-reuse", default="", metavar="LIST", help=f"reuses to switch off: {','.join(REUSES)}")
    p.add_argument(
        "--approx",
        default=None,
        metavar="SPEC",
        help="approximate protocol (C-VISION), e.g. prune:keep=0.85: static vision units (max-abs RGB "
        "difference against the previous sampled frame, on the model's token grid) are dropped "
        "before the encoder; the visual labels run as <label>~prune<keep%%>, text-only is skipped; "
        "compare with the exact twin by --verify K. A label of the grid may name it too: 32f~prune85",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="RGB",
        help="with --approx: drop only units whose max-abs RGB difference (0..255) is at most this "
        "(keep= then bounds how many may go); the labels name it: <label>~prune<keep%%>t<RGB>",
    )
    p.add_argument("--verify", type=int, default=0, metavar="K", help="re-run K random cells cold (drift check)")
    p.add_argument("--verify-seed", type=int, default=0)
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    p.add_argument(
        "--random-fullsize",
        nargs="?",
        const="",
        default=None,
        metavar="PRESET",
        help="time a full-size random-weight build of the model's family (no checkpoint needed); answers are noise",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_worker_extra("trajaudit sweep")  # before the engine's imports: they load torch
    from backend.runtime.sweep.engine import Reuse
    from backend.runtime.sweep.plan import expand_grid, read_item_ids
    from backend.runtime.sweep.runner import SweepRequest, run_sweep
    from store.store import resolve_root

    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.verify < 0:
        raise UserError(f"--verify must be 0 or more, got {args.verify}")
    if args.video_root is not None and args.executor != "ray":
        raise UserError("--video-root names the videos' folder on the Ray nodes: it needs --executor ray")
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    configs = expand_grid(split_list(args.grid) or [], split_list(args.policies))
    if args.threshold is not None and args.approx is None:
        raise UserError("--threshold needs --approx prune:keep=<rate> (the keep rate names the label)")
    if args.approx is not None:
        from backend.runtime.inference.pruning import PruneSpec
        from backend.runtime.sweep.plan import approximate

        spec = PruneSpec.parse(args.approx, args.threshold)
        configs = approximate(configs, spec.suffix)
        if not configs:
            raise UserError("--approx: the grid has no visual configuration to prune")
    request = SweepRequest(
        store_root=str(resolve_root(args.store)),
        model=args.model,
        benchmark=args.benchmark,
        configs=configs,
        item_ids=read_item_ids(args.items) if args.items else None,
        limit=args.limit,
        resume=args.resume,
        batch_size=args.batch_size,
        reuse=Reuse.without(split_list(args.no_reuse) or []),
        verify=args.verify,
        verify_seed=args.verify_seed,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        video_root=args.video_root,
        device=args.device,
        random_fullsize=args.random_fullsize,
        progress=not args.no_progress and not args.json,
        args={k: v for k, v in vars(args).items() if k not in ("func", "json", "store")},
    )
    summary = run_sweep(request)
    if args.json:
        print_json(summary)
    else:
        print(format_summary(summary))
    verify = summary.verify
    if verify and verify.choice_drift and summary.approximate:
        print(
            f"trajaudit sweep: approximate protocol: {verify.choice_drift} of {verify.cells} verified cells "
            "answer differently from their exact twin (rows kept under their ~prune labels)",
            file=sys.stderr,
        )
    elif verify and verify.choice_drift:
        print(
            f"trajaudit sweep: DRIFT: {verify.choice_drift} of {verify.cells} verified cells changed their "
            f"answer on the reused path; the {summary.cells.done} rows of {summary.sweep_id} were "
            "withdrawn from the store. Re-run with --no-reuse (all or some of decode,prefix,vision).",
            file=sys.stderr,
        )
        return 1
    if summary.cells.failed:
        print(
            f"trajaudit sweep: {summary.cells.failed} cell(s) failed (see above); --resume retries them",
            file=sys.stderr,
        )
        return 1
    return 0


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def _shares(shares: PhaseTotals, phases: tuple[str, ...]) -> str:
    """Each phase's share, in the order given (``other`` too, for a ``PhaseShares``)."""
    return "  ".join(f"{p} {_pct(getattr(shares, p))}" for p in phases)


def format_summary(s: SweepReport) -> str:
    """The end-of-sweep report as text."""
    c, k = s.cells, s.counters
    rate = f"{s.cells_per_second:.2f} cells/s" if s.cells_per_second else "-"
    lines = [
        f"sweep {s.sweep_id}: model {s.model}, benchmark {s.benchmark}, {len(s.configs)} configs, "
        f"executor {s.executor} ({s.shards} shard(s)), reuse: {', '.join(s.reuse) or 'none (cold baseline)'}",
        f"cells: {c.done} done, {c.skipped} skipped (already stored), {c.failed} failed, "
        f"{c.raced} stored meanwhile by another writer; {s.batches} batch(es)",
        f"time: {s.wall_seconds:.1f} s wall ({s.load_seconds:.1f} s loading, {s.sweep_seconds:.1f} s sweeping, {rate})",
        "phase shares: " + _shares(s.phase_shares, (*PHASES, "other")),
        f"reuse: frames decoded {k.frames_decoded} (cold {k.frames_decoded_cold}), processor calls "
        f"{k.processor_calls} (cold {k.processor_calls_cold}), frames encoded {k.frames_encoded} "
        f"(cold {k.frames_encoded_cold}), prefill tokens {k.prefill_tokens} (cold {k.prefill_tokens_cold})",
    ]
    lines += [f"  failed {f.item_id} @ {f.config}: {f.message}" for f in s.failures]
    v = s.verify
    if v is None:
        lines.append("drift check: not run (--verify K re-runs K cells cold; speed-ups need those pairs)")
        return "\n".join(lines)
    twin = " (against the exact twin of each ~prune label)" if s.approximate else ""
    lines.append(
        f"drift check: {v.cells} cells re-run cold{twin}: choice drift {v.choice_drift}, correctness drift "
        f"{v.correctness_drift}, pathological outputs {v.pathological} (cold {v.pathological_cold}), "
        f"max probability difference {v.max_prob_diff:.2e}"
    )
    lines.append("  cold phase shares: " + _shares(v.cold_phase_shares, PHASES))
    lines.append("  mode      phases                      f      s       ceiling 1/((1-f)+f/s)")
    for row in v.reuse_ceilings:
        lines.append(f"  {row.reuse:<9} {'+'.join(row.phases):<27} {row.f:.3f}  {_times(row.s)}  {_times(row.ceiling)}")
    lines.append(f"  measured end to end on these cells (every mode together): {_times(v.measured_speedup, 0)}")
    return "\n".join(lines)


def _times(x: float | None, width: int = 5) -> str:
    """A speed-up as ``1.23x`` (``-`` where it is not defined)."""
    return "-" if x is None else f"{x:{width}.2f}x"
