"""Running models: ``trajaudit rerun``, ``sweep`` and ``dispatch`` with ``--json``. What ``ingest --json`` prints is the store's
own record, ``store.ingest.IngestSummary`` (not imported here: the ingest package imports its readers)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from backend.contracts.base import Contract, doc
from backend.contracts.common import Interval
from backend.contracts.store import JobState

# The phases a run's ``timings`` name, in the order a request passes through them (decoding the video, the
# processor, the vision encoder, the prefill, generation): the sweep's accounting and the re-run panel's chart.
PHASES = ("decode", "preprocess", "vision", "prefill", "generate")


class RerunOutcome(Contract, kw_only=True):
    """``trajaudit rerun --item ID --json`` (``backend.runtime.rerun.outcome``): the request, its job and its
    answer. The answer's fields are the stored response's columns, null until there is an answer: one shape
    for a queued, a failed and an answered request."""

    from_store: Annotated[bool, doc("true when a stored response answered it (no job)")]
    job_id: Annotated[int | None, doc("the job queued or joined (null: answered from the store)")]
    state: Annotated[JobState, doc('the job\'s state ("done" when answered from the store)')]
    error: Annotated[str | None, doc("why the job failed (null unless it did)")]
    timed_out: Annotated[bool, doc("true when --wait gave up before the job ended")]
    model: Annotated[str, doc("the model")]
    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item")]
    config: Annotated[str, doc("the configuration label, canonical")]
    seed: Annotated[
        int | None, doc("the sampling seed (null: the policy draws none); the stored response's when answered")
    ]
    run: Annotated[str | None, doc('the answering response\'s run ("main" or a re-run id; null: no answer yet)')]
    origin: Annotated[str | None, doc("where the response came from (ingest, sweep, rerun, demo); null until answered")]
    answer: Annotated[str | None, doc("the answer (null: no answer yet, or none could be read)")]
    correct: Annotated[int | None, doc("1 right, 0 wrong (null: no answer yet)")]
    confidence: Annotated[float | None, doc("the answer's probability (null: not available)")]
    score: Annotated[
        float | None, doc("the continuous score of an open-ended answer (null: multiple choice); null until answered")
    ]
    option_probs: Annotated[dict[str, float] | None, doc("per option letter, its probability (null: not available)")]
    letter_mass: Annotated[
        float | None, doc("probability mass on the option letters (null: not recorded); null until answered")
    ]
    frames: Annotated[int | None, doc("frames seen (null: not recorded); null until answered")]
    pixels: Annotated[int | None, doc("pixels per frame (null: the processor's default); null until answered")]
    policy: Annotated[str | None, doc("the sampling policy (null: not recorded); null until answered")]
    frame_indices: Annotated[list[int] | None, doc("the frames the model saw (null: text-only or no answer yet)")]
    raw_output: Annotated[str | None, doc("the model's text (null: not recorded); null until answered")]
    flags: Annotated[str | None, doc("comma-joined quality flags (null: none); null until answered")]
    provenance: Annotated[
        dict[str, Any] | None, doc("how the response was produced (an object, empty when unknown; null until answered)")
    ]
    written_at: Annotated[str | None, doc("when the response was stored (ISO-8601 UTC; null until answered)")]
    timings: Annotated[dict[str, float] | None, doc("seconds per phase of the run that answered (null: not recorded)")]


class RerunBatch(Contract, kw_only=True):
    """A selection's batch re-run (``backend.runtime.selection.submit``): every item asked the same way."""

    model: Annotated[str, doc("the model")]
    benchmark: Annotated[str, doc("the benchmark")]
    config: Annotated[str, doc("the configuration label, canonical")]
    seed: Annotated[int | None, doc("the sampling seed (null: the policy draws none)")]
    item_ids: Annotated[list[str], doc("the selected items, in the selection's order")]
    job_ids: Annotated[list[int | None], doc("per item, its job (null: answered from the store)")]
    from_store: Annotated[int, doc("items answered from the store")]


class BatchProgress(Contract, kw_only=True):
    """How far a batch's jobs are (an item answered from the store counts as done)."""

    n: Annotated[int, doc("items of the batch")]
    counts: Annotated[dict[str, int], doc("per job state (queued, running, done, failed, cancelled), its items")]
    finished: Annotated[bool, doc("true when no job is queued or running")]
    failure: Annotated[str | None, doc("the most frequent error of its failed jobs, in one line (null: none failed)")]


class Share(Contract, kw_only=True):
    """A count of right answers out of those compared, with its Wilson 95% interval."""

    k: Annotated[int, doc("items right")]
    n: Annotated[int, doc("items compared")]
    value: Annotated[float | None, doc("k / n (null: none compared)")]
    ci95: Annotated[Interval | None, doc("the Wilson 95% interval of k / n (null: none compared)")]


ComparedItem = Annotated[
    dict[str, str | int | None],
    Meta(
        description="One selected item at the baseline and at the re-run's configuration (a table row): item_id, "
        "correct at <config> (1 right, 0 wrong, null unanswered: one key for the baseline, one for the new config, "
        "``correct at <config> (re-run)`` when the baseline is the same config), answer (its answer at the new "
        "configuration, null: none yet), run (the run of that answer, null: none yet)"
    ),
]
"""A table row (its correctness columns are named by the configurations)."""


class LoggedAgreement(Share, kw_only=True):
    """A ``logged`` re-run's answers against the logged answers whose frames it replayed: a protocol check
    on the worker (``k`` items answered the same out of ``n`` answered both ways)."""

    logged_config: Annotated[str, doc("the logged configuration whose frames were replayed")]
    differing: Annotated[list[str], doc("the items whose re-run answer differs from the logged one")]


class BatchComparison(Contract, kw_only=True):
    """The selection under the new configuration against the baseline (``backend.analysis.selection.compare``)."""

    model: Annotated[str, doc("the model")]
    benchmark: Annotated[str, doc("the benchmark")]
    selection: Annotated[str, doc('the selection, in words ("8f → 64f harmed", "wrong at 8f", "5 picked items")')]
    config: Annotated[str, doc("the new configuration")]
    baseline: Annotated[str, doc("the configuration compared against")]
    n_items: Annotated[int, doc("selected items")]
    n_compared: Annotated[int, doc("items answered at both configurations")]
    n_missing: Annotated[int, doc("items not (yet) answered at both")]
    correct_new: Annotated[int, doc("compared items right under config")]
    correct_baseline: Annotated[int, doc("compared items right at the baseline")]
    accuracy_new: Annotated[Share, doc("correct_new out of n_compared")]
    accuracy_baseline: Annotated[Share, doc("correct_baseline out of n_compared")]
    rescued: Annotated[int, doc("wrong at the baseline, right under config")]
    harmed: Annotated[int, doc("right at the baseline, wrong under config")]
    mcnemar_p: Annotated[float, doc("exact two-sided McNemar p of rescued against harmed")]
    sentence: Annotated[str, doc("the comparison in one sentence")]
    items: Annotated[list[ComparedItem], doc("per selected item, its correctness at both and its new answer")]
    agreement: Annotated[
        LoggedAgreement | None,
        doc("with the logged answers, for a re-run with the logged frames (``--frames logged``; null otherwise)"),
    ]


class SelectionRerunReport(Contract, kw_only=True):
    """``trajaudit rerun --flow|--state|--items ... --json`` and the page's batch re-run: the batch and its comparison."""

    batch: Annotated[RerunBatch, doc("the batch submitted")]
    progress: Annotated[BatchProgress, doc("its jobs' states (with --wait: when it ended or timed out)")]
    comparison: Annotated[BatchComparison, doc("the selection against --baseline, as far as answered")]


class SweepCells(Contract, kw_only=True):
    """A sweep's cells (item x configuration)."""

    grid: Annotated[int, doc("cells of the grid (items x configurations)")]
    skipped: Annotated[int, doc("cells already stored (--resume)")]
    pending: Annotated[int, doc("cells to run")]
    done: Annotated[int, doc("cells answered and stored")]
    raced: Annotated[int, doc("cells answered but stored meanwhile by another writer")]
    failed: Annotated[int, doc("cells that failed")]


class SweepFailure(Contract, kw_only=True):
    """A cell the sweep could not answer (what the sweep engine yields for it)."""

    item_id: Annotated[str, doc("the item")]
    config: Annotated[str, doc("the configuration")]
    message: Annotated[str, doc("why")]


class PhaseTotals(Contract, kw_only=True):
    """Seconds per inference phase, summed over cells."""

    decode: Annotated[float, doc("decoding the video's frames")]
    preprocess: Annotated[float, doc("resizing and the processor call")]
    vision: Annotated[float, doc("the vision encoder")]
    prefill: Annotated[float, doc("the prompt's prefill")]
    generate: Annotated[float, doc("generating the answer")]


class PhaseShares(PhaseTotals, kw_only=True):
    """Each phase's share of the time (fractions summing to 1 with ``other``)."""

    other: Annotated[float, doc("the share no phase covers (store writes, planning, Python between phases)")]


class SweepCounters(Contract, kw_only=True):
    """What the sweep computed, beside what a cold run of the same cells computes."""

    requests: Annotated[int, doc("requests answered")]
    processor_calls: Annotated[int, doc("processor calls made")]
    processor_calls_cold: Annotated[int, doc("processor calls a cold run makes")]
    frames_encoded: Annotated[int, doc("frames through the vision encoder")]
    frames_encoded_cold: Annotated[int, doc("frames a cold run encodes")]
    prefill_tokens: Annotated[int, doc("tokens prefilled")]
    prefill_tokens_cold: Annotated[int, doc("tokens a cold run prefills")]
    prefixes: Annotated[int, doc("shared prompt prefixes prefilled")]
    composed: Annotated[int, doc("requests whose inputs were composed instead of processed")]
    frames_decoded: Annotated[int, doc("frames decoded")]
    frames_decoded_cold: Annotated[int, doc("frames one decode per visual cell decodes")]
    videos_opened: Annotated[int, doc("videos opened")]


class DriftedCell(Contract, kw_only=True):
    """A verified cell whose answer changed on the sweep's path."""

    item_id: Annotated[str, doc("the item")]
    config: Annotated[str, doc("the configuration")]
    reused: Annotated[str | None, doc("the sweep's answer")]
    cold: Annotated[str | None, doc("the cold path's answer")]


class ReuseCeiling(Contract, kw_only=True):
    """What one reuse (or ``prune``) can buy end to end, from the verified pairs."""

    reuse: Annotated[str, doc("decode, prefix, vision or prune")]
    phases: Annotated[list[str], doc("the phases it acts on")]
    f: Annotated[float, doc("the cold share of those phases")]
    s: Annotated[float | None, doc("cold over reused seconds of those phases (null: no reused time)")]
    ceiling: Annotated[float | None, doc("the end-to-end bound 1 / ((1 - f) + f / s) (null: not defined)")]


class DriftCheck(Contract, kw_only=True):
    """The paired comparison of K cells re-run cold with the sweep's answers for them
    (``backend.runtime.sweep.verify.drift``)."""

    cells: Annotated[int, doc("cells compared")]
    choice_drift: Annotated[int, doc("cells whose answer changed")]
    correctness_drift: Annotated[int, doc("cells whose correctness changed")]
    max_prob_diff: Annotated[float, doc("the largest difference in an option's probability")]
    within_tolerance: Annotated[bool, doc("true when every difference is within 1e-5")]
    pathological: Annotated[int, doc("the sweep's empty or unparseable answers among them")]
    pathological_cold: Annotated[int, doc("the cold path's")]
    drifted: Annotated[list[DriftedCell], doc("the cells whose answer changed")]


class SweepVerify(DriftCheck, kw_only=True):
    """The paired drift check (``--verify K``): K cells re-run cold and compared with the sweep's answers,
    with the phase accounting of the same cells."""

    cold_phase_totals: Annotated[PhaseTotals, doc("seconds per phase of the cold runs")]
    reused_phase_totals: Annotated[PhaseTotals, doc("seconds per phase of the same cells on the sweep's path")]
    cold_phase_shares: Annotated[PhaseShares, doc("each phase's share of the cold runs")]
    measured_speedup: Annotated[float | None, doc("cold over reused seconds of these cells (null: no reused time)")]
    reuse_ceilings: Annotated[
        list[ReuseCeiling], doc("per reuse on (and prune, for an approximate sweep), its ceiling")
    ]


class SweepReport(Contract, kw_only=True):
    """``trajaudit sweep --json`` (``backend.runtime.sweep.runner.run_sweep``): cells, time and reuse of one sweep."""

    sweep_id: Annotated[str, doc("the sweep's id (its rows' run id)")]
    model: Annotated[str, doc("the model")]
    benchmark: Annotated[str, doc("the benchmark")]
    configs: Annotated[list[str], doc("the configurations swept, canonical")]
    executor: Annotated[str, doc("local or ray")]
    shards: Annotated[int, doc("shards run")]
    reuse: Annotated[list[str], doc("the reuses on (decode, prefix, vision)")]
    random_fullsize: Annotated[
        str | None, doc("the preset of a --random-fullsize build (null: the registered checkpoint)")
    ]
    cells: Annotated[SweepCells, doc("the cells, by outcome")]
    failures: Annotated[list[SweepFailure], doc("the failed cells (the first 20)")]
    batches: Annotated[int, doc("store writes")]
    wall_seconds: Annotated[float, doc("seconds from start to end")]
    load_seconds: Annotated[float, doc("seconds loading the model (the slowest shard)")]
    sweep_seconds: Annotated[float, doc("seconds answering cells (the busiest shard)")]
    cpu_seconds: Annotated[float, doc("CPU seconds of the busiest shard's process")]
    cells_per_second: Annotated[float | None, doc("done over sweep_seconds (null: nothing ran)")]
    phase_totals: Annotated[PhaseTotals, doc("seconds per phase, summed over cells")]
    phase_shares: Annotated[PhaseShares, doc("each phase's share of the compute time")]
    counters: Annotated[SweepCounters, doc("what was computed, beside the cold counts")]
    verify: Annotated[SweepVerify | None, doc("the drift check (null without --verify)")]
    withdrawn: Annotated[bool, doc("true when a choice drift withdrew the sweep's rows from the store")]
    approximate: Annotated[bool, doc("true when a configuration is an approximate protocol (~prune)")]


class DispatchStats(Contract, kw_only=True):
    """``trajaudit dispatch --json`` (``backend.runtime.dispatch.Dispatcher.run``): what a dispatcher did until it
    stopped. The ratios are null where their denominator is 0 (no time, no shipped job, no write)."""

    done: Annotated[int, doc("jobs answered and stored")]
    failed: Annotated[int, doc("jobs failed (their reason is in the queue)")]
    requeued: Annotated[int, doc("jobs given back to the queue because their actor died")]
    from_store: Annotated[int, doc("jobs whose answer was already stored (completed from it)")]
    writes: Annotated[int, doc("store writes")]
    rows_written: Annotated[int, doc("response rows written")]
    shipped_bytes: Annotated[int, doc("bytes of decoded frames sent to the actors (--videos ship)")]
    shipped_jobs: Annotated[int, doc("jobs whose frames were shipped")]
    actors_started: Annotated[int, doc("actors started")]
    actors_died: Annotated[int, doc("actors that died or whose node left")]
    seconds: Annotated[float, doc("seconds served")]
    claim_seconds: Annotated[float, doc("seconds claiming jobs and reading their inputs (shipped frames included)")]
    write_seconds: Annotated[float, doc("seconds building rows, writing the store and marking jobs done")]
    answers_per_second: Annotated[float | None, doc("done / seconds")]
    bytes_per_shipped_job: Annotated[int | None, doc("shipped_bytes / shipped_jobs")]
    rows_per_write: Annotated[float | None, doc("rows_written / writes")]
    writer_busy: Annotated[
        float | None, doc("write_seconds / seconds: the share of the time the single writer was busy")
    ]
