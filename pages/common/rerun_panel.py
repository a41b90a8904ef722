"""The inspector's live re-run panel: run this item under another budget, watch the job, see its answer.

The form names a configuration (frames, spatial budget, sampling policy, seed) for a registered
model; Run hands it to ``backend.runtime.client.submit``, which answers from the store when an identical
request is stored, or queues a job. When no worker of the model is online, a local one is started
(``backend.runtime.worker_pool.ensure_local_worker``). The job's state is polled by a fragment that reruns
every second, without reloading the page; once the job ends the whole page reruns, so the
inspector's charts pick up the new point from the store (a star on its model's line, joined by a dashed
segment, and a strip row of its frames), and the result is drawn here: answer, option probabilities,
phase timings and the frames it saw.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from backend import views
from backend.contracts.base import unset
from backend.contracts.inspector import InspectedItem
from backend.contracts.runs import PHASES, RerunOutcome
from backend.contracts.store import JobRow
from backend.present import charts_items
from backend.present.metrics import METRICS, RERUN_QUANTITIES
from backend.runtime import client
from backend.runtime.client import (
    ensure_local_worker,
    job_status,
    local_worker,
    timestamps,
    worker_log,
)
from backend.scope.selection import Selection
from backend.scope.view import View
from pages.common import data, readable, sidebar, state, ui
from pages.common.strips import strip
from store import configs
from store.configs import LOGGED, ConfigLabelError
from store.errors import UserError

DEFAULT_FRAMES = 12
POLL_S = 1.0
_LAST = "_rerun_last"  # session state: (store, benchmark, item) -> {"job_id", "model"} or {"outcome"}
_STATE_ICONS = {"queued": ":material/hourglass_top:", "running": ":material/progress_activity:", "done": ":material/check_circle:",
                "failed": ":material/error:", "cancelled": ":material/block:"}  # fmt: skip


def rerun_panel(view: View, item: InspectedItem, thumb_dir: str) -> None:
    """The panel, below the frame strips of ``item`` (thumbnails cached under ``thumb_dir``)."""
    with st.container(border=True):
        st.subheader("Re-run this item")
        specs = client.list_models(view.root)
        if not specs:
            st.info(
                "No model is registered in this store, so there is nothing to re-run with. Register a local "
                f"checkpoint: `trajaudit models add NAME --family qwen2_5_vl --path /path/to/checkpoint --store {view.root}` "
                f"(or a tiny random-weights one for a pipeline demo: `trajaudit models demo NAME --store {view.root}`).",
                icon=":material/extension:",
            )
            return
        key = (view.root, view.scope.benchmark, item.item_id)
        submitted = _form(view, item, specs)
        if submitted is not None:
            st.session_state.setdefault(_LAST, {})[key] = submitted
        last = st.session_state.get(_LAST, {}).get(key)
        if last is None:
            return
        if "outcome" in last:
            _result(view, item, last["outcome"], thumb_dir)
            return
        try:
            status = job_status(view.root, last["job_id"])
        except UserError:  # the queue was reset (a rebuilt store): forget the job
            del st.session_state[_LAST][key]
            return
        if status.outcome.state in client.FINAL_STATES:
            _result(view, item, status.outcome, thumb_dir, status.job, status.worker_log)
        else:
            _live_status(view.root, last["job_id"], last["model"])


def _request(view: View, specs: list[client.ModelSpec], what: str, prefix: str = "rerun") -> tuple[str, str] | None:
    """The request widgets (model, frames, spatial budget, policy, seed): (model, label), or None if invalid."""
    names = [s.name for s in specs]
    by_name = {s.name: s for s in specs}
    # The choices are pills (one click, every option in view), as every choice of the dashboard: a select box
    # would load its own script into the page; a registry of many models gets one (``state.one_of``). The numbers
    # share a row.
    model = state.one_of(
        st,
        "Model",
        names,
        view.scope.focus if view.scope.focus in by_name else names[0],
        key=f"{prefix}_model",
        format_func=lambda n: f"{n} ({by_name[n].note})" if by_name[n].note else n,
    )
    policy = st.pills(
        "Sampling policy",
        [*client.SAMPLING_POLICIES, LOGGED],
        default=client.SAMPLING_POLICIES[0],
        required=True,
        key=f"{prefix}_policy",
        format_func=lambda p: "the logged answer's frames" if p == LOGGED else p,
        help="The logged answer's frames: exactly the frame indices the logged answer at this budget saw "
        "(a protocol check: the re-run should agree with it).",
        wrap=True,
    )
    spec = by_name[model]
    top = st.columns([1, 1.3, 1, 2.7], vertical_alignment="bottom")
    frames = top[0].number_input(
        "Frames",
        min_value=0,
        max_value=spec.max_frames,
        value=min(DEFAULT_FRAMES, spec.max_frames),
        step=1,
        key=f"{prefix}_frames_{model}",
        help=f"0 = text only; at most {spec.max_frames} (the model's context ceiling)",
    )
    pixels_k = top[1].number_input(
        "Spatial budget (k px)",
        min_value=0,
        value=0,
        step=25,
        key=f"{prefix}_pixels",
        help="Pixels per frame, in thousands; 0 = none (the model's default resolution).",
    )
    seed = rate = None
    if policy == "fps":
        rate = top[2].number_input(
            "Rate (fps)",
            min_value=0.1,
            value=1.0,
            step=0.5,
            key=f"{prefix}_rate",
            help="Frames per second; the frame count caps how many are kept.",
        )
    else:
        seed = top[2].number_input(
            "Seed",
            min_value=0,
            value=0,
            step=1,
            key=f"{prefix}_seed",
            disabled=policy != "random",
            help="For the random policy only.",
        )
    try:
        label = configs.make_label(int(frames), pixels_k or None, client.spell_policy(policy, seed, rate))
    except (ConfigLabelError, UserError) as exc:
        st.error(ui.escape_md(exc), icon=":material/warning:")
        return None
    st.caption(f"Asks {ui.escape_md(model)} for configuration {ui.code(label)} on {what}.")
    return model, label


def _start_worker(root: str, model: str, spec: client.ModelSpec | None, jobs: str) -> None:
    """Start a local worker for queued jobs when none is online (the dashboard never imports torch)."""
    try:
        # The dashboard cannot see GPUs: a worker it starts runs on the CPU unless the registry pins
        # the model to CUDA. GPU workers are started by hand (docs/reruns-and-sweeps.md).
        worker = ensure_local_worker(
            root, model, device="cuda" if spec is not None and spec.device == "cuda" else "cpu"
        )
    except UserError as exc:
        st.warning(
            f"{jobs} queued, but no worker can be started here: {ui.escape_md(exc)}", icon=":material/satellite_alt:"
        )
    else:
        if worker.started:
            st.toast(
                f"Starting a local {_device_text(worker.device)} worker for {ui.escape_md(model)}…",
                icon=":material/rocket_launch:",
            )


def _form(view: View, item: InspectedItem, specs: list[client.ModelSpec]) -> dict | None:
    """The request widgets and the Run button; what to remember about a submitted request, else None."""
    request = _request(view, specs, f"item {ui.code(item.item_id)}")
    run_col, force_col, _ = st.columns([1, 1.4, 5.6], vertical_alignment="center")
    force = force_col.checkbox("Force", key="rerun_force", help="Run it even when an identical answer is stored.")
    if not run_col.button("Run", type="primary", width="stretch", key="rerun_run", disabled=request is None):
        return None
    if request is None:  # the button is disabled then
        return None
    model, label = request
    try:
        out = client.submit(
            view.root, client.RerunRequest(model, view.scope.benchmark or "", item.item_id, label, force=force)
        )
    except UserError as exc:
        st.error(ui.escape_md(exc), icon=":material/warning:")
        return None
    if out.from_store:
        return {"outcome": out}
    _start_worker(view.root, model, client.registered(view.root).get(model), f"Job {out.job_id} is")
    return {"job_id": out.job_id, "model": model}


def _device_text(device: str | None) -> str:
    return "GPU" if device == "cuda" else "CPU"


@st.fragment(run_every=POLL_S)
def _live_status(root: str, job_id: int, model: str) -> None:
    """The job's state, redrawn every second; the whole page reruns once the job has ended."""
    status = job_status(root, job_id)
    job, state = status.job, status.outcome.state
    if state in client.FINAL_STATES:
        st.rerun()
    elapsed = (
        f"waiting {job.waited_s:.1f} s"
        if job.ran_s is None
        else f"running {job.ran_s:.1f} s (waited {job.waited_s:.1f} s)"
    )
    who = f" on worker {ui.code(job.worker_id)}" if job.worker_id else ""
    st.markdown(f"{_STATE_ICONS[state]} **Job {job_id}** · {ui.code(job.config)} · **{state}** · {elapsed}{who}")
    if state != "queued":
        return
    worker = local_worker(root, model)
    if worker.state == "starting":
        st.caption(f"Starting a local {_device_text(worker.device)} worker (pid {worker.pid}): loading the model…")
    elif worker.state == "online":
        st.caption(
            f"Worker {ui.code(worker.worker_id)} ({worker.device}) is online; the job runs after those ahead of it."
        )
    elif worker.state == "exited":  # one line: the traceback stays in the log
        why = ui.escape_md(worker.reason or "its log is empty")
        st.error(f"The local worker exited: {why} · log: {ui.code(worker.log)}", icon=":material/report:")
    else:
        st.caption(
            f"No worker of {ui.escape_md(model)} is online. Start one where the model is: "
            f"{ui.code(f'trajaudit worker --store {root} --model {model} --device cuda')}."
        )
    if st.button("Cancel job", key=f"rerun_cancel_{job_id}"):
        try:
            client.cancel(root, job_id)
        except UserError as exc:
            st.error(ui.escape_md(exc), icon=":material/warning:")
        st.rerun()


def _result(
    view: View,
    item: InspectedItem,
    out: RerunOutcome,
    thumb_dir: str,
    job: JobRow | None = None,
    log: str | None = None,
) -> None:
    """A finished request: its verdict, option probabilities, phase timings and frame strip (``job``: the job
    that answered, with its timings; ``log``: its worker's log, named when it failed)."""
    label = ui.code(out.config) + (f" seed {out.seed}" if out.seed is not None else "")
    if out.state == "failed":  # the job's error is one line (the worker keeps the traceback in its log)
        where = f" · worker log: {ui.code(log)}" if log else ""
        st.error(
            f"Job {out.job_id} ({ui.escape_md(out.config)}) failed: {ui.escape_md(out.error)}{where}",
            icon=":material/error:",
        )
        return
    if out.state == "cancelled":
        st.info(f"Job {out.job_id} ({ui.escape_md(out.config)}) was cancelled.", icon=":material/block:")
        return
    if out.from_store:
        st.info(
            f"Answered from the store: an identical request is stored (run {ui.code(out.run)}). Tick *Force* to run it again.",
            icon=":material/inventory_2:",
        )
    elif job is not None:
        st.success(
            f"Job {out.job_id} done in {job.ran_s:.1f} s (waited {job.waited_s:.1f} s) on worker {ui.code(job.worker_id)}: "
            "the new point is on its model's line above (★, dashed: an overlay), its frames a strip row.",
            icon=":material/check_circle:",
        )
    spec = client.registered(view.root).get(out.model)
    note = spec.note if spec is not None and out.origin == "rerun" else ""
    if note:
        st.warning(
            f"{ui.escape_md(out.model)}: {ui.escape_md(note)}. Its answers are noise; the point shows the pipeline, not the model.",
            icon=":material/casino:",
        )
    verdict = "" if out.correct is None else {1: "✓ correct", 0: "✗ wrong"}.get(out.correct, "")
    conf = "" if out.confidence is None else f" · confidence {out.confidence:.3f}"
    conf += "" if out.score is None else f" · score (Token-F1) {out.score:.2f}"
    st.markdown(
        f"**{ui.escape_md(out.model)}** at {label}: answer **{ui.escape_md(out.answer or '–')}** {verdict} "
        f"(target {ui.escape_md(unset(item.target) or '–')}){conf}"
    )
    left, right = st.columns(2)
    with left:
        if out.option_probs:
            ui.vega(
                charts_items.option_probs(out.option_probs, out.answer, unset(item.target)),
                f"rerun-probs-{item.item_id}",
            )
        else:
            st.caption("No option probabilities for this answer.")
    with right:
        if out.timings:
            ui.vega(charts_items.phase_timings(out.timings, PHASES), f"rerun-timings-{item.item_id}")
        else:
            st.caption("No phase timings stored for this answer (only a worker's re-runs record them).")
    _strip(view, item, out.frame_indices, thumb_dir)


def _strip(view: View, item: InspectedItem, indices: list[int] | None, thumb_dir: str) -> None:
    if not indices:
        st.caption("Text only: no frames." if indices == [] else "No frame indices stored for this answer.")
        return
    path, info, problem = data.video(str(sidebar.video_root(view)), view, item)
    st.markdown(f"**Frames this run saw** · {len(indices)} frames (also a strip row under *Frames seen*)")
    if path is None or info is None:  # a found video is probed: both or neither
        st.caption(f"Video unavailable ({ui.escape_md(problem)}): frame indices only.")
        st.text(" ".join(map(str, indices)))  # not st.code: its highlighter is a 1.5 MB script
        return
    strip(path, indices, timestamps(np.asarray(indices), info.fps).tolist(), set(), thumb_dir)


# -- re-running a selection ----------------------------------------------------------------------
_BATCH = "_rerun_batch"  # session state: (store, benchmark, selection) -> {"batch", "baseline", "label"}


def selection_panel(view: View, sel: Selection | None, ids: list[str], key: str) -> None:
    """Re-run every item of the selection (``sel`` None: the filtered items) under one configuration.

    The CLI twin is ``trajaudit rerun --flow/--state/--items ... --wait --json``; the comparison
    drawn is its ``comparison`` (``backend.views.batch_report``).
    """
    sel = sel or Selection("filtered")
    label = sel.describe()
    with st.container(border=True):
        st.subheader(f"Re-run {_items(len(ids))} together")
        specs = client.list_models(view.root)
        if not specs:
            st.button(
                f"Re-run {_items(len(ids))}",
                disabled=True,
                key=f"{key}-run",
                help="No model is registered in this store: `trajaudit models add` registers one.",
            )
            st.caption(
                "Disabled: no model is registered in this store, so there is nothing to re-run with "
                f"({ui.code(f'trajaudit models add NAME --family ... --path ... --store {view.root}')})."
            )
            return
        request = _request(view, specs, f"{_items(len(ids))} ({ui.escape_md(label)})", prefix=key)
        remembered = (view.root, view.scope.benchmark, tuple(sel.to_url()))
        baseline = sel.baseline(list(view.scope.grid))
        run = st.button(
            f"Re-run {_items(len(ids))}", type="primary", key=f"{key}-run", disabled=request is None or not ids
        )
        if run and request is not None:
            model, config = request
            try:
                batch = client.submit_batch(
                    view.root, client.batch_requests(model, view.scope.benchmark or "", ids, config)
                )
            except UserError as exc:
                st.error(ui.escape_md(exc), icon=":material/warning:")
            else:
                st.session_state.setdefault(_BATCH, {})[remembered] = {
                    "batch": batch,
                    "baseline": baseline,
                    "label": label,
                }
                if batch.from_store < len(ids):
                    _start_worker(
                        view.root,
                        model,
                        client.registered(view.root).get(model),
                        f"{len(ids) - batch.from_store} jobs",
                    )
        last = st.session_state.get(_BATCH, {}).get(remembered)
        if last is None:
            return
        try:
            progress = client.batch_progress(view.root, last["batch"])
        except UserError:  # the queue was reset (a rebuilt store)
            del st.session_state[_BATCH][remembered]
            return
        if progress.finished:
            _comparison(view, sel, last)
        else:
            _batch_progress(view.root, remembered)


def _items(n: int) -> str:
    return f"{n:,} item" + ("" if n == 1 else "s")


@st.fragment(run_every=POLL_S)
def _batch_progress(root: str, remembered: tuple) -> None:
    """A progress bar over the batch's jobs and a cancel button; the page reruns once every job ended."""
    last = st.session_state[_BATCH][remembered]
    progress = client.batch_progress(root, last["batch"])
    if progress.finished:
        st.rerun()
    counts = progress.counts
    ended = counts["done"] + counts["failed"] + counts["cancelled"]
    st.progress(
        ended / progress.n,
        text=f"{ended} of {progress.n} answered · " + ", ".join(f"{k} {v}" for k, v in counts.items() if v),
    )
    if st.button("Cancel the queued jobs", key=f"batch-cancel-{remembered[2]}"):
        n = client.cancel_batch(root, last["batch"])
        st.toast(f"Cancelled {n} queued jobs (running ones finish).", icon=":material/block:")
        st.rerun()


def _comparison(view: View, sel: Selection, last: dict) -> None:
    """The finished batch against its baseline: the sentence, and the items side by side."""
    batch = last["batch"]
    report = views.batch_report(view.root, batch, last["baseline"], last["label"])
    cmp = report.comparison
    counts, failure = report.progress.counts, report.progress.failure
    failed = (
        f" {counts['failed']} failed, {counts['cancelled']} cancelled."
        if counts["failed"] or counts["cancelled"]
        else ""
    )
    if failure is not None:  # one line; the worker's log holds the traceback
        log = worker_log(view.root, batch.model)
        where = f" · worker log: {ui.code(log)}" if log else ""
        st.error(f"Failed jobs: {ui.escape_md(failure)}{where}", icon=":material/error:")
    st.success(ui.escape_md(cmp.sentence) + failed, icon=":material/compare_arrows:")
    spec = client.registered(view.root).get(batch.model)
    if spec is not None and spec.note:
        st.warning(
            f"{ui.escape_md(batch.model)}: {ui.escape_md(spec.note)}. Its answers are noise; the comparison shows the pipeline, not the model.",
            icon=":material/casino:",
        )
    rescued, harmed, p = (METRICS[k] for k in ("rescued", "harmed", "mcnemar_p"))
    shares = (
        (RERUN_QUANTITIES["accuracy_new"], cmp.config, cmp.accuracy_new),
        (RERUN_QUANTITIES["accuracy_baseline"], cmp.baseline, cmp.accuracy_baseline),
    )
    ui.show_cards(
        [
            *(
                ui.Card(f"{q.label} {config}", f"{share.k} of {share.n}", ui.ci_text(share.ci95) or "", q.definition)
                for q, config, share in shares
            ),
            ui.Card(
                f"{rescued.label} / {harmed.label.lower()}",
                f"{rescued.format(cmp.rescued)} / {harmed.format(cmp.harmed)}",
                definition=f"Items wrong at {cmp.baseline} and right under {cmp.config} / the other way round.",
            ),
            ui.Card(p.label, p.format(cmp.mcnemar_p), definition=p.definition),
        ]
    )
    agreement = cmp.agreement
    if agreement is not None:
        differing = ", ".join(map(ui.escape_md, agreement.differing[:10])) or "none"
        st.info(
            f"Same frames as the logged answers at {ui.code(agreement.logged_config)}: {agreement.k} of "
            f"{agreement.n} answers agree (differing: {differing}).",
            icon=":material/fact_check:",
        )
    readable.table(pd.DataFrame(cmp.items), key=f"batch-items-{'-'.join(sel.to_url())[:80]}")
    flags = {"flow": "--flow", "state": "--state"}
    which = [flags[sel.kind], ":".join(sel.args)] if sel.kind in flags else ["--items", "ITEMS.txt"]
    ui.twin(
        view,
        ["rerun", "--model", batch.model],
        *which,
        "--config",
        batch.config,
        "--baseline",
        cmp.baseline,
        "--wait",
        key=f"{ui.TWIN}-rerun",
    )
