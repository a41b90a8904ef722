"""What a view looks at: the scope (benchmark, models, grid, filters, tags), the matched response
matrix loaded for it from the store, item tables and pages, one item's detail, annotations.

``resolve.Scope`` is the one object a page's sidebar and a command's flags both build.
"""
