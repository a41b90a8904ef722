"""The current selection (a flow, a state, picked items, or the filtered list) and its batch re-run.

A researcher walks from a surprising flow to its items and re-runs them together. The Inspector's
walk, the Flows page, the re-run panel and ``trajaudit rerun --flow/--items`` all name the items
through one ``Selection``, so "the 14 harmed items of text -> 8f" is the same 14 items everywhere
(the Flows page's list, the Inspector's "item 3 of 14", the batch re-run and its ``--json``).

``compare`` answers the question a batch re-run asks: of the selected items, how many are correct
under the new configuration against the baseline configuration (rescued, harmed, exact McNemar p,
Wilson intervals), read from the store after the jobs wrote their answers. Re-runs stay an
overlay: nothing here changes a grid or a matrix.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from backend import views
from backend.analysis.metrics import FLOW_KINDS, flow_items
from backend.analysis.stats import mcnemar_exact, wilson_interval
from backend.export import from_cell
from backend.runtime import logged_frames, rerun
from backend.runtime.sampling import takes_seed
from backend.scope.matrix import Matrix
from backend.scope.view import View
from store import configs
from store.errors import UserError
from store.queue import MAX_QUEUED, JobQueue
from store.rerun_request import RerunRequest
from store.store import Store

KINDS = ("flow", "state", "items", "filtered")
STATES = ("correct", "wrong")
ARROW = "→"


@dataclass(frozen=True)
class Selection:
    """Which items: ``flow`` (from, to, kind), ``state`` (config, correct|wrong), ``items`` (ids) or ``filtered`` ()."""

    kind: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"unknown selection {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.kind == "flow" and (len(self.args) != 3 or self.args[2] not in FLOW_KINDS):
            raise UserError(
                f"a flow is FROM:TO:KIND with KIND in {', '.join(FLOW_KINDS)} (got {':'.join(self.args)!r})"
            )
        if self.kind == "state" and (len(self.args) != 2 or self.args[1] not in STATES):
            raise UserError(f"a state is CONFIG:STATE with STATE in {', '.join(STATES)} (got {':'.join(self.args)!r})")
        if self.kind == "items" and not self.args:
            raise UserError("an item selection needs at least one item id")

    @classmethod
    def flow(cls, spec: str) -> Selection:
        """``FROM:TO:KIND`` (the ``--flow`` flag)."""
        parts = spec.split(":")
        if len(parts) != 3 or not all(parts):
            raise UserError(f"--flow takes FROM:TO:KIND, e.g. text:8f:harmed (got {spec!r})")
        return cls("flow", tuple(parts))

    @classmethod
    def from_url(cls, values: list[str] | None) -> Selection | None:
        """The URL form (``[kind, *args]``); None for no or a malformed selection (a stale link)."""
        if not values:
            return None
        try:
            return cls(values[0], tuple(values[1:]))
        except UserError:
            return None

    def to_url(self) -> list[str]:
        return [self.kind, *self.args]

    def describe(self) -> str:
        """How the walk and the re-run name it: "text → 8f harmed", "8f wrong", "5 picked items"."""
        if self.kind == "flow":
            a, b, kind = self.args
            return f"{a} {ARROW} {b} {kind}"
        if self.kind == "state":
            return f"{self.args[1]} at {self.args[0]}"
        if self.kind == "items":
            return f"{len(self.args)} picked item" + ("s" if len(self.args) != 1 else "")
        return "the filtered items"

    def baseline(self, grid: list[str]) -> str:
        """The configuration a re-run is compared against: where the flow ends, the state's config, else the grid's last."""
        if self.kind == "flow":
            return self.args[1]
        if self.kind == "state":
            return self.args[0]
        return grid[-1]


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


def state_items(matrix: Matrix, model: str, config: str, state: str) -> pd.DataFrame:
    """The items of one Sankey node (correct or wrong at ``config``), with the confidence there."""
    if state not in STATES:
        raise UserError(f"unknown state {state!r}: expected one of {', '.join(STATES)}")
    m, c = matrix.model_index(model), matrix.config_index(config)
    y = matrix.correct[m, :, c].astype(bool)
    mask = y if state == "correct" else ~y
    out = matrix.items.loc[mask].copy()
    out["confidence"] = matrix.confidence[m, mask, c]
    return out.reset_index(drop=True)


def read_ids(path: str) -> list[str]:
    """Item ids from a file (``--items FILE``): one per line, or a CSV/TSV with an ``item_id`` column
    (the Items page's export: quoted, its spreadsheet-safe prefix undone by ``export.from_cell``)."""
    try:
        with open(path, newline="") as fh:
            text = fh.read()
    except OSError as exc:
        raise UserError(f"cannot read --items {path}: {exc.strerror}") from exc
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    sep = "\t" if lines and "\t" in lines[0] else ","
    header = next(csv.reader(lines[:1], delimiter=sep), [])
    if "item_id" in header:
        col = header.index("item_id")
        rows = list(csv.reader(io.StringIO(text.lstrip()), delimiter=sep))[1:]
        lines = [from_cell(row[col].strip()) for row in rows if len(row) > col]
    ids = list(dict.fromkeys(line for line in lines if line))
    if not ids:
        raise UserError(f"--items {path} lists no item id (one per line, or a CSV with an item_id column)")
    return ids


def batch_requests(
    model: str, benchmark: str, ids: list[str], config: str, seed: int | None = None, force: bool = False
) -> list[RerunRequest]:
    """The requests of a batch re-run: the selected items, each asked the same way."""
    return [RerunRequest(model, benchmark, item_id, config, seed, force) for item_id in ids]


def submit(root: str, requests: list[RerunRequest]) -> dict:
    """Re-run a batch (:func:`batch_requests`): every request is validated first, so a bad one queues nothing,
    and the new jobs are queued in one transaction, so a batch that does not fit the queue queues none.

    Items whose identical request is stored are answered from the store (unless ``force``);
    the others join a pending identical job or are queued. Returns the batch: job ids per item.
    """
    if not requests:
        raise UserError("the selection is empty: nothing to re-run")
    if len(requests) > MAX_QUEUED:
        raise UserError(
            f"a batch re-run takes at most {MAX_QUEUED} items (the queue's limit); the selection has {len(requests)}"
        )
    if len({(r.model, r.benchmark, r.config, r.seed, r.force) for r in requests}) > 1:
        raise UserError("a batch re-run asks every item the same way (one model, benchmark, config and seed)")
    validated = [rerun.validate(root, req) for req in requests]
    outs = rerun.place_many(root, validated)  # all or nothing against the queue's bound
    first = validated[0]
    return {
        "model": first.model,
        "benchmark": first.benchmark,
        "config": first.config,
        "seed": first.seed,
        "item_ids": [o["item_id"] for o in outs],
        "job_ids": [o["job_id"] for o in outs],
        "from_store": sum(o["from_store"] for o in outs),
    }


def progress(root: str, batch: dict) -> dict:
    """Job states of a batch: counts per state, whether every job has ended, and ``failure``: the
    most frequent error of its failed jobs (one line, e.g. a model that cannot load), else None."""
    queue = JobQueue(root)
    jobs = {j: queue.get(j) for j in batch["job_ids"] if j is not None}
    states = ["done" if j is None else getattr(jobs[j], "state", "failed") for j in batch["job_ids"]]
    counts = {s: states.count(s) for s in ("queued", "running", "done", "failed", "cancelled")}
    errors = Counter(job.error for job in jobs.values() if job is not None and job.state == "failed" and job.error)
    return {
        "n": len(states),
        "counts": counts,
        "finished": counts["queued"] + counts["running"] == 0,
        "failure": errors.most_common(1)[0][0] if errors else None,
    }


def cancel(root: str, batch: dict) -> int:
    """Cancel the batch's queued jobs (running ones finish); how many were cancelled."""
    queue = JobQueue(root)
    pending = [j for j in batch["job_ids"] if j is not None and getattr(queue.get(j), "state", None) == "queued"]
    for job_id in pending:
        queue.cancel(job_id)
    return len(pending)


def _answers(
    store: Store, model: str, benchmark: str, ids: list[str], config: str, seed: int | None, reruns: bool
) -> pd.DataFrame:
    """One answer per item at ``config`` (the logged main run first, else the newest re-run; like ``rerun.stored_result``)."""
    random_seed = seed if takes_seed(configs.parse(config).policy) else None
    origin = "" if reruns else "AND run = 'main'"
    return store.query(
        f"SELECT item_id, answer, correct, confidence, run FROM responses WHERE model = ? AND benchmark = ? AND config = ? "
        f"AND item_id IN (SELECT unnest(?::VARCHAR[])) AND (?::BIGINT IS NULL OR seed = ?::BIGINT) {origin} "
        "QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY run = 'main' DESC, written_at DESC) = 1",
        [model, benchmark, config, ids, random_seed, random_seed],
    ).set_index("item_id")


def compare(root: str, model: str, benchmark: str, ids: list[str], config: str, baseline: str, seed: int | None = None,
            label: str = "the selected items") -> dict:  # fmt: skip
    """How the selection answers under ``config`` against ``baseline`` (the ``rerun --json`` comparison).

    Paired over the items answered at both: rescued (wrong at baseline, correct now), harmed, exact
    McNemar p, and each side's accuracy with a Wilson 95% interval (valid at a selection's small n).
    """
    store = Store(root)
    base = _answers(store, model, benchmark, ids, baseline, None, reruns=False).reindex(ids)
    new = _answers(store, model, benchmark, ids, config, seed, reruns=True).reindex(ids)
    both = base["correct"].notna().to_numpy() & new["correct"].notna().to_numpy()
    yb = base["correct"].to_numpy(dtype=float)[both].astype(bool)
    yn = new["correct"].to_numpy(dtype=float)[both].astype(bool)
    n = int(both.sum())
    rescued, harmed = int((~yb & yn).sum()), int((yb & ~yn).sum())
    k_new, k_base = int(yn.sum()), int(yb.sum())
    now = f"correct at {config}" + (" (re-run)" if config == baseline else "")  # the logged column keeps its own name
    rows = pd.DataFrame({
        "item_id": ids,
        f"correct at {baseline}": base["correct"].to_numpy(),
        now: new["correct"].to_numpy(),
        "answer": new["answer"].to_numpy(),
        "run": new["run"].to_numpy(),
    })  # fmt: skip
    p = mcnemar_exact(rescued, harmed)
    sentence = (
        f"Of the {len(ids)} items ({label}), {k_new} of the {n} answered are correct under {config} "
        f"and {k_base} at {baseline}: {rescued} rescued, {harmed} harmed (McNemar p = {p:.3g})."
        if n
        else f"None of the {len(ids)} items ({label}) has an answer at both {baseline} and {config} yet."
    )
    return {
        "model": model,
        "benchmark": benchmark,
        "selection": label,
        "config": config,
        "baseline": baseline,
        "n_items": len(ids),
        "n_compared": n,
        "n_missing": len(ids) - n,
        "correct_new": k_new,
        "correct_baseline": k_base,
        "accuracy_new": _share(k_new, n),
        "accuracy_baseline": _share(k_base, n),
        "rescued": rescued,
        "harmed": harmed,
        "mcnemar_p": p,
        "sentence": sentence,
        "items": rows.astype(object).where(rows.notna(), None).to_dict("records"),
        "agreement": _agreement(store, model, benchmark, ids, config, new),
    }


def _agreement(store: Store, model: str, benchmark: str, ids: list[str], config: str, new: pd.DataFrame) -> dict | None:
    """For a ``logged`` label: how many re-run answers equal the logged answers whose frames they replayed
    (an unanswered item, null answer, counts as that answer)."""
    cfg = configs.parse(config)
    if not logged_frames.is_logged(cfg):
        return None
    base = logged_frames.base_label(cfg)
    logged = _answers(store, model, benchmark, ids, base, None, reruns=False).reindex(ids)
    both = logged["run"].notna().to_numpy() & new["run"].notna().to_numpy()
    same = logged["answer"].fillna("\0").to_numpy() == new["answer"].fillna("\0").to_numpy()
    differing = [i for i, keep in zip(ids, both & ~same, strict=True) if keep]
    return _share(int((both & same).sum()), int(both.sum())) | {"logged_config": base, "differing": differing}


def _share(k: int, n: int) -> dict:
    low, high = wilson_interval(np.array([k]), np.array([n]))
    return {"k": k, "n": n, "value": k / n if n else None, "ci95": None if not n else [float(low[0]), float(high[0])]}


def selected_ids(view: View, model: str, sel: Selection) -> list[str]:
    """The selection on a view: a flow's items exactly as the Flows page lists them (within-noise flips too)."""
    if sel.kind != "flow":
        return item_ids(view.matrix, model, sel)
    a, b, kind = sel.args
    listed = views.flows_view(view, model, (a, b), kind, limit=None)["items"]
    return item_ids(view.matrix, model, sel, pd.DataFrame(listed, columns=["item_id"]))


def batch_report(root: str, batch: dict, baseline: str, label: str) -> dict:
    """The batch, its progress and its comparison so far: ``trajaudit rerun --flow ... --json``."""
    cmp = compare(
        root, batch["model"], batch["benchmark"], batch["item_ids"], batch["config"], baseline, batch["seed"], label
    )
    return {"batch": batch, "progress": progress(root, batch), "comparison": cmp}


def rerun_selection(view: View, model: str, sel: Selection, config: str, baseline: str | None = None,
                    seed: int | None = None, force: bool = False) -> dict:  # fmt: skip
    """Submit the selection's re-run under ``config`` and report it (``batch_report``)."""
    benchmark = view.scope.benchmark
    if benchmark is None:
        raise UserError("a selection re-run needs --benchmark")
    ids = selected_ids(view, model, sel)
    base = baseline or sel.baseline(list(view.matrix.grid))
    submitted = submit(view.root, batch_requests(model, benchmark, ids, config, seed, force))
    return batch_report(view.root, submitted, base, sel.describe())
