"""``pages.common.live``: the check an open page makes every few seconds sees a write, and costs a ``stat``
when there is none (the manifest is parsed only when its file changed)."""

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
    version, seen = store.version(), {}
    assert not live.moved(str(store.root), version, seen)  # the first check of a run parses once
    parsed = []
    real = Store.version
    monkeypatch.setattr(Store, "version", lambda self: parsed.append(1) or real(self))
    for _ in range(3):
        assert not live.moved(str(store.root), version, seen)
    assert parsed == []  # nothing written: a stat, no parse
    _write(store, "i2")
    assert live.moved(str(store.root), version, seen) and parsed == [1]


def test_no_store_yet_and_the_period(tmp_path, monkeypatch):
    assert not live.moved(str(tmp_path / "none"), 0, {})
    assert live.manifest_stamp(str(tmp_path / "none")) is None
    for raw, want in (("0", 0.0), ("0.5", 0.5), ("soon", live.DEFAULT_POLL_S), ("-3", 0.0)):
        monkeypatch.setenv(live.POLL_ENV, raw)
        assert live.poll_seconds() == pytest.approx(want)
    monkeypatch.delenv(live.POLL_ENV)
    assert live.poll_seconds() == live.DEFAULT_POLL_S
