"""``backend.scope.sorted_keys``: the binary search finds what DuckDB's join finds, in DuckDB's order."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.scope import sorted_keys

TEXT = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x2FFFF, exclude_categories=("Cs",)), max_size=6)


def _duckdb_sorted(pairs: list[tuple[str, str]]) -> pa.Table:
    con = duckdb.connect()
    con.register("t", pa.table({"benchmark": [b for b, _ in pairs], "item_id": [i for _, i in pairs]}))
    return con.sql("SELECT DISTINCT benchmark, item_id FROM t ORDER BY benchmark, item_id").to_arrow_table()


@settings(max_examples=150, deadline=None)
@given(
    pairs=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=60), probes=st.lists(st.tuples(TEXT, TEXT), max_size=8)
)
def test_search_finds_each_key_of_a_table_sorted_by_duckdb_and_no_other(pairs, probes):
    table = _duckdb_sorted(pairs)
    rows = {(b, i): k for k, (b, i) in enumerate(zip(table["benchmark"].to_pylist(), table["item_id"].to_pylist()))}
    keys = [*pairs[:4], *probes]
    assert sorted_keys.search(table, keys) == {k: rows.get(k, -1) for k in keys}
    # the same through an order (a table kept in arrival order, as the coverage index is)
    shuffled = table.take(pa.array(np.random.default_rng(len(pairs)).permutation(table.num_rows)))
    order = sorted_keys.key_order(shuffled)
    found = sorted_keys.search(shuffled, keys, order)
    assert found is not None
    for key in keys:
        at = found[key]
        assert (at == -1) == (key not in rows)
        if at >= 0:
            assert (shuffled["benchmark"][at].as_py(), shuffled["item_id"][at].as_py()) == key


@given(
    pairs=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=40, unique=True),
    new=st.lists(st.tuples(TEXT, TEXT), max_size=6, unique=True),
)
@settings(max_examples=100, deadline=None)
def test_an_order_grown_by_insertion_is_the_order_of_the_grown_table(pairs, new):
    table = pa.table({"benchmark": [b for b, _ in pairs], "item_id": [i for _, i in pairs]})
    fresh = sorted(set(new) - set(pairs))
    order = sorted_keys.key_order(table)
    grown = np.insert(order, sorted_keys.insertion(table, fresh, order), table.num_rows + np.arange(len(fresh)))
    more = pa.table({"benchmark": [b for b, _ in fresh], "item_id": [i for _, i in fresh]}, schema=table.schema)
    bigger = pa.concat_tables([table, more])
    assert grown.tolist() == sorted_keys.key_order(bigger).tolist()


def test_many_keys_or_nulls_are_left_to_a_join():
    table = _duckdb_sorted([("b", f"q{k}") for k in range(100)])
    assert sorted_keys.search(table, [("b", f"q{k}") for k in range(sorted_keys.FEW + 1)]) is None
    assert sorted_keys.search(table, [(None, "q1")]) is None
    assert sorted_keys.search(pa.table({"benchmark": [None, "b"], "item_id": ["x", "y"]}), [("b", "y")]) is None
