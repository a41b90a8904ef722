"""What "Why these items?" explains (``backend.analysis.explain``): apart from the explanation itself, which
builds frames and imports pandas, so ``backend.views`` names it in ``explain_view``'s signature without
loading the analysis on every view."""

from __future__ import annotations

from dataclasses import dataclass

from backend.contracts.explain import TargetKind


@dataclass(frozen=True)
class Target:
    """What is explained: ``flow`` (from, to, kind), ``state`` (config, correct|wrong: a Sankey node), ``tag`` (a
    trajectory tag) or ``items`` (ids)."""

    kind: TargetKind
    args: tuple[str, ...]

    def describe(self) -> str:
        if self.kind == "flow":
            return f"{self.args[0]} → {self.args[1]} {self.args[2]}"
        if self.kind == "state":
            return f"{self.args[1]} at {self.args[0]}"
        if self.kind == "tag":
            return f"tag {self.args[0]}"
        return f"{len(self.args)} listed items"

    def to_argv(self) -> list[str]:
        """The flag that names it (``items``: the file is the caller's; ``--items FILE``)."""
        if self.kind in ("flow", "state"):
            return [f"--{self.kind}", ":".join(self.args)]
        return ["--tag", self.args[0]] if self.kind == "tag" else []
