"""Tables as CSV for a spreadsheet, safe to open: the one writer every CSV export uses (``trajaudit
items --format csv``, every page's CSV download).

Questions, ids, task types and model outputs are other people's text. A spreadsheet runs a cell that
starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab or carriage return) as a formula:
``=HYPERLINK(...)`` in a question becomes a live link, ``@SUM(...)`` a computation. As OWASP's "CSV
injection" guidance recommends, such text cells (and column names) get a leading ``'``, which makes
the spreadsheet show the text as written (text already starting with ``'`` gets one more, so reading
an export back, ``from_cell``, is exact). Numbers stay numbers: only text values are touched, found
column-wise with one regex match per text column.
"""

from __future__ import annotations

import csv
import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

# What a spreadsheet may run as a formula at the start of a cell, and the apostrophe itself (so an
# export reads back exactly: ``from_cell`` drops one apostrophe before any of these).
FORMULA_START = r"[=+\-@\t\r']"


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name a spreadsheet would run prefixed by ``'``."""
    import pandas as pd  # only an export pays it: ``from_cell`` is read on the computing path (the selection)

    out = frame.copy(deep=False)
    for col in frame.columns:
        dtype = frame[col].dtype
        if not (pd.api.types.is_string_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype)):
            continue  # numbers, booleans, timestamps
        values = frame[col].astype(object)
        risky = _risky(values)
        if risky.any():
            out[col] = values.where(~risky, "'" + values[risky].astype("str"))
    names = pd.Series(out.columns, dtype=object)
    out.columns = names.where(~_risky(names), "'" + names.astype("str")).tolist()
    return out


def _risky(values: pd.Series) -> np.ndarray:
    """Which values are text starting like a formula (an object column may mix numbers and text)."""
    text = values.map(type).eq(str).to_numpy()
    return text & values.where(text, "").astype("str").str.match(FORMULA_START).to_numpy(dtype=bool)


def from_cell(text: str) -> str:
    """A text cell of an export as it was before ``spreadsheet_safe`` (reading an export back)."""
    return text[1:] if len(text) > 1 and text[0] == "'" and re.match(FORMULA_START, text[1]) else text


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV (no index), spreadsheet-safe. Every text cell is quoted: Python 3.11's csv
    writer leaves a bare carriage return unquoted, which a spreadsheet reads as a new row."""
    return spreadsheet_safe(frame).to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC)
