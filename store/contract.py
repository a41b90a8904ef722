"""The base of the store's typed records (a queue job, a health report, a registered model, an ingest's summary)
and of every report ``backend/contracts`` describes: a ``msgspec.Struct`` that is at once the object, its
validator and its JSON Schema.

Here, not in ``backend/``, because the store hands these records out and cannot import ``backend/``: the
store's records are the contracts the commands print (``backend.contracts`` re-exports them), so each is
defined once. ``backend/contracts/base.py`` says why msgspec and the conventions.
"""

from __future__ import annotations

import msgspec
from msgspec import Meta


class Contract(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A report or a part of one: built by ``backend/`` (or the store), validated once, drawn and printed as is."""


def doc(text: str) -> Meta:
    """A field's description in the JSON Schema."""
    return Meta(description=text)
