"""Arguments and output helpers shared by the commands."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np
import pandas as pd


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, help="store folder (default: $TRAJAUDIT_STORE or ./trajaudit-data)")


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def split_list(value: str | None) -> list[str] | None:
    """'a,b, c' -> ['a', 'b', 'c']; None stays None."""
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return _clean(float(o))
    if isinstance(o, np.ndarray):
        return _clean(o.tolist())
    if isinstance(o, (pd.Timestamp,)):
        return o.isoformat()
    if hasattr(o, "to_dict"):
        return _clean(o.to_dict())
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(o: Any) -> Any:
    """NaN and +-Infinity are not JSON: print null instead."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def print_json(obj: Any) -> None:
    """Strict JSON (``allow_nan=False``): a non-finite number that escaped cleaning raises, never prints."""
    json.dump(_clean(obj), sys.stdout, default=_default, indent=2, allow_nan=False)
    sys.stdout.write("\n")
