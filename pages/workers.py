"""Workers: who serves re-runs (online workers, the local ones this store started, the dispatchers' remote actors
on Ray nodes), the queue per state, recent jobs.

A failure is one line: a job's ``error`` column (the worker writes one line; its traceback stays in
its log), and a local worker that exited shows its ``reason`` with the path of its log.

Everything shown is ``backend.runtime.client.queue_overview``, the object ``trajaudit jobs --json`` prints. The
view redraws itself every few seconds (a fragment), so a job moving through the queue is seen
without reloading.
"""

from datetime import datetime
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from backend import views
from backend.contracts.base import to_json
from backend.contracts.store import RemoteActor, StartedBy
from backend.present.tables import sentence
from backend.runtime import client
from pages.common import state as url_state
from pages.common import ui
from pages.common.boot import ensure_entrypoint
from store.errors import UserError

REFRESH_S = 2.0
RECENT_JOBS = 50
JOB_COLUMNS = ["id", "state", "model", "benchmark", "item_id", "config", "seed", "force", "attempts", "waited_s", "ran_s",
               "worker_id", "created_at", "error"]  # fmt: skip
WORKER_COLUMNS = ["worker_id", "model", "device", "current_job", "pid", "age_s", "started_at"]
REMOTE_COLUMNS = ["model", "hostname", "node_ip", "device", "gpu", "jobs_done", "jobs_failed", "state", "worker_id",
                  "dispatcher"]  # fmt: skip


def started_by(who: StartedBy | None) -> str:
    """Who started a local worker and when it stops by itself (pid files of older versions say less)."""
    if not who:
        return "Started by a dashboard of an older version: stop it here when done."
    parent, started, idle_s = who.parent_pid, who.started_at, who.idle_timeout_s
    if parent is None or started is None:
        return "Started by a dashboard of an older version: stop it here when done."
    when = datetime.fromtimestamp(started).strftime("%Y-%m-%d %H:%M:%S")
    idle = f" or after {idle_s / 60:g} min without a job" if idle_s else ""
    alive = "" if client.process_identity(parent) else " (that process is gone: the worker is stopping)"
    return ui.escape_md(
        f"Started by the dashboard process {parent}{alive} of user {who.user} at {when}; "
        f"it stops when that process stops{idle}."
    )


def inspector_link(benchmark: str, item_id: str) -> str:
    """The Inspector's URL for a job's item, in this view's state (models, grid), without a walk."""
    return "inspector?" + urlencode(url_state.params(bench=benchmark, item=item_id, walk=None))


def remote_actors(actors: list[RemoteActor]) -> None:
    """The dispatchers' actors on Ray nodes (``trajaudit dispatch``): where each runs and what it did."""
    st.markdown("**Remote actors** (`trajaudit dispatch`: computed on Ray nodes, written here by the dispatcher)")
    for a in (a for a in actors if a.waiting):  # an actor no node can hold: Ray keeps it pending silently
        st.warning(
            f"The actor {ui.code(a.worker_id)} of {ui.code(a.model)} is {ui.escape_md(a.waiting)}",
            icon=":material/hourglass_disabled:",
        )
    st.dataframe(
        pd.DataFrame(to_json(actors), columns=REMOTE_COLUMNS),
        hide_index=True,
        column_config=ui.plain_headers(
            REMOTE_COLUMNS,
            {
                "hostname": "Node",
                "node_ip": "Node address",
                "gpu": st.column_config.TextColumn("GPU", help="empty: the actor runs on a CPU"),
                "jobs_done": st.column_config.NumberColumn("Jobs done", format="%d"),
                "jobs_failed": st.column_config.NumberColumn("Failed", format="%d"),
                "worker_id": "Worker",
            },
        ),
    )


@st.fragment(run_every=REFRESH_S)
def live(root: str) -> None:
    try:
        view = client.queue_overview(root, limit=RECENT_JOBS)
    except client.QueueReadOnly:  # a notice, not an error: the results are fine, only the queue needs writing
        st.warning(
            f"The store is read-only: {ui.code(root)}. Its results can be read on every other page, but the "
            "re-run queue cannot be used or listed here: copy the store to a folder you can write to re-run items.",
            icon=":material/lock:",
        )
        return
    for col, state in zip(st.columns(len(client.JOB_STATES)), client.JOB_STATES, strict=True):
        col.metric(sentence(state), f"{view.counts[state]:,}")

    st.subheader("Online workers")
    workers = pd.DataFrame(to_json(view.workers), columns=WORKER_COLUMNS)
    if workers.empty:
        st.info(
            "No worker is online. The re-run panel starts a local one for a registered model; on a GPU machine "
            f"start one yourself: {ui.code(f'trajaudit worker --store {root} --model NAME --device cuda')}.",
            icon=":material/satellite_alt:",
        )
    else:
        st.dataframe(
            workers,
            hide_index=True,
            column_config=ui.plain_headers(
                WORKER_COLUMNS,
                {
                    "worker_id": "Worker",
                    "started_at": "Started",
                    "age_s": st.column_config.NumberColumn("Last heartbeat (s ago)", format="%.1f"),
                    "current_job": st.column_config.NumberColumn("Current job (empty: idle)", format="%d"),
                },
            ),
        )

    if view.remote:
        remote_actors(view.remote)

    local = [w for w in view.local if w.state in ("starting", "online")]
    if local:
        st.markdown("**Local workers started by the dashboard**")
        for w in local:
            left, right = st.columns([6, 1], vertical_alignment="center")
            left.markdown(f"{ui.code(w.model)} · pid {w.pid} · {w.device} · **{w.state}** · log {ui.code(w.log)}")
            left.caption(started_by(w.started_by))
            if right.button("Stop", key=f"stop-{w.model}"):
                client.stop_local_workers(root, w.model)
                st.rerun()

    for w in (w for w in view.local if w.state == "exited"):  # one line each; the traceback is in the log
        why = ui.escape_md(w.reason or "its log is empty")
        st.caption(f":material/report: The local worker of {ui.code(w.model)} exited: {why} · log {ui.code(w.log)}")

    st.subheader(f"Recent jobs (newest {RECENT_JOBS})")
    jobs = pd.DataFrame(to_json(view.jobs), columns=JOB_COLUMNS)
    if jobs.empty:
        st.caption("No job yet: re-run an item from the Inspector, or `trajaudit rerun`.")
        return
    jobs.insert(5, "open", [inspector_link(b, i) for b, i in zip(jobs["benchmark"], jobs["item_id"], strict=True)])
    shown = jobs.drop(columns=["item_id"])
    st.dataframe(
        shown,
        hide_index=True,
        column_config=ui.plain_headers(
            shown.columns,
            {
                "open": st.column_config.LinkColumn(
                    "Item", display_text=r"item=([^&]*)", help="open the job's item in the Inspector (new tab)"
                ),
                "waited_s": st.column_config.NumberColumn("Waited (s)", format="%.1f"),
                "ran_s": st.column_config.NumberColumn("Ran (s)", format="%.2f"),
                "error": st.column_config.TextColumn("Error", width="large"),
            },
        ),
    )
    queued = jobs.loc[jobs["state"] == "queued", "id"].tolist()
    if queued:
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        job_id = left.selectbox("Queued job", queued, key="cancel-job")
        if right.button("Cancel job", width="stretch"):
            try:
                client.cancel(root, int(job_id))
            except UserError as exc:
                st.error(ui.escape_md(exc), icon=":material/warning:")
            st.rerun()


ensure_entrypoint()
view = st.session_state["view"]
st.title("Workers")
st.caption(
    f"Re-run queue of **{ui.escape_md(view.root)}** · refreshed every {REFRESH_S:g} s · "
    f"{ui.code(views.jobs_twin(view.root, RECENT_JOBS))} prints the same"
)
with ui.guard():
    live(view.root)
