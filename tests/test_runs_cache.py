"""``backend.scope.runs``: the runs per cell kept per store version and patched from a write's new rows equal a
grouping of every response, after new runs, repeats, re-runs and a ``--replace``."""

from __future__ import annotations

import pandas as pd

from backend.scope import cache_folder, runs
from store.schema import order_key_sql
from store.store import Store


def _cold(store: Store) -> list[tuple]:
    """The groups straight from every response (what the kept entry must equal)."""
    rows = store.query(
        f"""SELECT model, benchmark, config, coalesce(nullif(run, ''), 'main') AS run, min({order_key_sql()}) AS first
            FROM responses WHERE coalesce(origin, '') <> 'rerun' GROUP BY ALL"""
    )
    return sorted(map(tuple, rows.itertuples(index=False)))


def _kept(store: Store) -> list[tuple]:
    cache_folder.settle()
    return sorted(tuple(r) for r in runs._seen(store))


def _rows(config: str, run: str, n: int = 3, **extra) -> pd.DataFrame:
    return pd.DataFrame(
        {"model": "m", "benchmark": "b", "item_id": [f"q{i}" for i in range(n)], "config": config, "run": run,
         "correct": 1, **extra}
    )  # fmt: skip


def test_kept_runs_equal_a_cold_grouping_after_each_write(tmp_path, monkeypatch):
    grouped: list[int] = []  # rows each grouping read
    group = runs._grouped
    monkeypatch.setattr(runs, "_grouped", lambda store, change: grouped.append(change.n_rows()) or group(store, change))
    store = Store(tmp_path / "s")
    store.append({"responses": _rows("8f", "main")})
    assert _kept(store) == _cold(store)
    entries = len(cache_folder.versions(cache_folder.folder(store), runs.ENTRY))
    for frame in (
        _rows("8f", "cot"),  # a second run in a cell: patched, not regrouped
        _rows("16f", "main"),
        _rows("16f", "cot", origin="rerun"),  # a live re-run: never a run of the cell
        _rows("8f", "seed-1", n=1),
    ):
        store.append({"responses": frame})
        assert _kept(store) == _cold(store)
        assert grouped[-1] == len(frame)  # the write's rows alone
    assert len(cache_folder.versions(cache_folder.folder(store), runs.ENTRY)) >= min(entries + 1, runs.KEPT)
    assert runs.several_runs(store, ["m"], "b", ["8f", "16f"], None) == (
        runs.RunChoice("m", "8f", ("main", "cot", "seed-1"), "main"),
    )
    # rows gone (what ``ingest --replace`` does: a file rewritten without some, the old one retired): the entry
    # cannot be patched, and every file is grouped again; the last run of 8f is gone
    victim = store.manifest().files["responses"][-1]
    with store.writer() as w:
        w.retire("responses", [victim])
        w.add("responses", _rows("8f", "seed-1", n=0), supersedes=[victim])
    assert _kept(store) == _cold(store) and ("m", "b", "8f", "seed-1") not in {k[:4] for k in _kept(store)}
    assert grouped[-1] == store.query("SELECT count(*) AS n FROM responses")["n"][0]  # every row again
