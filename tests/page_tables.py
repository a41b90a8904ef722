"""Reading the tables a page drew as plain HTML (``backend.report.html.table_html``) in an ``AppTest``."""

from __future__ import annotations

import html
import re

from streamlit.testing.v1 import AppTest


def html_rows(at: AppTest, name: str) -> list[list[str]]:
    """The body rows of the table ``name`` a page drew as HTML (``backend.report.html.table_html``): each cell's
    text, an interval after its value as the report's cells have it ("52.8 [52.2, 53.4]")."""
    block = next(h.value for h in at.html if f'<table id="table-{name}">' in h.value)
    body = block.split(f'<table id="table-{name}">', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell.replace('<span class="ci">', " ")))
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]
