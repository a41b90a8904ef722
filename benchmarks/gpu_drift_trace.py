"""Which reuse moves a family's answers? The sweep with each reuse alone, all, all but one, and none, against cold answers.

Why: ``gpu_check.py`` found Qwen3-VL's bf16 sweep moving one near-tied choice per round. Each reuse is exact
in arithmetic, so the question is which one sums in another order than a cold pass. This runs the same small
sweep (``gpu_check``'s store and grid) once per reuse setting, twice, every cell against its cold answer, and
prints per setting the choices moved, the largest change of an option's probability, and each moved cell with
its top-two probability margin on both paths; then three cold answers of one request, to show the cold path
itself is deterministic. ``--device cpu`` runs it on the tiny checkpoint (float32).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.runtime.sweep.engine import REUSES, Reuse  # noqa: E402
from benchmarks.gpu_check import load, one_request, sweep  # noqa: E402
from benchmarks.sweep import build_store  # noqa: E402


def margin(probs: dict[str, float]) -> float | None:
    """The top option's lead over the second: how near a tie the answer was."""
    top = sorted(probs.values(), reverse=True)
    return top[0] - top[1] if len(top) > 1 else None


def settings() -> list[tuple[str, Reuse]]:
    """No reuse, each reuse alone, all of them, and all but each (what ``--no-reuse <name>`` runs)."""
    alone = [(name, Reuse.without([other for other in REUSES if other != name])) for name in REUSES]
    but = [(f"all but {name}", Reuse.without([name])) for name in REUSES]
    return [("none", Reuse.without(list(REUSES))), *alone, ("all", Reuse()), *but]


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for the tiny checkpoint")
    parser.add_argument("--family", default="qwen3_vl")
    parser.add_argument("--grid", default="text,8f,16f")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", default=".bench/gpu_drift_trace")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    root = (Path(args.workdir) / args.family).resolve()
    shutil.rmtree(root, ignore_errors=True)
    adapter = load(args.family, build_store(root, 1, args.family, 1), args.device)
    lines = ["reuse on | cells | choices moved | max prob diff | moved cells (sweep / cold, top-two margin)"]
    with torch.inference_mode():
        for rep in range(1, args.rounds + 1):
            for name, reuse in settings():
                result = sweep(root, args.family, adapter, reuse, args.grid.split(","), args.device, rep)
                check = result["check"]
                moved = [
                    f"{o.item_id} {o.config}: {o.answer} ({margin(o.option_probs):.4f}) / "
                    f"{c.answer} ({margin(c.option_probs):.4f})"
                    for o, c in result["pairs"]
                    if o.answer != c.answer
                ]
                lines.append(
                    f"{name} | {check.cells} | {check.choice_drift} | {check.max_prob_diff:.4f} | {'; '.join(moved)}"
                )
        request = one_request(root, 16)
        repeats = [adapter.answer(request).option_probs for _ in range(3)]
    lines.append(f"three cold answers of one request bit-equal: {repeats[0] == repeats[1] == repeats[2]}")
    out = "\n".join(lines)
    print(out)
    return out


if __name__ == "__main__":
    main()
