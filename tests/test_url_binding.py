"""Why the view state keeps its hand-written URL sync (docs/architecture.md, "View state in the URL"): on the
pinned Streamlit, a query parameter bound to a widget (``bind="query-params"``) cannot travel through
``st.query_params`` or ``st.switch_page(query_params=...)``, which is how the pages carry a whole view.
When an upgrade lifts this, this test fails: time to move the widgets to Streamlit's binding."""

from __future__ import annotations

import pytest
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.state.query_params import QueryParams


@pytest.fixture
def bound() -> QueryParams:
    """The URL of a view (``bench`` from a sidebar widget, ``item`` set by the page), ``bench`` bound."""
    q = QueryParams()
    q.set_with_no_forward_msg("bench", "synthetic-videomme")
    q.set_with_no_forward_msg("item", "007-2")
    q.bind_widget(param_key="bench", widget_id="w-bench", value_type="string_value", script_hash="page")
    return q


def test_a_bound_parameter_cannot_be_carried_by_a_page_switch(bound):
    with pytest.raises(StreamlitAPIException, match="bound to a widget"):
        bound.from_dict({"bench": "synthetic-videomme", "item": "008-1"})  # what switch_page(query_params=) calls
    with pytest.raises(StreamlitAPIException, match="bound to widgets"):
        bound.clear()  # switch_page without query_params


def test_leaving_the_bound_parameter_out_drops_it_from_the_url(bound):
    bound.from_dict({"item": "008-1"})
    assert bound.to_dict() == {"item": "008-1"}  # the view's benchmark is gone from the link
