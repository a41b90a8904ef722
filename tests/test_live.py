"""``pages.common.live``: the server's watcher sees a write, names only the sessions that drew an older
version, and costs a ``stat`` per store when nothing was written (the manifest is parsed only when its file
changed)."""

from __future__ import annotations

import pandas as pd
import pytest

from pages.common import live
from store.store import Store


def _write(store: Store, item: str) -> None:
    store.append({"items": pd.DataFrame({"benchmark": ["b"], "item_id": [item], "question": ["q"]})})


def test_a_write_is_seen_and_an_unchanged_manifest_is_never_parsed(tmp_path, monkeypatch):
    store = Store(tmp_path / "store")
    _write(store, "i1")
    root, version, seen = str(store.root), store.version(), {}
    assert live.published(root, seen) == version  # the first check parses once
    parsed = []
    real = Store.version
    monkeypatch.setattr(Store, "version", lambda self: parsed.append(1) or real(self))
    for _ in range(3):
        assert live.published(root, seen) == version
    assert parsed == []  # nothing written: a stat, no parse
    _write(store, "i2")
    assert live.published(root, seen) == version + 1 and parsed == [1]


def test_only_sessions_behind_their_store_are_stale(tmp_path):
    one, two = Store(tmp_path / "one"), Store(tmp_path / "two")
    _write(one, "i1")
    _write(two, "i1")
    before = one.version()
    drawn = {"a": (str(one.root), before), "b": (str(one.root), before), "c": (str(two.root), two.version())}
    seen: dict = {}
    assert live.stale(drawn, seen) == []
    _write(one, "i2")
    assert sorted(live.stale(drawn, seen)) == ["a", "b"]  # the other store's session is current
    drawn["a"] = (str(one.root), one.version())  # a's rerun drew the new version
    assert live.stale(drawn, seen) == ["b"]


def test_no_store_yet_and_the_period(tmp_path, monkeypatch):
    assert live.published(str(tmp_path / "none"), {}) is None
    assert live.stale({"a": (str(tmp_path / "none"), 0)}, {}) == []  # nothing published: nothing to follow
    assert live.manifest_stamp(str(tmp_path / "none")) is None
    for raw, want in (("0", 0.0), ("0.5", 0.5), ("soon", live.DEFAULT_POLL_S), ("-3", 0.0)):
        monkeypatch.setenv(live.POLL_ENV, raw)
        assert live.poll_seconds() == pytest.approx(want)
    monkeypatch.delenv(live.POLL_ENV)
    assert live.poll_seconds() == live.DEFAULT_POLL_S
