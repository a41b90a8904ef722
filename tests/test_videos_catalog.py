"""Issue 20, the catalog (``videos`` table, ``backend.videos.catalog``): typed lookups, a re-link replaces one
benchmark's rows only, and ``check``/``repair`` treat the table like the others."""

from __future__ import annotations

import pandas as pd

from backend.videos import catalog
from store import health


def rows(items: list[str], status: str = "linked") -> pd.DataFrame:
    n = len(items)
    return pd.DataFrame(
        {
            "item_id": items,
            "path": [f"data/{i}.mp4" for i in items],
            "status": [status] * n,
            "n_frames": [30] * n if status == "linked" else [None] * n,
            "layout": ["paths"] * n,
            "linked_at": [pd.Timestamp("2026-01-01", tz="UTC")] * n,
        }
    )


def test_lookup_on_an_empty_store_has_the_columns(store):
    got = catalog.lookup(store, "videomme", ["001-1"])
    assert list(got.columns) == catalog.COLUMNS and got.empty
    assert str(got["n_frames"].dtype) == "Int64" and str(got["width"].dtype) == "Int32"


def test_relink_replaces_only_that_benchmark(store):
    catalog.replace(store, "videomme", rows(["001-1", "001-2"]))
    catalog.replace(store, "mlvu", rows(["a"], status="missing"))
    catalog.replace(store, "videomme", rows(["002-1"]))
    assert catalog.lookup(store, "videomme")["item_id"].tolist() == ["002-1"]
    mlvu = catalog.lookup(store, "mlvu")
    assert mlvu["status"].tolist() == ["missing"] and mlvu["n_frames"].isna().all()
    assert catalog.lookup(store, "videomme", ["001-1", "002-1"])["n_frames"].tolist() == [30]
    report = health.check(store, deep=True)
    assert report.sound and report.rows["videos"] == 2 and not report.orphans
    assert all(f.startswith("catalog/") for f in store.manifest().files["videos"])


def test_repair_rebuilds_a_lost_manifest_without_counting_a_relink_twice(store):
    catalog.replace(store, "videomme", rows(["001-1", "001-2"]))
    catalog.replace(store, "videomme", rows(["001-1"]))
    (store.root / "manifest.json").write_text("{trunc")
    out = health.repair(store)
    assert out.rebuilt_manifest
    assert catalog.lookup(store, "videomme")["item_id"].tolist() == ["001-1"]


def test_compact_merges_the_catalog_like_the_other_tables(store):
    catalog.replace(store, "videomme", rows(["001-1", "001-2"]))
    catalog.replace(store, "mlvu", rows(["a"]))
    catalog.replace(store, "videomme", rows(["002-1"]))
    before = len(store.manifest().files["videos"])
    assert before > 1 and store.compact()["videos"] == before
    assert len(store.manifest().files["videos"]) == 1 and health.check(store, deep=True).sound
    assert catalog.lookup(store, "videomme")["item_id"].tolist() == ["002-1"]
    assert catalog.lookup(store, "mlvu")["item_id"].tolist() == ["a"]
