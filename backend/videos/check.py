"""``trajaudit videos check``: per benchmark, how many items have a readable video, and which do not.

Counts are over the items the store holds and the items the catalog links (their union):
``linked`` (found and readable), ``missing`` (the file is not there, now or when linked),
``unreadable`` (there but not a video), ``unlinked`` (a stored item the catalog has no row for).
A file linked earlier and deleted since counts as missing: each linked file is looked up again.
"""

from __future__ import annotations

import pandas as pd

from backend.contracts.base import built
from backend.contracts.store import VideoCheckReport
from backend.videos.decode import default_video_root
from store.store import Store

EXAMPLES = 3
STATES = ("linked", "missing", "unreadable", "unlinked")


def _states(store: Store, benchmark: str | None) -> pd.DataFrame:
    """benchmark, item_id, path, state: one row per item in the store or the catalog."""
    where = "WHERE benchmark = ?" if benchmark else ""
    params = [benchmark, benchmark] if benchmark else []
    rows = store.query(
        f"""SELECT benchmark, item_id, v.path, coalesce(v.status, 'unlinked') AS state
            FROM (SELECT benchmark, item_id FROM items {where}) i
            FULL OUTER JOIN (SELECT benchmark, item_id, path, status FROM videos {where}) v
            USING (benchmark, item_id) ORDER BY benchmark, item_id""",
        params,
    )
    root = default_video_root(store.root)
    linked = rows["state"].eq("linked")
    gone = rows.loc[linked, "path"].map(lambda p: not (root / p).is_file())
    rows.loc[gone[gone].index, "state"] = "missing"
    return rows


def check(store: Store, benchmark: str | None = None) -> VideoCheckReport:
    """The video root and one report per benchmark (module docstring), benchmarks in name order."""
    rows = _states(store, benchmark)
    out = []
    for bench, g in rows.groupby("benchmark", sort=True):
        counts = g["state"].value_counts()
        examples = {
            s: g.loc[g["state"] == s, ["item_id", "path"]]
            .head(EXAMPLES)
            .astype(object)
            .where(lambda d: d.notna(), None)
            for s in STATES[1:]
        }
        out.append(
            {
                "benchmark": str(bench),
                "items": len(g),
                **{s: int(counts.get(s, 0)) for s in STATES},
                "examples": {s: e.to_dict("records") for s, e in examples.items()},
            }
        )
    return built({"video_root": str(default_video_root(store.root)), "benchmarks": out}, VideoCheckReport)
