"""Phase accounting: where the time went, and what a speed-up of one phase can buy end to end.

docs/metrics.md: a component speed-up ``s`` on a phase holding a share ``f`` of the wall time bounds the
end-to-end speed-up at ``1 / ((1 - f) + f / s)``. No speed-up is reported without the phase shares
it rests on. Shares are of the wall time; what the phases do not cover (store writes, planning,
Python between phases) is ``other``.

Each reuse acts on some phases (``REUSE_PHASES``): the frame cache on decoding and resizing
(``decode``, ``preprocess``), the prompt prefix on the processor call, the vision pass and the
prefill (``preprocess``, ``vision``, ``prefill``), per-frame features on ``preprocess`` and ``vision``
(the cache also keeps each frame's processed pixels where the processor treats frames alone). For a reuse,
``f`` is the cold share of its phases, ``s`` the cold over reused time of those phases, and the
ceiling the bound above. Reuses share phases, so per-reuse ceilings do not multiply; the measured
end-to-end speed-up is reported beside them. Pruning (``prune``) is accounted the same way, against
its exact twin.

:func:`composed` predicts two modes run together from each one's measured phase times: each
phase keeps the fraction of its cold time that each mode leaves, so a mode's gain is worth less
once the other has shrunk the phase it acts on (the seed's composition audit: pruning with prefix
reuse is not the product of the two speed-ups).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from backend.contracts.runs import PHASES, ReuseCeiling

REUSES = ("decode", "prefix", "vision")
REUSE_PHASES: dict[str, tuple[str, ...]] = {
    "decode": ("decode", "preprocess"),
    "prefix": ("preprocess", "vision", "prefill"),
    "vision": ("preprocess", "vision"),
    # the approximate protocol (C-VISION): fewer units through the encoder, fewer tokens in the prefill
    "prune": ("vision", "prefill"),
}


def ceiling(f: float, s: float) -> float:
    """The end-to-end speed-up a component speed-up ``s`` on a share ``f`` allows."""
    if s <= 0:
        return float("nan")
    return 1.0 / ((1.0 - f) + f / s)


def totals(timings: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Seconds per phase summed over cells."""
    out = dict.fromkeys(PHASES, 0.0)
    for t in timings:
        for phase in PHASES:
            out[phase] += float(t.get(phase, 0.0))
    return out


def shares(phase_totals: Mapping[str, float], wall: float | None = None) -> dict[str, float]:
    """Each phase's share of ``wall`` (default: of the phases' sum), plus ``other``."""
    covered = sum(phase_totals[p] for p in PHASES)
    wall = covered if wall is None else max(wall, covered)
    if wall <= 0:
        return {**dict.fromkeys(PHASES, 0.0), "other": 0.0}
    return {**{p: phase_totals[p] / wall for p in PHASES}, "other": (wall - covered) / wall}


def reuse_table(
    cold: Mapping[str, float], reused: Mapping[str, float], reuses: Iterable[str] = REUSES
) -> list[ReuseCeiling]:
    """Per reuse: its phases, their cold share ``f``, component speed-up ``s`` and the ceiling.

    ``cold`` and ``reused`` are phase totals over the *same* cells (the verified pairs, or two
    whole sweeps of the same grid).
    """
    cold_wall = sum(cold[p] for p in PHASES)
    rows = []
    for reuse in reuses:
        phases = REUSE_PHASES[reuse]
        before, after = sum(cold[p] for p in phases), sum(reused[p] for p in phases)
        f = before / cold_wall if cold_wall > 0 else 0.0
        s = before / after if after > 0 else float("inf")
        rows.append(ReuseCeiling(reuse=reuse, phases=list(phases), f=f, s=s, ceiling=ceiling(f, s)))
    return rows


def speedup(cold: Mapping[str, float], reused: Mapping[str, float]) -> float:
    """Measured end-to-end speed-up over the phases (cold seconds / reused seconds)."""
    after = sum(reused[p] for p in PHASES)
    return sum(cold[p] for p in PHASES) / after if after > 0 else float("inf")


def composed(cold: Mapping[str, float], a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Predicted end-to-end speed-up of modes ``a`` and ``b`` together (phase totals of each alone)."""
    after = sum(a[p] * (b[p] / cold[p]) if cold[p] > 0 else a[p] for p in PHASES)
    return sum(cold[p] for p in PHASES) / after if after > 0 else float("inf")
