"""Which items a selection holds, and how they answer under a re-run's configuration against a baseline.

``compare`` answers the question a batch re-run asks: of the selected items, how many are correct
under the new configuration against the baseline configuration. The answers come in as tables
(``backend.scope.selection.selection_answers``, read after the jobs wrote theirs); the counts are
the flows of ``backend.analysis.metrics`` and the intervals and test those of ``backend.analysis.stats``,
so a selection's rescued, harmed and McNemar p are the numbers a Sankey link would show for the
same items. Re-runs stay an overlay: nothing here changes a grid or a matrix.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.analysis.mcnemar import mcnemar_exact
from backend.analysis.metrics import flow_counts, flow_items
from backend.analysis.stats import wilson_interval
from backend.contracts.base import asdict, to_json
from backend.contracts.runs import BatchComparison, LoggedAgreement, Share
from backend.scope.matrix import Matrix
from backend.scope.selection import Selection, state_items


def item_ids(matrix: Matrix, model: str, selection: Selection, flow_list: pd.DataFrame | None = None) -> list[str]:
    """The selection's item ids, in the matrix's item order (picked items: in the order picked).

    ``flow_list`` is the flow's item list as the Flows page shows it (``views.flows_view``, which
    also drops within-noise flips when asked); without it the flow is read off the matrix.
    """
    ids = matrix.items["item_id"].astype(str)
    if selection.kind == "filtered":
        return ids.tolist()
    if selection.kind == "items":
        return list(dict.fromkeys(selection.args))
    if selection.kind == "state":
        return state_items(matrix, model, *selection.args)["item_id"].astype(str).tolist()
    if flow_list is not None:
        return flow_list["item_id"].astype(str).tolist()
    return flow_items(matrix, model, *selection.args)["item_id"].astype(str).tolist()


def _correct(answers: pd.DataFrame) -> np.ndarray:
    """Per item: 1.0 right, 0.0 wrong, NaN unanswered."""
    return answers["correct"].to_numpy(dtype=float)


def compare(
    base: pd.DataFrame,
    new: pd.DataFrame,
    ids: list[str],
    *,
    model: str,
    benchmark: str,
    config: str,
    baseline: str,
    label: str = "the selected items",
    logged: tuple[str, pd.DataFrame] | None = None,
) -> BatchComparison:
    """How the selection answers under ``config`` (``new``) against ``baseline`` (``base``): the ``rerun --json`` comparison.

    ``base`` and ``new`` are one answer per item, indexed by ``item_id`` (``selection_answers``); ``logged``
    is (the logged configuration, its answers) for a ``logged`` label. Paired over the items answered at
    both: rescued (wrong at baseline, correct now), harmed, exact McNemar p, and each side's accuracy
    with a Wilson 95% interval (valid at a selection's small n).
    """
    base, new = base.reindex(ids), new.reindex(ids)
    cb, cn = _correct(base), _correct(new)
    both = ~np.isnan(cb) & ~np.isnan(cn)
    yb, yn = cb[both].astype(bool), cn[both].astype(bool)
    n = int(both.sum())
    rescued, harmed = (int(v) for v in flow_counts(yb, yn))
    k_new, k_base = int(yn.sum()), int(yb.sum())
    now = f"correct at {config}" + (" (re-run)" if config == baseline else "")  # the logged column keeps its own name
    rows = pd.DataFrame(
        {
            "item_id": ids,
            f"correct at {baseline}": base["correct"]
            .astype("Int64")
            .to_numpy(dtype=object, na_value=None),  # 1, 0 or null
            now: new["correct"].astype("Int64").to_numpy(dtype=object, na_value=None),
            "answer": new["answer"].to_numpy(),
            "run": new["run"].to_numpy(),
        }
    )
    p = float(mcnemar_exact(rescued, harmed))
    items = f"{len(ids)} item" if len(ids) == 1 else f"{len(ids)} items"  # a picked item may be one
    sentence = (
        f"Of the {items} ({label}), {k_new} of the {n} answered are correct under {config} "
        f"and {k_base} at {baseline}: {rescued} rescued, {harmed} harmed (McNemar p = {p:.3g})."
        if n
        else f"None of the {items} ({label}) has an answer at both {baseline} and {config} yet."
    )
    return BatchComparison(
        model=model,
        benchmark=benchmark,
        selection=label,
        config=config,
        baseline=baseline,
        n_items=len(ids),
        n_compared=n,
        n_missing=len(ids) - n,
        correct_new=k_new,
        correct_baseline=k_base,
        accuracy_new=share(k_new, n),
        accuracy_baseline=share(k_base, n),
        rescued=rescued,
        harmed=harmed,
        mcnemar_p=p,
        sentence=sentence,
        items=to_json(rows.astype(object).where(rows.notna(), None).to_dict("records")),
        agreement=None if logged is None else _agreement(ids, new, *logged),
    )


def _agreement(ids: list[str], new: pd.DataFrame, logged_config: str, logged: pd.DataFrame) -> LoggedAgreement:
    """For a ``logged`` label: how many re-run answers equal the logged answers whose frames they replayed
    (an unanswered item, null answer, counts as that answer)."""
    logged = logged.reindex(ids)
    both = logged["run"].notna().to_numpy() & new["run"].notna().to_numpy()
    same = logged["answer"].fillna("\0").to_numpy() == new["answer"].fillna("\0").to_numpy()
    differing = [i for i, keep in zip(ids, both & ~same, strict=True) if keep]
    counted = share(int((both & same).sum()), int(both.sum()))
    return LoggedAgreement(**asdict(counted), logged_config=logged_config, differing=differing)


def share(k: int, n: int) -> Share:
    """``k`` of ``n`` with its Wilson 95% interval (nulls when nothing was compared)."""
    low, high = wilson_interval(np.array([k]), np.array([n]))
    return Share(k=k, n=n, value=k / n if n else None, ci95=None if not n else (float(low[0]), float(high[0])))
