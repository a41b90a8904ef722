"""One shard of a sweep: a loaded model, the engine, and the batches it appends to the store.

A shard is what one process (this one, or one Ray actor) runs: it loads the model once, answers
the video groups it is given, and hands its answers on in batches (:meth:`ShardRunner.stream`). The
process that holds the store (this one; under Ray, the driver an actor returns its batches to)
appends each batch's ``responses`` rows (``origin="sweep"``, ``run="main"``) plus one ``runs`` row in
one atomic store write (:class:`StoreSink`), so a crash loses at most the batch in flight and the store
keeps one writer. Each batch re-checks the store under the writers' lock and drops cells another
writer stored meanwhile, so no cell is ever stored twice.

Run ids: ``<sweep id>-s<shard>-b<batch>`` per batch (``runs.source`` = ``sweep:<sweep id>``), so
every row leads to its batch and every batch to its sweep.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from backend.contracts.runs import SweepFailure
from backend.runtime import logs, registry
from backend.runtime.inference.cell import answer_cold
from backend.runtime.inference.hf import HFAdapter
from backend.runtime.inference.records import ModelContext, RowSource, library_versions, response_row
from backend.runtime.sweep.accounting import PHASES
from backend.runtime.sweep.engine import Answered, Engine, EngineCounters, Reuse, label_seed
from backend.runtime.sweep.plan import DEFAULT_BATCH, RUN, VideoGroup
from backend.videos import catalog
from backend.videos.decode import default_video_root
from store.configs import parse
from store.errors import UserError
from store.registry import ModelSpec
from store.store import Store

log = logs.get("sweep")


@dataclass(frozen=True)
class ShardSettings:
    """Everything a shard needs, picklable (sent to Ray actors with ``store_root`` blanked: an actor never
    sees the store, it is given the model's checkpoint and its node's video root instead)."""

    store_root: str
    model: str
    benchmark: str
    sweep_id: str
    shard: int = 0
    reuse: Reuse = field(default_factory=Reuse)
    batch_size: int = DEFAULT_BATCH
    device: str = "auto"
    random_fullsize: str | None = None  # a fullsize preset name, "" for the family's default; None: the checkpoint
    args: dict[str, Any] = field(default_factory=dict)  # the command's arguments, stored in runs.args


@dataclass
class Outcome:
    """What the drift check and the summary need from one stored cell."""

    item_id: str
    config: str
    answer: str | None
    correct: int | None
    option_probs: dict[str, float]
    raw_output: str
    timings: dict[str, float]

    @classmethod
    def from_row(cls, row: dict[str, Any], timings: dict[str, float]) -> Outcome:
        probs = json.loads(row["option_probs"]) if row["option_probs"] else {}
        return cls(row["item_id"], row["config"], row["answer"], row["correct"], probs, row["raw_output"], timings)


@dataclass
class ShardReport:
    shard: int
    cells: int = 0  # answered and stored by this shard
    raced: int = 0  # answered but already stored by another writer when the batch landed
    batches: int = 0
    files: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[SweepFailure] = field(default_factory=list)
    counters: EngineCounters = field(default_factory=EngineCounters)
    load_seconds: float = 0.0
    compute_seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's CPU time over the same span (all its threads)

    def phase_totals(self) -> dict[str, float]:
        return {p: sum(o.timings.get(p, 0.0) for o in self.outcomes) for p in PHASES}


Batch = tuple[list[dict[str, Any]], list[Outcome]]  # a batch's response rows and their outcomes
Loaded = tuple[HFAdapter, ModelContext, int | None]


def load_model(settings: ShardSettings, spec: ModelSpec | None = None, path: Path | None = None) -> Loaded:
    """(adapter, provenance context, default pixels) for the sweep's model: ``spec`` and its checkpoint
    ``path`` as given (a Ray actor's), else read from the store's registry."""
    from backend.runtime.inference.base import checkpoint_fingerprint
    from backend.runtime.worker import load_registered_adapter, resolve_device, resolve_dtype

    if spec is None or path is None:
        spec = registry.get(settings.store_root, settings.model)
        path = spec.resolved_path(settings.store_root)
    device = resolve_device(spec.device if settings.device == "auto" else settings.device)
    dtype = resolve_dtype(spec.dtype, device)
    adapter: HFAdapter
    if settings.random_fullsize is None:
        loaded = load_registered_adapter(spec, path, device, dtype)
        if not isinstance(loaded, HFAdapter):  # every family's is; the engine's reuses need one (Engine)
            raise UserError(f"model {spec.name!r}: the sweep needs a transformers adapter, got {type(loaded).__name__}")
        adapter = loaded
        fingerprint, checkpoint = checkpoint_fingerprint(path), str(path)
    else:
        from backend.runtime.inference.fullsize import DEFAULT_PRESET, load_random_fullsize

        preset = settings.random_fullsize or DEFAULT_PRESET[spec.family]
        adapter = load_random_fullsize(spec.family, path, preset, device=device, dtype=dtype)
        fingerprint, checkpoint = f"random-fullsize:{preset}", f"random weights at the size of {preset}"
    context = ModelContext(spec.name, spec.family, checkpoint, fingerprint, library_versions(), device, dtype)
    return adapter, context, spec.default_pixels


class StoreSink:
    """Appends one shard's batches to the store: the store's one writer for that shard (this process)."""

    def __init__(self, store: Store, settings: ShardSettings, report: ShardReport, code_version: str | None):
        self.store, self.settings, self.report, self.code_version = store, settings, report, code_version

    def __call__(self, batch: Batch) -> None:
        """Publish the batch's rows, minus cells stored meanwhile (checked under the writers' lock)."""
        if not batch[0]:
            return
        s, rows, outcomes = self.settings, pd.DataFrame(batch[0]), batch[1]
        run_id = f"{s.sweep_id}-s{s.shard}-b{self.report.batches + 1:04d}"
        with self.store.writer() as w:
            with w.connect() as con:
                present = con.execute(
                    "SELECT DISTINCT item_id, config FROM responses WHERE model = ? AND benchmark = ? AND run = ? "
                    "AND list_contains(?, item_id)",
                    [s.model, s.benchmark, RUN, rows["item_id"].unique().tolist()],
                ).df()
            fresh = ~pd.MultiIndex.from_frame(rows[["item_id", "config"]]).isin(
                pd.MultiIndex.from_frame(present[["item_id", "config"]])
            )
            self.report.raced += int((~fresh).sum())
            rows = rows[fresh].assign(run_id=run_id)
            if rows.empty:
                return
            run = {
                "run_id": run_id,
                "origin": "sweep",
                "source": f"sweep:{s.sweep_id}",
                "format": "sweep",
                "args": json.dumps({**s.args, "shard": s.shard, "batch": self.report.batches + 1}, default=str),
                "n_rows": len(rows),
                "code_version": self.code_version,
                "created_at": datetime.now(UTC),
            }
            self.report.files += [f for f in (w.add("responses", rows), w.add("runs", pd.DataFrame([run]))) if f]
        self.report.batches += 1
        log.debug(f"{run_id}: {len(rows)} rows stored")
        self.report.cells += len(rows)
        self.report.outcomes += [o for o, keep in zip(outcomes, fresh) if keep]


class ShardRunner:
    """Runs video groups for one shard and hands their rows on in batches: to ``sink`` (default: written
    to the settings' store by :class:`StoreSink`), or yielded by :meth:`stream` to whoever writes them."""

    def __init__(
        self,
        settings: ShardSettings,
        loaded: Loaded | None = None,
        video_root: str | Path | None = None,
        sink: Callable[[Batch], None] | None = None,
    ):
        t0 = time.perf_counter()
        self.settings = settings
        self.adapter, self.context, default_pixels = loaded or load_model(settings)
        self.video_root = video_root if video_root is not None else default_video_root(settings.store_root)
        self.engine = Engine(self.adapter, self.video_root, settings.reuse, default_pixels)
        self.report = ShardReport(settings.shard, load_seconds=time.perf_counter() - t0)
        self.sink = sink or StoreSink(
            Store(settings.store_root), settings, self.report, self.context.versions.get("trajaudit")
        )
        self._rows: list[dict[str, Any]] = []
        self._pending: list[Outcome] = []

    def run(self, groups: list[VideoGroup], on_cell: Callable[[int], None] | None = None) -> ShardReport:
        """Answer every cell of ``groups``; full batches go to the sink as they fill."""
        for batch in self.stream(groups, on_cell):
            self.sink(batch)
        return self.report

    def stream(self, groups: list[VideoGroup], on_cell: Callable[[int], None] | None = None) -> Iterator[Batch]:
        """Answer every cell of ``groups``, yielding each batch as it fills (the last, partial one stays
        until :meth:`finish`)."""
        t0, c0 = time.perf_counter(), time.process_time()
        for group in groups:
            for done in self.engine.run(group):
                if isinstance(done, SweepFailure):
                    self.report.failures.append(done)
                    log.warning(f"{done.item_id} {done.config} failed: {done.message}")
                else:
                    self._add(done)
                if on_cell is not None:
                    on_cell(1)
                if len(self._rows) >= self.settings.batch_size:
                    yield self.take()
        self.report.compute_seconds += time.perf_counter() - t0
        self.report.cpu_seconds += time.process_time() - c0
        self.report.counters = self.engine.counters

    def finish(self) -> ShardReport:
        """Hand the last, partial batch to the sink."""
        t0, c0 = time.perf_counter(), time.process_time()
        self.flush()
        self.report.compute_seconds += time.perf_counter() - t0
        self.report.cpu_seconds += time.process_time() - c0
        return self.report

    def _row(self, done: Answered) -> dict[str, Any]:
        s = self.settings
        extra = {"sweep_id": s.sweep_id, "shard": s.shard, "reuse": s.reuse.enabled()}
        # run_id is set when the batch is written
        source = RowSource("sweep", s.model, s.benchmark, RUN, "", self.context, extra)
        return response_row(done, source, datetime.now(UTC))

    def _add(self, done: Answered) -> None:
        row = self._row(done)
        self._rows.append(row)
        self._pending.append(Outcome.from_row(row, dict(done.timings)))

    def take(self) -> Batch:
        """The buffered rows and their outcomes, emptying the buffer."""
        batch = (self._rows, self._pending)
        self._rows, self._pending = [], []
        return batch

    def flush(self) -> None:
        """Hand the buffered rows to the sink as one batch."""
        if self._rows:
            self.sink(self.take())

    def answer_cold(self, cells: list[tuple[str, str]], items: pd.DataFrame | None = None) -> list[Outcome]:
        """Each cell answered from scratch (the drift check's reference), nothing written; ``items``: their
        rows (with the catalog's videos), else read from the settings' store."""
        if items is None:
            store = Store(self.settings.store_root)
            ids = sorted({item_id for item_id, _ in cells})
            items = store.query(
                "SELECT * FROM items WHERE benchmark = ? AND list_contains(?, item_id)", [self.settings.benchmark, ids]
            )
            items = catalog.with_videos(store, self.settings.benchmark, items)
        by_id = {row["item_id"]: row for row in items.to_dict("records")}
        out = []
        for item_id, label in cells:
            cfg, item = parse(label), by_id[item_id]
            cold = answer_cold(
                self.adapter,
                item,
                cfg,
                self.video_root,
                label_seed(cfg),
                self.engine.default_pixels,
            )
            row = self._row(
                Answered(
                    item,
                    cfg,
                    label_seed(cfg),
                    cold.indices,
                    cold.fps,
                    cold.pixels,
                    cold.result,
                    cold.timings,
                    cold.decoder,
                )
            )
            out.append(Outcome.from_row(row, {p: cold.timings.get(p, 0.0) for p in PHASES}))
        return out
