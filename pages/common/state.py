"""View state that lives in the URL, so a copied link reopens the same view.

Streamlit drops a widget's value when the widget is not drawn (another page) and clears the
query string on page switches, so the state of record is kept in session state under ``s_<key>``
and written to ``st.query_params``; widgets are bound to it (``bind``) instead of owning it. A new
session (an opened link) seeds the state from the URL once. Navigation links and ``go`` carry the
state in their query parameters, because rewriting the URL in the same run as a page switch
would race the browser's own URL update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import streamlit as st

# URL parameter -> kind. Lists are comma-joined; every value is validated where it is used.
PARAMS: dict[str, type] = {
    "db": str,  # one of the stores the server was configured with, by name (backend.serverconfig)
    "bench": str,  # benchmark
    "models": list,  # models compared / matched over
    "model": str,  # focus model (flows, items, inspector, tag filter)
    "grid": list,  # configurations, in order
    "task": list,  # task types
    "dur": list,  # duration categories
    "tag": str,  # trajectory tag of the focus model
    "q": str,  # free-text search
    "flowview": str,  # flows page: "grid" or "pair"
    "from": str,  # configuration pair (flows page)
    "to": str,
    "kind": str,  # flow kind opened on the flows page
    "node": list,  # flows page: a Sankey node opened, [config, "correct"|"wrong"]
    "walk": list,  # the selection the Inspector walks (backend.scope.selection.Selection.to_url); none: the filtered items
    "pick": bool,  # items page: pick rows (multi-select) instead of opening one
    "minn": int,  # overview: the smallest task-type group shown without a small-n mark
    "chartn": int,  # sidebar: a chart resting on fewer items is replaced by a notice (pages.common.small_n)
    "tsort": str,  # overview: task-type table sort
    "sort": str,  # items page sort key
    "desc": bool,
    "page": int,
    "size": int,
    "itemview": str,  # items page: "table" or "heatmap"
    "item": str,  # selected item id (inspector)
    "strips": list,  # inspector: configurations whose frame strips are shown
    "texts": list,  # inspector: models whose answers the texts panel shows (open-ended items)
    "atag": list,  # annotation tags (item filter)
    "noise": bool,  # overview and flows: hide within-noise flips
    "reruns": bool,  # include live re-runs in the matrix (an overlay otherwise)
    "run": str,  # the run every cell is read from where cells hold several (--run)
    "cut": str,  # how scored (open-ended) items enter accuracy: stored, none or a cut-off (--score-cutoff)
    "stol": float,  # flows: the score tolerance of "unchanged" (--tolerance)
    "sband": list,  # flows: a score band opened, [from, to, improved|regressed|unchanged]
    "ladder": list,  # policies: the cascade's and predictor's ladder
    "thr": float,  # policies: cascade threshold
    "folds": int,  # policies: predictor cross-validation folds
    "pseed": int,  # policies: predictor seed
    "atab": str,  # audits: the open tab
    "atop": str,  # audits: top budget of the intervention audit
    "apolicy": str,  # audits: the configuration the intervention re-runs at
    "tol": float,  # audits: iso-compute tolerance
    "pix": int,  # audits: pixels per frame of labels without a spatial part
    "xa": str,  # audits: cross-model flows, model A and its config
    "xca": str,
    "xb": str,  # model B and its config
    "xcb": str,
}
# Parameters that once named server folders. Folders are the server's configuration, never a
# link's: these are ignored (with a notice), and dropped from the URL on the next write.
RETIRED = ("store", "vroot")
_SEEDED = "_state_seeded"
_IGNORED = "_state_ignored"
_GOTO = "_state_goto"


def _decode(kind: type, raw: str) -> Any:
    if kind is list:
        return [v for v in raw.split(",") if v]
    if kind is bool:
        return raw in ("1", "true", "yes")
    if kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            return None
    return raw


def _encode(kind: type, value: Any) -> str | None:
    if value is None or value == "" or value == []:
        return None
    if kind is list:
        return ",".join(str(v) for v in value)
    if kind is bool:
        return "1" if value else None
    return str(value)


def init() -> None:
    """Seed the state from the URL, once per session (an opened link)."""
    if st.session_state.get(_SEEDED):
        return
    st.session_state[_SEEDED] = True
    st.session_state[_IGNORED] = [key for key in RETIRED if key in st.query_params]
    for key, kind in PARAMS.items():
        if key in st.query_params:
            value = _decode(kind, st.query_params[key])
            if value is not None:
                st.session_state["s_" + key] = value


def ignored() -> list[str]:
    """The retired parameters the session's opening link carried (``RETIRED``), for the notice that they were ignored."""
    return st.session_state.get(_IGNORED, [])


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get("s_" + key, default)


def put(key: str, value: Any) -> None:
    st.session_state["s_" + key] = value


def params(**overrides: Any) -> dict[str, str]:
    """The state as query parameters (empty values left out), with ``overrides`` applied."""
    out = {}
    for key, kind in PARAMS.items():
        value = overrides[key] if key in overrides else get(key)
        encoded = _encode(kind, value)
        if encoded is not None:
            out[key] = encoded
    return out


def publish() -> None:
    """Write the state to the URL when it differs (call only in runs that did not switch page)."""
    want = params()
    if st.query_params.to_dict() != want:
        st.query_params.from_dict(want)


def _commit(key: str) -> None:
    put(key, st.session_state["w_" + key])


def _clamp(key: str, value: Any, default: Any, low: Any, high: Any) -> Any:
    """A number from a link outside the widget's range (``?thr=2``) is clamped, with a notice."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or (low is None and high is None):
        return value
    if value != value:  # NaN from the link: the default
        clamped = default
    else:
        clamped = min(max(value, low if low is not None else value), high if high is not None else value)
    if clamped != value:
        st.toast(f"The link's {key}={value} is out of range; showing {clamped}.", icon=":material/swap_horiz:")
        put(key, clamped)
    return clamped


def bind(
    widget: Callable[..., Any],
    key: str,
    label: str | None,
    *,
    options: list | None = None,
    default: Any = None,
    **kwargs: Any,
) -> Any:
    """Draw ``widget`` showing the state ``key``; the user's changes go back to the state.

    With ``options``, a stale value (from an old link, or options that changed) falls back to
    ``default`` (lists keep their valid entries, or take ``default`` when none is left), so no
    widget ever errors on a bad URL.
    """
    value = get(key, default)
    if options is not None:
        options = list(options)
        value = shown(key, options, default)
        kwargs["options"] = options
    value = _clamp(key, value, default, kwargs.get("min_value"), kwargs.get("max_value"))
    wkey = "w_" + key
    st.session_state[wkey] = value
    positional = [] if label is None else [label]  # st.pagination takes no label
    out = widget(*positional, key=wkey, on_change=_commit, args=(key,), **kwargs)
    put(key, out)
    return out


# A choice of any values among up to this many is pills (one click each); more are a multiselect, which searches a
# long list but costs the browser about 0.15 s more per pick (issue 33, ``benchmarks/widget_kinds.py``). Pills wrap
# onto more rows wherever they are: Streamlit's default keeps pills placed directly in a column on one row, scrolled
# sideways, which hid a pair's first configurations (Flows' from/to, the cross-model audit's).
PILLS_UP_TO = 24


class Choices(Protocol):
    """Where ``bind_many`` and ``bind_one`` draw: ``st`` itself, ``st.sidebar``, a container or a popover."""

    def pills(self, *args: Any, **kwargs: Any) -> Any: ...

    def multiselect(self, *args: Any, **kwargs: Any) -> Any: ...

    def selectbox(self, *args: Any, **kwargs: Any) -> Any: ...


def bind_many(
    box: Choices, key: str, label: str, options: list, default: Sequence = (), help: str | None = None
) -> list:
    """``bind`` for a choice of any of ``options`` (none chosen: an empty list): pills, or a multiselect beyond
    ``PILLS_UP_TO`` options."""
    if len(options) <= PILLS_UP_TO:
        chosen = bind(
            box.pills, key, label, options=options, default=list(default), selection_mode="multi", help=help, wrap=True
        )
        return list(chosen or [])
    return bind(box.multiselect, key, label, options=options, default=list(default), help=help)


def bind_one(box: Choices, key: str, label: str, options: list, default: Any, **kwargs: Any) -> Any:
    """``bind`` for a choice of one of ``options`` that always holds one: pills, or a select box beyond
    ``PILLS_UP_TO`` options (``kwargs``: ``help``, ``format_func``)."""
    if len(options) <= PILLS_UP_TO:
        return bind(box.pills, key, label, options=options, default=default, required=True, wrap=True, **kwargs)
    return bind(box.selectbox, key, label, options=options, default=default, **kwargs)


def one_of(box: Choices, label: str, options: list, default: Any, key: str, **kwargs: Any) -> Any:
    """A choice of one of ``options`` that always holds one and is not the URL's (a form's field, such as the re-run
    panel's model): pills, or a select box beyond ``PILLS_UP_TO`` options, as ``bind_one`` chooses (``kwargs``:
    ``help``, ``format_func``)."""
    if len(options) <= PILLS_UP_TO:
        return box.pills(label, options, default=default, required=True, key=key, wrap=True, **kwargs)
    return box.selectbox(label, options, index=options.index(default), key=key, **kwargs)


def shown(key: str, options: list, default: Any = None) -> Any:
    """The value of ``key`` a widget offering ``options`` shows (``bind``): a stale value falls back to ``default``
    (lists keep their valid entries, or take ``default`` when none is left)."""
    value = get(key, default)
    if isinstance(value, list):
        valid = [v for v in value if v in options]
        return valid if valid or not value else default
    if value in options:
        return value
    return default if default in options else (options[0] if options else None)


def go(page: str, **overrides: Any) -> None:
    """Switch to ``page`` (a path under pages/) carrying the state, with ``overrides`` applied."""
    for key, value in overrides.items():
        put(key, value)
    st.switch_page(page, query_params=params())


def go_later(page: str, **overrides: Any) -> None:
    """``go`` from a widget callback (where switching is not allowed): done by ``follow`` next run."""
    for key, value in overrides.items():
        put(key, value)
    st.session_state[_GOTO] = page


def follow() -> None:
    """Carry out a ``go_later`` request (the entry point calls this before running the page)."""
    page = st.session_state.pop(_GOTO, None)
    if page:
        go(page)
