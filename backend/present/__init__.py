"""One home for presentation: how a number, an interval, a p-value and a metric's name read, and the table
frames and figure series built from a view's dict, for the pages, the CLI's text output and the report alike.

``text`` formats, ``tables`` builds the headline, transition and task-type tables as text cells beside their
numbers, ``series`` lays out the points the Vega-Lite (pages) and Plotly (report) figures draw. Everything here
is a pure function of a view's JSON-ready dict (``backend.views``): no store, no Streamlit, no Plotly.
"""
