"""Small decisions every view shares: which models a fresh view compares and which configurations
they share. (The default grid and the tag filter belong to ``backend.scope.resolve``; the item
table, its sorting and paging to ``backend.scope.items``.)
"""

from __future__ import annotations

from backend.contracts.store import StoreContents
from store import configs


def shared_configs(
    available: StoreContents, models: list[str], benchmark: str | None, reruns: bool = False
) -> list[str]:
    """Configurations every model in ``models`` has on ``benchmark`` (all benchmarks when None).

    Main runs only, unless ``reruns``: then configurations only live re-runs reached count too.
    """
    per_model = []
    for m in models:
        kinds = [available.configs.get(m, {})] + ([available.reruns.get(m, {})] if reruns else [])
        labels = {c for by_bench in kinds for b, cs in by_bench.items() if benchmark in (None, b) for c in cs}
        per_model.append(labels)
    return configs.order(list(set.intersection(*per_model))) if per_model else []


DEFAULT_MODELS = 4  # models a fresh view compares: the dashboard's sidebar and the CLI without --models


def default_models(available: StoreContents, benchmark: str, limit: int = DEFAULT_MODELS) -> list[str]:
    """Models a fresh view compares: greedily, those that keep at least two shared configurations.

    Models with more configurations go first; a model that would leave the group fewer than two
    shared configurations is skipped (it stays one click away), so the default view is never empty.
    """
    have = {m: set(b.get(benchmark, [])) for m, b in available.configs.items() if benchmark in b}
    chosen: list[str] = []
    shared: set[str] = set()
    for model in sorted(have, key=lambda m: (-len(have[m]), m)):
        common = have[model] if not chosen else shared & have[model]
        if len(common) >= 2:
            chosen.append(model)
            shared = common
        if len(chosen) == limit:
            break
    return chosen or sorted(have)[:1]
