"""One item in full: the Inspector page and ``trajaudit inspect --json`` (``backend.scope.inspector``)."""

from __future__ import annotations

from typing import Annotated, Literal

from backend.contracts.base import UNSET, Contract, UnsetType, doc


class InspectedItem(Contract, kw_only=True):
    """The item's row of the ``items`` table (only benchmark, item_id and options when it has none)."""

    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item's id")]
    options: Annotated[list[str], doc('the option texts, "A. ..." order')]
    split: Annotated[str | None | UnsetType, doc("the benchmark split")] = UNSET
    question: Annotated[str | None | UnsetType, doc("the question text")] = UNSET
    target: Annotated[
        str | None | UnsetType,
        doc("the right option letter (MCQA) or reference text (open-ended)"),
    ] = UNSET
    references: Annotated[str | None | UnsetType, doc("the references as stored (a JSON list; open-ended)")] = UNSET
    answer_type: Annotated[str | None | UnsetType, doc('"mcqa" or "open"')] = UNSET
    task_type: Annotated[str | None | UnsetType, doc("the task type")] = UNSET
    video: Annotated[str | None | UnsetType, doc("the video id or path under the video root")] = UNSET
    duration: Annotated[str | None | UnsetType, doc("the duration category")] = UNSET
    duration_s: Annotated[float | None | UnsetType, doc("the video's length in seconds")] = UNSET
    domain: Annotated[str | None | UnsetType, doc("the domain")] = UNSET
    sub_category: Annotated[str | None | UnsetType, doc("the sub-category")] = UNSET


class ResponseRow(Contract, kw_only=True):
    """One stored response to the item, in grid order per model."""

    model: Annotated[str, doc("the model")]
    config: Annotated[str, doc("the configuration label")]
    run: Annotated[
        str | None,
        doc('the repeat id ("main" by default, "rerun-<job>" for a live re-run; null: a row written without one)'),
    ]
    origin: Annotated[str | None, doc("where the row came from: ingest, demo, rerun or sweep")]
    run_id: Annotated[str | None, doc("the run it belongs to (the runs table)")]
    answer: Annotated[str | None, doc("the parsed option letter (null: none extracted)")]
    correct: Annotated[int | None, doc("1 right, 0 wrong (null: not scored)")]
    confidence: Annotated[float | None, doc("the chosen option's probability")]
    score: Annotated[float | None, doc("the continuous score in [0, 1] (open-ended)")]
    option_probs: Annotated[str | None, doc("JSON {letter: probability}, renormalised over the options")]
    letter_mass: Annotated[float | None, doc("probability on option letters before renormalising")]
    raw_output: Annotated[str | None, doc("the model's raw output")]
    frames: Annotated[int | None, doc("frames fed")]
    pixels: Annotated[int | None, doc("pixels per frame (null: the model's default)")]
    policy: Annotated[str | None, doc("the sampling policy")]
    seed: Annotated[int | None, doc("the sampling seed")]
    frame_indices: Annotated[
        list[int] | None,
        doc("the frame indices the model saw: logged, or reconstructed by its sampler (null: unknown or text-only)"),
    ]
    frames_source: Annotated[
        Literal["logged", "reconstructed", "unknown"] | None,
        doc('how its frames are known: "logged", "reconstructed" or "unknown" (null: text-only)'),
    ]
    sampler: Annotated[str | None, doc("the harness sampler named at ingest (null: none named)")]
    flags: Annotated[str | None, doc('comma-joined flags ("no-answer", "protocol-note", ...)')]
    source_tag: Annotated[str | None, doc("the source's own configuration name")]
    protocol_note: Annotated[str | None, doc("how the protocol differs, where it does")]
    provenance: Annotated[str | None, doc("JSON: versions, device, dtype, timings, token counts")]
    written_at: Annotated[str | None, doc("when the row was written (ISO-8601, the writer's clock: for display only)")]
    seq: Annotated[
        int | None,
        doc("the store's write sequence of the write that stored it (null: stored before the store kept one)"),
    ]
    run_source: Annotated[str | None, doc("the run's source (file path, job id or sweep id)")]
    run_format: Annotated[str | None, doc("the run's input format")]
    live_rerun: Annotated[bool, doc("true for a worker's re-run (shown apart from the logged trajectory)")]
    rerun_note: Annotated[str | None, doc("the registry's note on a re-run's model")]


class VideoProbe(Contract, kw_only=True):
    """What the video file says about itself."""

    n_frames: Annotated[int, doc("frames in the file")]
    fps: Annotated[float, doc("frames per second")]
    duration_s: Annotated[float, doc("length in seconds")]
    width: Annotated[int, doc("frame width in pixels")]
    height: Annotated[int, doc("frame height in pixels")]


class VideoStatus(Contract, kw_only=True):
    """The item's video under the video root."""

    path: Annotated[str | None, doc("the file (null when not found)")]
    problem: Annotated[str | None, doc("why it cannot be shown (null when it can)")]
    info: Annotated[VideoProbe | None, doc("the probed file (null without one)")]


class FramesSeen(Contract, kw_only=True):
    """Whose frames at one visual configuration, and how they are known: the start of a frame plan's row and of
    the report's strip."""

    config: Annotated[str, doc("the configuration")]
    models: Annotated[list[str], doc("whose frames these are")]
    source: Annotated[
        Literal["logged", "reconstructed", "unknown"],
        doc('"logged" (given by the response\'s source), "reconstructed" (by the named harness sampler) or "unknown"'),
    ]


class FramePlanRow(FramesSeen, kw_only=True):
    """The frames one visual configuration saw (one row per distinct source and index set)."""

    sampler: Annotated[str | None, doc("the harness sampler that reconstructed them (null unless reconstructed)")]
    indices: Annotated[
        list[int] | None,
        doc("the frame indices (null when unknown, or reconstructed without a linked video)"),
    ]
    timestamps: Annotated[list[float] | None, doc("their times in seconds (null without the video)")]
    added: Annotated[list[int] | None, doc("indices new relative to the previous logged row (null on the first)")]
    dropped: Annotated[list[int] | None, doc("indices gone relative to the previous logged row (null on the first)")]
    note: Annotated[str, doc("how the indices are known, or why they are not")]
    rerun: Annotated[str | None, doc("the live re-run's run id, for a row of a re-run's frames (null: a logged row)")]


class DiffWord(Contract, kw_only=True):
    """One word of an answer or a reference, as written, marked against the other side (``backend.scope.textdiff``)."""

    text: Annotated[str, doc("the word as written (data: escaped wherever shown)")]
    state: Annotated[
        Literal["matched", "unmatched", "ignored"],
        doc(
            '"matched" (its token is in the other side\'s bag), "unmatched", or "ignored" (an article or punctuation alone: Token-F1 never counts it)'
        ),
    ]


class WordDiff(Contract, kw_only=True):
    """An answer against its best reference, word by word, in Token-F1's terms."""

    reference_index: Annotated[
        int,
        doc("which of the item's references the answer is diffed against (the best one; 0-based)"),
    ]
    answer_words: Annotated[list[DiffWord], doc("the answer's words, marked")]
    reference_words: Annotated[list[DiffWord], doc("that reference's words, marked against the answer")]
    matched: Annotated[int, doc("the answer's matched words (Token-F1's overlap)")]
    answer_tokens: Annotated[int, doc("the answer's counted tokens")]
    reference_tokens: Annotated[int, doc("the reference's counted tokens")]
    token_f1: Annotated[float, doc("2 * matched / (answer_tokens + reference_tokens), recomputed from the texts")]


class TextRow(Contract, kw_only=True):
    """One configuration's answer to an open-ended item, beside the reference."""

    model: Annotated[str, doc("the model")]
    config: Annotated[str, doc("the configuration label")]
    run: Annotated[str, doc("the repeat id (the logged trajectory's run, or a live re-run's)")]
    live_rerun: Annotated[bool, doc("true for a worker's re-run (never ranked with the logged answers)")]
    text: Annotated[str | None, doc("the answer as stored (raw output; data: escaped wherever shown)")]
    score: Annotated[float | None, doc("the stored score in [0, 1] (null: not scored)")]
    rank: Annotated[
        Literal["best", "worst"] | None,
        doc('"best" or "worst" among the model\'s logged configurations by stored score (null: neither, or all equal)'),
    ]
    diff: Annotated[WordDiff, doc("the word-level diff against the reference")]


class ItemTexts(Contract, kw_only=True):
    """The texts side by side: an open-ended item's references and each configuration's answer."""

    references: Annotated[list[str], doc("the item's references (its target when it stores no list)")]
    rows: Annotated[
        list[TextRow],
        doc("one row per model and configuration (logged first, in grid order; then live re-runs)"),
    ]


class InspectReport(Contract, kw_only=True):
    """The Inspector page and ``trajaudit inspect --json``."""

    item: Annotated[InspectedItem, doc("the item's metadata")]
    responses: Annotated[list[ResponseRow], doc("every stored response, in grid order per model")]
    video: Annotated[VideoStatus, doc("the video's status")]
    frames: Annotated[
        list[FramePlanRow],
        doc("the frame plan per visual configuration, each live re-run's frames under its configuration"),
    ]
    texts: Annotated[
        ItemTexts | None,
        doc("the answers beside the reference with a word-level diff (null unless the item is open-ended)"),
    ]


class ReplacedResponse(Contract, kw_only=True):
    """A response as it was stored before an ingest with ``--replace`` changed it (the ``history`` table)."""

    model: Annotated[str, doc("the model")]
    config: Annotated[str, doc("the configuration label")]
    run: Annotated[str, doc("the repeat id")]
    run_id: Annotated[str | None, doc("the run the old row belonged to")]
    answer: Annotated[str | None, doc("the old parsed option letter")]
    correct: Annotated[int | None, doc("the old correctness")]
    confidence: Annotated[float | None, doc("the old confidence")]
    score: Annotated[float | None, doc("the old score")]
    option_probs: Annotated[str | None, doc("the old option probabilities (JSON)")]
    raw_output: Annotated[str | None, doc("the old raw output")]
    seq: Annotated[
        int | None,
        doc("the write sequence that stored the old row (null: stored before the store kept one)"),
    ]
    replaced_seq: Annotated[int, doc("the write sequence that replaced it")]
    replaced_by: Annotated[str | None, doc("the run id of the row that replaced it")]
    written_at: Annotated[str | None, doc("when the old row was written (ISO-8601, the writer's clock)")]


class HistoryReport(Contract, kw_only=True):
    """``trajaudit inspect --history --json``: every value an item's responses held before a ``--replace``."""

    benchmark: Annotated[str, doc("the benchmark")]
    item_id: Annotated[str, doc("the item's id")]
    history: Annotated[list[ReplacedResponse], doc("the replaced rows, oldest replacement first")]
