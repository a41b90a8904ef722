"""How each configuration's frames are known (``trajaudit info``): responses per frames source.

docs/metrics.md "Frames seen": ``logged`` (indices stored with the response), ``reconstructed`` (the
harness sampler named at ingest, computed from the linked video at read time) or ``unknown``. Rows
written before ``frames_source`` existed count as logged where they hold indices, else unknown, as
``backend.scope.inspector.response_frames`` reads them. Text-only rows see no frames and are left out.
"""

from __future__ import annotations

from backend.scope.matrix import main_only
from store import configs
from store.store import Store

SOURCE_SQL = """CASE WHEN frames_source = 'reconstructed' THEN 'reconstructed'
                     WHEN frame_indices IS NOT NULL THEN 'logged' ELSE 'unknown' END"""


def frames_known(store: Store) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """``{model: {benchmark: {config: {source: responses}}}}`` over main-run visual rows, with the
    sampler named for reconstructed rows as ``reconstructed:<sampler>``."""
    with store.connect() as con:
        rows = con.sql(
            f"""SELECT model, benchmark, config,
                       {SOURCE_SQL} || CASE WHEN frames_source = 'reconstructed' THEN ':' || coalesce(sampler, '?')
                                            ELSE '' END AS source,
                       count(*) AS n
                FROM responses WHERE config <> 'text' AND {main_only()} GROUP BY ALL ORDER BY ALL"""
        ).fetchall()
    out: dict = {}
    for model, bench, config, source, n in rows:
        out.setdefault(model, {}).setdefault(bench, {}).setdefault(config, {})[source] = int(n)
    return {  # configurations in grid order (8f before 16f), as every other listing has them
        m: {b: {c: per[c] for c in configs.order(list(per))} for b, per in benches.items()}
        for m, benches in out.items()
    }
