"""The characters that are not visible text: what a name or id must not hold, and what a terminal must not receive.

C0/C1 controls (NUL included) and line separators, and the invisible or bidirectional formatting characters
(Unicode category Cf, the Hangul fillers and variation selectors) that make two names look alike or an id untypable
(checked once NFKC-normalised, ``store.ingest.gate``), or that a terminal would act on instead of printing
(``trajaudit items``' text page). A module of its own: the CLI's text output imports it without ingest's pandas.
"""

from __future__ import annotations

import re

UNSHOWN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
