"""The dispatcher: the store's one writer, with the re-runs computed on Ray actors on other machines.

Why. A worker on a cluster node used to need the store folder shared with the dashboard, i.e.
``jobs.sqlite`` in WAL mode and the manifest's writer lock on a network filesystem, which SQLite says
not to do. The dispatcher runs where the store is: it claims queued jobs from the local queue (with
the queue's leases, as a local worker does), reads what each job needs from the store, hands it to
an actor of the job's model (:class:`~backend.runtime.dispatch_actor.ModelActor`, one per model,
asking for one GPU when the cluster has GPUs, or the resources given), gets the answer back and
appends the rows itself. Actors are never given the store's path.

Videos. ``videos="ship"``: the dispatcher decodes the requested frames here and sends them (the bytes
are counted: ``shipped_bytes``). ``videos="node"``: the actor resolves the catalog's relative path under
its node's video root (``video_root`` given here, else ``$TRAJAUDIT_VIDEO_ROOT`` on the node).

Failures keep the queue's promises:

* an actor that dies, or whose node leaves, gives its job back with the attempt counted (its lease is
  expired at once, so the next claim queues it again, or fails it once ``max_attempts`` claims died);
  a new actor is started for the model;
* a model that cannot load fails its queued jobs with the reason (and later ones as they arrive);
* an actor that no node of the cluster can hold (it asks for resources no live node offers) is said to
  wait, in the log and in its record (``waiting``: ``trajaudit jobs --json``, the Workers page), once
  it has gone unplaced for ``place_wait_s``; it keeps its job and is placed when such a node joins;
* a dispatcher killed mid-job loses nothing: its leases run out and the jobs are claimed again;
* no answer is written twice: a job whose ``rerun-<id>`` row is stored is completed from it, and each
  write re-checks the stored rows under the store's writers' lock.

Throughput. Answers that arrive together are written together (at most ``write_batch`` jobs per store
write), since a store write costs about the same for one row as for many: ``benchmarks/dispatch.py``
measures where the single writer becomes the limit and how the batch size moves it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import sqlite3
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from backend.contracts.base import validated
from backend.contracts.runs import DispatchStats
from backend.contracts.store import RemoteActor
from backend.runtime import dispatch_records, logs, registry
from backend.runtime.dispatch_actor import ActorInfo, ModelActor, Payload
from backend.runtime.inference.cell import ColdCell, read_frames
from backend.runtime.worker import (
    DEFAULT_LEASE_S,
    DEFAULT_POLL_S,
    Inputs,
    answered,
    failure_line,
    job_inputs,
    job_rows,
    result_key,
)
from backend.videos.decode import default_video_root
from store.errors import UserError
from store.queue import Job, JobQueue
from store.registry import ModelSpec
from store.store import Store

VIDEOS = ("ship", "node")
DEFAULT_WRITE_BATCH = 32  # jobs per store write at most
MAX_ACTOR_DEATHS = 5  # per model: past this many dead actors the dispatcher stops starting new ones
DEFAULT_PLACE_WAIT_S = 10.0  # an actor not loaded after this long is checked against the cluster's nodes
LOG = logs.get("dispatch")  # timestamped, levelled lines on stderr (backend.runtime.logs)
NODE_BOOKKEEPING = ("node:", "memory", "object_store_memory", "accelerator_type:")  # not what an actor asks for


def ray_module() -> Any:
    """``ray``, or the one line that says how to install it."""
    try:
        import ray
    except ImportError:
        raise UserError("trajaudit dispatch needs Ray: pip install 'trajaudit[ray]'") from None
    return ray


def connect(ray: Any, address: str | None) -> None:
    """Join the Ray cluster at ``address`` (``None``: start a local instance) unless this process already has
    one. A cluster that cannot be reached is one line: Ray retries for a while, logs why (a wrong address, or
    ``InvalidAuthToken`` from a head with token authentication) and raises with a traceback."""
    if ray.is_initialized():
        return
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=True)
    except ConnectionError as exc:
        raise UserError(
            f"cannot reach the Ray cluster at {address} ({exc}): check the address (`ray status` on the head prints "
            "it); if Ray's log above says InvalidAuthToken, the head runs with token authentication: export "
            "RAY_AUTH_MODE=token here, with the head's token in ~/.ray/auth_token or RAY_AUTH_TOKEN"
        ) from None


def parse_resources(text: str | None) -> dict[str, float]:
    """``--actor-resources`` as a dict of Ray resources (``{"gpu_node": 1}``, ``{"GPU": 1, "CPU": 2}``)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UserError(f"--actor-resources must be a JSON object such as '{{\"gpu_node\": 1}}': {exc}") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
        for k, v in value.items()
    ):
        raise UserError(f"--actor-resources must map resource names to non-negative numbers, got {text!r}")
    return {k: float(v) for k, v in value.items()}


def actor_options(resources: dict[str, float], cluster_gpus: float) -> dict[str, Any]:
    """``ray.remote`` options of one model's actor: one GPU when the cluster has GPUs, else one CPU,
    overridden or extended by ``resources`` (``CPU``/``GPU`` are Ray's ``num_cpus``/``num_gpus``)."""
    wanted = {"CPU": 0.0 if cluster_gpus else 1.0, "GPU": 1.0 if cluster_gpus else 0.0} | resources
    custom = {k: v for k, v in wanted.items() if k not in ("CPU", "GPU")}
    return {"num_cpus": wanted["CPU"], "num_gpus": wanted["GPU"], "max_restarts": 0} | (
        {"resources": custom} if custom else {}
    )


def unplaceable(wanted: dict[str, float], nodes: list[dict[str, Any]]) -> str | None:
    """Why no live node can ever hold an actor asking for ``wanted`` (None: one can, now or once freed).

    ``nodes`` is ``ray.nodes()``: each node's total resources, so a node whose resources other actors hold
    counts as one that can (Ray places the actor when they are freed); only a request no node offers waits
    for good. Ray keeps such an actor pending: at most its autoscaler prints a line to the driver's output,
    and nothing reaches the queue or the dashboard."""
    asked = {k: v for k, v in wanted.items() if v > 0}
    live = [n.get("Resources", {}) for n in nodes if n.get("Alive")]
    if any(all(node.get(k, 0.0) >= v for k, v in asked.items()) for node in live):
        return None
    if not live:
        return "the cluster has no live node"
    offered: dict[str, float] = {}
    for node in live:
        for k, v in node.items():
            if not k.startswith(NODE_BOOKKEEPING):
                offered[k] = max(offered.get(k, 0.0), v)
    return f"no live node offers {_spell(asked)} (the {len(live)} node(s) offer at most {_spell(offered)})"


def _spell(resources: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(resources.items())) or "nothing"


def remote_checkpoint(spec: ModelSpec, store_root: Path) -> str:
    """The checkpoint path an actor is given: the registered one, which must not lie in the store folder
    (the actors never see the store; a node holds its own copy of the checkpoint)."""
    path = spec.resolved_path(store_root)
    if path.is_relative_to(Path(store_root).resolve()):
        raise UserError(
            f"model {spec.name!r}: its checkpoint {spec.path!r} is inside the store folder, which the actors never "
            f"see; copy it to the nodes and register that path: {reregister(spec, store_root)}"
        )
    return str(path)


def reregister(spec: ModelSpec, store_root: str | os.PathLike) -> str:
    """The ``trajaudit models add`` line that registers ``spec`` again at its checkpoint's path on the nodes
    (every setting kept: ``--replace`` writes the entry whole)."""
    args = ["trajaudit", "models", "add", spec.name, "--family", spec.family, "--path", "/PATH/ON/THE/NODES"]
    args += ["--max-frames", str(spec.max_frames), "--dtype", spec.dtype, "--device", spec.device]
    args += ["--default-pixels", str(spec.default_pixels)] if spec.default_pixels else []
    args += ["--note", spec.note] if spec.note else []
    return shlex.join([*args, "--replace", "--store", str(store_root)])


@dataclass
class Slot:
    """One model's actor and what it is doing."""

    model: str
    worker_id: str
    handle: Any
    resources: dict[str, float]
    started_at: float = field(default_factory=time.time)
    info: ActorInfo | None = None
    state: Literal["loading", "ready", "dead"] = "loading"
    job: Job | None = None  # the job it is loading for or answering
    inputs: Inputs | Exception | None = None  # what the job reads from the store (or why it cannot)
    ref: Any = None  # the pending load() or answer() call
    jobs_done: int = 0
    jobs_failed: int = 0
    waiting: str | None = None  # why it is not placed yet, once said (see Dispatcher._placement)
    checked_at: float = field(default_factory=time.time)  # when its placement was last checked

    def record(self, dispatcher: str) -> RemoteActor:
        i = self.info
        return RemoteActor(
            worker_id=self.worker_id,
            model=self.model,
            dispatcher=dispatcher,
            node_ip=None if i is None else i.node_ip,
            hostname=None if i is None else i.hostname,
            pid=None if i is None else i.pid,
            device=None if i is None else i.context.device,
            gpu=None if i is None else i.gpu,
            gpu_ids=i.gpu_ids if i else [],
            resources=self.resources,
            state=self.state,
            waiting=self.waiting,
            jobs_done=self.jobs_done,
            jobs_failed=self.jobs_failed,
            started_at=self.started_at,
        )


@dataclass
class Stats:
    """What a dispatcher did (``trajaudit dispatch --json``)."""

    done: int = 0
    failed: int = 0
    requeued: int = 0  # jobs given back because their actor died
    from_store: int = 0  # jobs whose answer was already stored (completed from it)
    writes: int = 0  # store writes
    rows_written: int = 0
    shipped_bytes: int = 0
    shipped_jobs: int = 0
    actors_started: int = 0
    actors_died: int = 0
    seconds: float = 0.0
    claim_seconds: float = 0.0  # claiming jobs and reading their inputs from the store (frames shipped included)
    write_seconds: float = 0.0  # building rows, store writes and marking jobs done

    def report(self) -> DispatchStats:
        """The counters and their ratios as ``dispatch --json``'s contract, checked once."""
        return validated(
            DispatchStats(
                **self.__dict__,
                answers_per_second=round(self.done / self.seconds, 3) if self.seconds else None,
                bytes_per_shipped_job=round(self.shipped_bytes / self.shipped_jobs) if self.shipped_jobs else None,
                rows_per_write=round(self.rows_written / self.writes, 2) if self.writes else None,
                writer_busy=round(self.write_seconds / self.seconds, 3) if self.seconds else None,
            )
        )


class Dispatcher:
    """Claims the queue's jobs for ``models`` and answers them on Ray actors; the only store writer."""

    def __init__(
        self,
        store_root: str | os.PathLike,
        models: list[str] | None = None,
        address: str | None = None,
        resources: dict[str, float] | None = None,
        videos: str = "ship",
        video_root: str | None = None,
        device: str = "auto",
        lease_s: float = DEFAULT_LEASE_S,
        poll_s: float = DEFAULT_POLL_S,
        write_batch: int = DEFAULT_WRITE_BATCH,
        place_wait_s: float = DEFAULT_PLACE_WAIT_S,
        log=None,
        ray: Any = None,
    ):
        """``ray``: the Ray module (default: imported; ``benchmarks/dispatch.py`` passes threads standing in)."""
        if videos not in VIDEOS:
            raise UserError(f"--videos must be one of {', '.join(VIDEOS)}, got {videos!r}")
        if write_batch < 1:
            raise UserError(f"--write-batch must be at least 1, got {write_batch}")
        if device not in registry.DEVICES:
            raise UserError(f"unknown device {device!r}; expected one of {', '.join(registry.DEVICES)}")
        self.store = Store(store_root)
        self.root = self.store.root.resolve()
        # ``log`` (a test's list's append) takes every line; by default they are the ``trajaudit.dispatch``
        # logger's: progress at INFO, a failure or an actor that cannot be placed at WARNING.
        self.log = log or LOG.info
        self.warn = log or LOG.warning
        self.specs, self.checkpoints = self._served(models)
        JobQueue(self.root).counts()  # creates jobs.sqlite if no job was ever queued
        self.queue = JobQueue(self.root, create=False)
        self.videos, self.video_root, self.device = videos, video_root, device
        self.local_videos = default_video_root(self.root)
        self.lease_s, self.poll_s, self.write_batch = float(lease_s), float(poll_s), write_batch
        self.place_wait_s = float(place_wait_s)
        self.id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.records = dispatch_records.records_path(self.root, self.id)
        self.ray = ray or ray_module()
        connect(self.ray, address)
        self.options = actor_options(resources or {}, self.ray.cluster_resources().get("GPU", 0))
        self.slots: dict[str, Slot] = {}
        self.broken: dict[str, str] = {}  # model -> why it cannot load
        self.deaths: dict[str, int] = {}
        self.stats = Stats()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the slots, between the loop and the lease keeper

    def _served(self, models: list[str] | None) -> tuple[dict[str, ModelSpec], dict[str, str]]:
        """The models to serve and their checkpoints on the nodes (a named model that cannot be served is an
        error; of all registered ones, those whose checkpoint is inside the store are left out, said once)."""
        specs = (
            {s.name: s for s in registry.list_models(self.root)}
            if models is None
            else {m: registry.get(self.root, m) for m in models}
        )
        checkpoints = {}
        for name, spec in specs.items():
            try:
                checkpoints[name] = remote_checkpoint(spec, self.root)
            except UserError as exc:
                if models is not None:
                    raise
                self.warn(f"not serving {exc}")
        if not checkpoints:
            raise UserError("no model to serve: register one whose checkpoint the nodes hold (trajaudit models add)")
        return {n: specs[n] for n in checkpoints}, checkpoints

    # -- actors ------------------------------------------------------------------------------
    def _start(self, model: str, worker_id: str) -> Slot:
        """Start the model's actor. Its row goes into the queue's workers table before the stand-by row leaves, so
        the model is never seen offline in between (a re-run panel would start a needless local worker)."""
        video_root = self.video_root if self.videos == "node" else None
        cls = self.ray.remote(**self.options)(ModelActor)
        handle = cls.options(name=f"trajaudit-{worker_id}", namespace="trajaudit").remote(
            self.specs[model], self.checkpoints[model], self.device, video_root
        )
        slot = Slot(model, worker_id, handle, {"CPU": self.options["num_cpus"], "GPU": self.options["num_gpus"]}
                    | self.options.get("resources", {}))  # fmt: skip
        slot.ref = handle.load.remote()
        self.stats.actors_started += 1
        self._heartbeat(slot)
        self.queue.sign_off(self._standby(model))
        self.log(f"started actor {worker_id} for model {model!r} ({slot.resources})")
        return slot

    def _died(self, slot: Slot, why: str) -> None:
        """An actor died (or its node left): give its job back with the attempt counted, start another later."""
        slot.state, slot.ref = "dead", None
        self.stats.actors_died += 1
        self.deaths[slot.model] = self.deaths.get(slot.model, 0) + 1
        if slot.job is not None:
            # expire the lease now: the next claim queues the job again, attempt counted (as for a dead worker)
            self.queue.renew(slot.job.id, slot.worker_id, -1.0)
            self.stats.requeued += 1
            self.warn(f"actor {slot.worker_id} died ({why}): job {slot.job.id} goes back to the queue")
            slot.job = None
        if self.deaths[slot.model] >= MAX_ACTOR_DEATHS:
            self.broken[slot.model] = f"model {slot.model!r}: {MAX_ACTOR_DEATHS} actors died in a row (last: {why})"
        self.queue.sign_off(slot.worker_id)
        del self.slots[slot.model]
        self._save_records()

    def _cannot_load(self, slot: Slot, exc: BaseException) -> None:
        """The model's checkpoint cannot be loaded: fail its job and every queued one with the reason."""
        reason = f"model {slot.model!r} cannot be loaded from {self.checkpoints[slot.model]}: {failure_line(exc)}"
        self.broken[slot.model] = reason
        if slot.job is not None:
            self.queue.fail(slot.job.id, slot.worker_id, reason)
            self.stats.failed += 1
        self.stats.failed += self.queue.fail_queued(slot.model, reason)
        self.warn(reason)
        self.ray.kill(slot.handle)
        self.queue.sign_off(slot.worker_id)
        del self.slots[slot.model]

    # -- jobs --------------------------------------------------------------------------------
    def _stored_runs(self, jobs: list[Job]) -> set[str]:
        """The ``rerun-<id>`` runs of ``jobs`` already in the store."""
        with self.store.connect() as con:
            rows = con.execute(
                "SELECT DISTINCT run FROM responses WHERE list_contains(?, run)", [[j.run for j in jobs]]
            ).fetchall()
        return {r[0] for r in rows}

    def _payload(self, job: Job, inputs: Inputs) -> Payload:
        """What the actor needs for ``job``; with ``videos="ship"`` the frames, decoded here."""
        item, cfg, given = inputs
        plain = {k: (None if isinstance(v, float) and v != v else v) for k, v in item.items()}  # NaN -> None
        shown = None
        if self.videos == "ship" and not cfg.is_text:
            shown = read_frames(item, cfg, self.local_videos, job.request.seed, given)
            self.stats.shipped_bytes += shown.nbytes
            self.stats.shipped_jobs += 1
        return Payload(job.id, plain, cfg.label, job.request.seed, given, self.specs[job.model].default_pixels, shown)

    def _fail(self, slot: Slot | None, job: Job, worker_id: str, exc: BaseException) -> None:
        line = failure_line(exc)
        self.queue.fail(job.id, worker_id, line)
        self.stats.failed += 1
        if slot is not None:
            slot.jobs_failed += 1
        self.warn(f"job {job.id} failed: {line}")

    def _submit(self, slot: Slot) -> None:
        """Hand the slot's job to its (loaded) actor; a job whose inputs cannot be read fails here."""
        job, inputs = slot.job, slot.inputs
        assert job is not None and inputs is not None
        try:
            if isinstance(inputs, Exception):
                raise inputs
            payload = self._payload(job, inputs)
        except Exception as exc:  # the item, its video or its logged frames: the job's failure, not the loop's
            traceback.print_exc(file=sys.stderr)
            self._fail(slot, job, slot.worker_id, exc)
            slot.job = slot.inputs = None
            return
        slot.ref = slot.handle.answer.remote(payload)

    def _claim(self) -> None:
        """Give each idle model a job (starting its actor when it has none: the job waits for the load); the
        claimed jobs' stored answers and inputs are read in one go."""
        claimed: list[tuple[str, str, Job]] = []
        for model in self.specs:
            if model in self.broken:
                self.stats.failed += self.queue.fail_queued(model, self.broken[model])  # no job waits forever
                continue
            slot = self.slots.get(model)
            if slot is not None and (slot.job is not None or slot.ref is not None):
                continue
            worker_id = slot.worker_id if slot is not None else f"ray-{model}-{uuid.uuid4().hex[:8]}"
            job = self.queue.claim(worker_id, model, self.lease_s)
            if job is not None:
                claimed.append((model, worker_id, job))
        if not claimed:
            return
        stored = self._stored_runs([job for *_, job in claimed])
        fresh = []
        for model, worker_id, job in claimed:
            if job.run in stored:  # its answer was written by a dispatcher that died before completing
                self._complete([job], worker_id)
                self.stats.from_store += 1
            else:
                fresh.append((model, worker_id, job))
        for (model, worker_id, job), inputs in zip(fresh, job_inputs(self.store, [j for *_, j in fresh]), strict=True):
            slot = self.slots.get(model)
            if slot is None:  # the job waits for the actor to load (its lease renewed meanwhile)
                with self._lock:
                    slot = self.slots[model] = self._start(model, worker_id)
                    slot.job, slot.inputs = job, inputs
                self._save_records()
            else:
                slot.job, slot.inputs = job, inputs
                self._submit(slot)

    def _complete(self, jobs: list[Job], worker_id: str | None = None) -> None:
        for job in jobs:
            holder = worker_id or job.worker_id or ""
            if not self.queue.complete(job.id, holder, json.dumps(result_key(job))):
                self.log(f"job {job.id}: its answer is stored once; another worker holds the job now")

    def _write(self, answers: list[tuple[Slot, Job, ColdCell]]) -> None:
        """Append the answers' rows in one store write (minus those stored meanwhile), then complete the jobs."""
        rows = []
        for slot, job, cell in answers:
            assert slot.info is not None and isinstance(slot.inputs, tuple)  # an answer comes from a loaded actor
            item, cfg, _ = slot.inputs
            rows.append(job_rows(job, answered(item, cfg, job, cell), slot.info.context, slot.worker_id))
        self.queue.require()  # the writer would create a deleted store's folder again
        with self.store.writer() as w:
            stored = self._stored_runs([job for _, job, _ in answers])
            fresh = [r for r, (_, job, _) in zip(rows, answers, strict=True) if job.run not in stored]
            if fresh:
                for table in ("responses", "runs"):
                    w.add(table, pd.concat([r[table] for r in fresh], ignore_index=True))
        self.stats.writes += bool(fresh)
        self.stats.rows_written += len(fresh)
        for slot, job, _ in answers:
            self._complete([job], slot.worker_id)
            slot.jobs_done += 1
            self.stats.done += 1

    def _collect(self) -> None:
        """Wait up to ``poll_s`` for loads and answers; handle what arrived (answers written together)."""
        with self._lock:
            pending = {s.ref: s for s in self.slots.values() if s.ref is not None}
        if not pending:
            self._stop.wait(self.poll_s)
            return
        # the first answer ends the wait; every other one already there is taken with it (written together)
        ready, rest = self.ray.wait(list(pending), num_returns=1, timeout=self.poll_s)
        if ready and rest:
            ready += self.ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        answers: list[tuple[Slot, Job, ColdCell]] = []
        for ref in ready:
            slot = pending[ref]
            loading = slot.state == "loading"
            slot.ref = None
            try:
                value = self.ray.get(ref)
            except self.ray.exceptions.RayTaskError as exc:  # the call raised on the actor
                cause = exc.cause if exc.cause is not None else exc
                if loading:
                    with self._lock:
                        self._cannot_load(slot, cause)
                elif slot.job is not None:
                    self._fail(slot, slot.job, slot.worker_id, cause)
                    slot.job = None
                continue
            except self.ray.exceptions.RayError as exc:  # the actor, its node or its answer is gone
                with self._lock:
                    self._died(slot, failure_line(exc))
                continue
            if loading:
                slot.info, slot.state, slot.waiting = value, "ready", None
                self.deaths[slot.model] = 0
                self.log(f"actor {slot.worker_id} ready on {value.hostname} ({value.node_ip}), {value.context.device}")
                self._heartbeat(slot)
                if slot.job is not None:
                    self._submit(slot)
                self._save_records()
            elif slot.job is not None:
                answers.append((slot, slot.job, value))
                slot.job = None
        t = time.perf_counter()
        for start in range(0, len(answers), self.write_batch):
            self._write(answers[start : start + self.write_batch])
        self.stats.write_seconds += time.perf_counter() - t
        if answers:
            self._save_records()

    def _placement(self) -> None:
        """Say so when an actor still loading after ``place_wait_s`` asks for resources no live node offers
        (Ray keeps it pending): a log line and its record's ``waiting``. Checked again every
        ``place_wait_s`` while it loads; a node that can hold it joining clears the note."""
        now = time.time()
        due = [s for s in self.slots.values() if s.state == "loading" and now - s.checked_at >= self.place_wait_s]
        if not due:
            return
        nodes = self.ray.nodes()
        changed = False
        for slot in due:
            slot.checked_at = now
            why = unplaceable(slot.resources, nodes)
            if why is not None and slot.waiting is None:
                job = f" with job {slot.job.id}" if slot.job is not None else ""
                slot.waiting = (
                    f"not placed after {now - slot.started_at:.0f} s: {why}; it waits{job} until such a node joins "
                    "(ray start --resources on a node, or restart the dispatcher with --actor-resources the nodes offer)"
                )
                self.warn(f"actor {slot.worker_id} of model {slot.model!r} is {slot.waiting}")
            elif why is None and slot.waiting is not None:
                slot.waiting = None
                self.log(
                    f"actor {slot.worker_id} of model {slot.model!r}: a node that can hold it is in the cluster now"
                )
            else:
                continue
            changed = True
        if changed:
            self._save_records()

    # -- leases, heartbeats, records -------------------------------------------------------
    def _standby(self, model: str) -> str:
        """The worker id under which a served model without an actor yet is online: the dashboard's re-run
        panel then starts no local worker for it, and the dispatcher's actor takes its jobs."""
        return f"dispatch-{self.id}-{model}"

    def _keep_leases(self) -> None:
        """Renew the running jobs' leases and heartbeat every actor (and every served model without one),
        every third of a lease."""
        while not self._stop.wait(self.lease_s / 3):
            with self._lock:
                slots = list(self.slots.values())
                idle = [m for m in self.specs if m not in self.slots and m not in self.broken]
            try:
                for model in idle:
                    self.queue.heartbeat(self._standby(model), model, "ray (no actor yet)", None)
            except (sqlite3.Error, UserError) as exc:
                self.warn(f"heartbeat failed: {exc}")
            for slot in slots:
                try:
                    job = slot.job
                    if job is not None and not self.queue.renew(job.id, slot.worker_id, self.lease_s):
                        self.warn(f"lease on job {job.id} lapsed; its answer, if it comes, is stored once")
                    self._heartbeat(slot)
                except (sqlite3.Error, UserError) as exc:  # a locked queue: the next tick tries again
                    self.warn(f"lease renewal for {slot.worker_id} failed: {exc}")

    def _save_records(self) -> None:
        dispatch_records.save(self.records, [s.record(self.id) for s in self.slots.values()])

    def _heartbeat(self, slot: Slot) -> None:
        """The actor's row in the queue's ``workers`` table (device "loading" until it has loaded)."""
        device = slot.info.context.device if slot.info else "loading"
        job = slot.job
        self.queue.heartbeat(slot.worker_id, slot.model, device, job.id if job else None)

    def stop(self) -> None:
        """Ask the loop to stop (from a signal handler or another thread)."""
        self._stop.set()

    def _idle(self) -> bool:
        """Nothing in flight here and no job of the served models queued or running (another holder's lease
        not yet run out: a job of a killed dispatcher is waited for, then taken)."""
        if any(s.job is not None or s.ref is not None for s in self.slots.values()):
            return False
        return not any(self.queue.list_jobs(state, m, limit=1) for m in self.specs for state in ("queued", "running"))

    def run(self, once: bool = False) -> DispatchStats:
        """Serve until stopped (SIGINT/SIGTERM); with ``once``, until no job of the served models is left.
        In-flight jobs are given back untouched when stopped; returns what it did (``dispatch --json``)."""
        t0 = time.perf_counter()
        main = threading.current_thread() is threading.main_thread()
        handlers = (
            {s: signal.signal(s, lambda *_: self.stop()) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
        )
        for model in self.specs:
            self.queue.heartbeat(self._standby(model), model, "ray (no actor yet)", None)
        keeper = threading.Thread(target=self._keep_leases, name="dispatch-leases", daemon=True)
        keeper.start()
        try:
            while not self._stop.is_set():
                t = time.perf_counter()
                self._claim()
                self.stats.claim_seconds += time.perf_counter() - t
                self._collect()
                self._placement()
                if once and self._idle():
                    break
        finally:
            self._stop.set()
            keeper.join()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            self._shutdown()
            self.stats.seconds = time.perf_counter() - t0
        return self.stats.report()

    def _shutdown(self) -> None:
        """Give back the jobs still in flight (attempt not counted), stop the actors, sign off."""
        for slot in list(self.slots.values()):
            if slot.job is not None:
                self.queue.release(slot.job.id, slot.worker_id)
                self.log(f"job {slot.job.id} released to the queue")
            self.ray.kill(slot.handle)
            self.queue.sign_off(slot.worker_id)
        self.slots.clear()
        for model in self.specs:
            self.queue.sign_off(self._standby(model))
        self.records.unlink(missing_ok=True)
