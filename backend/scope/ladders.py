"""Which configurations form a budget ladder, so a chart joins points only along one.

Two configurations are steps of one ladder when they differ only in the frame count: the same
pixels per frame, sampling policy, approximate protocol and scale-grid tag. ``32f@50k`` and
``32f@200k`` are not budget steps of ``32f``, nor is ``64f/dense-start`` of ``64f``: a chart that
joined them with a line would draw a trend that no budget sweep measured. Text-only (no frames,
hence no resolution or policy) starts the largest uniform-sampling ladder. A configuration alone in
its group is drawn as a separate marker.
"""

from __future__ import annotations

from store import configs


def ladders(labels: list[str]) -> tuple[list[list[str]], list[str]]:
    """(ladders of two or more configurations, each in budget order; the configurations on none)."""
    groups: dict[tuple, list[str]] = {}
    text = []
    for label in configs.order(list(dict.fromkeys(labels))):
        cfg = configs.parse(label)
        if cfg.is_text:
            text.append(label)
        else:
            groups.setdefault(cfg.ladder_key, []).append(label)
    uniform = [key for key, steps in groups.items() if configs.parse(steps[0]).is_budget_step]
    if text and uniform:
        main = max(uniform, key=lambda k: (len(groups[k]), k[0] is None))
        groups[main] = text + groups[main]
        text = []
    lines = [g for g in groups.values() if len(g) > 1]
    alone = text + [g[0] for g in groups.values() if len(g) == 1]
    return lines, configs.order(alone)
