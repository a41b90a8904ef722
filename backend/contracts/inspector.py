"""One item in full: the Inspector page and ``trajaudit inspect --json`` (``backend.scope.inspector``)."""

from typing import Literal, NotRequired, TypedDict


class InspectedItem(TypedDict):
    """The item's row of the ``items`` table (only benchmark, item_id and options when it has none).

    benchmark: the benchmark
    item_id: the item's id
    options: the option texts, "A. ..." order
    split: the benchmark split
    question: the question text
    target: the right option letter (MCQA) or reference text (open-ended)
    references: the references as stored (a JSON list; open-ended)
    answer_type: "mcqa" or "open"
    task_type: the task type
    video: the video id or path under the video root
    duration: the duration category
    duration_s: the video's length in seconds
    domain: the domain
    sub_category: the sub-category
    """

    benchmark: str
    item_id: str
    options: list[str]
    split: NotRequired[str | None]
    question: NotRequired[str | None]
    target: NotRequired[str | None]
    references: NotRequired[str | None]
    answer_type: NotRequired[str | None]
    task_type: NotRequired[str | None]
    video: NotRequired[str | None]
    duration: NotRequired[str | None]
    duration_s: NotRequired[float | None]
    domain: NotRequired[str | None]
    sub_category: NotRequired[str | None]


class ResponseRow(TypedDict):
    """One stored response to the item, in grid order per model.

    model: the model
    config: the configuration label
    run: the repeat id ("main" by default, "rerun-<job>" for a live re-run)
    origin: where the row came from: ingest, demo, rerun or sweep
    run_id: the run it belongs to (the runs table)
    answer: the parsed option letter (null: none extracted)
    correct: 1 right, 0 wrong (null: not scored)
    confidence: the chosen option's probability
    score: the continuous score in [0, 1] (open-ended)
    option_probs: JSON {letter: probability}, renormalised over the options
    letter_mass: probability on option letters before renormalising
    raw_output: the model's raw output
    frames: frames fed
    pixels: pixels per frame (null: the model's default)
    policy: the sampling policy
    seed: the sampling seed
    frame_indices: the frame indices the model saw: logged, or reconstructed by its sampler (null: unknown or text-only)
    frames_source: how its frames are known: "logged", "reconstructed" or "unknown" (null: text-only)
    sampler: the harness sampler named at ingest (null: none named)
    flags: comma-joined flags ("no-answer", "protocol-note", ...)
    source_tag: the source's own configuration name
    protocol_note: how the protocol differs, where it does
    provenance: JSON: versions, device, dtype, timings, token counts
    written_at: when the row was written (ISO-8601, the writer's clock: for display only)
    seq: the store's write sequence of the write that stored it (null: stored before the store kept one)
    run_source: the run's source (file path, job id or sweep id)
    run_format: the run's input format
    live_rerun: true for a worker's re-run (shown apart from the logged trajectory)
    rerun_note: the registry's note on a re-run's model
    """

    model: str
    config: str
    run: str
    origin: str | None
    run_id: str | None
    answer: str | None
    correct: int | None
    confidence: float | None
    score: float | None
    option_probs: str | None
    letter_mass: float | None
    raw_output: str | None
    frames: int | None
    pixels: int | None
    policy: str | None
    seed: int | None
    frame_indices: list[int] | None
    frames_source: Literal["logged", "reconstructed", "unknown"] | None
    sampler: str | None
    flags: str | None
    source_tag: str | None
    protocol_note: str | None
    provenance: str | None
    written_at: str | None
    seq: int | None
    run_source: str | None
    run_format: str | None
    live_rerun: bool
    rerun_note: str | None


class VideoProbe(TypedDict):
    """What the video file says about itself.

    n_frames: frames in the file
    fps: frames per second
    duration_s: length in seconds
    width: frame width in pixels
    height: frame height in pixels
    """

    n_frames: int
    fps: float
    duration_s: float
    width: int
    height: int


class VideoStatus(TypedDict):
    """The item's video under the video root.

    path: the file (null when not found)
    problem: why it cannot be shown (null when it can)
    info: the probed file (null without one)
    """

    path: str | None
    problem: str | None
    info: VideoProbe | None


class FramePlanRow(TypedDict):
    """The frames one visual configuration saw (one row per distinct source and index set).

    config: the configuration
    models: whose frames these are
    source: "logged" (given by the response's source), "reconstructed" (by the named harness sampler) or "unknown"
    sampler: the harness sampler that reconstructed them (null unless reconstructed)
    indices: the frame indices (null when unknown, or reconstructed without a linked video)
    timestamps: their times in seconds (null without the video)
    added: indices new relative to the previous logged row (null on the first)
    dropped: indices gone relative to the previous logged row (null on the first)
    note: how the indices are known, or why they are not
    rerun: the live re-run's run id, for a row of a re-run's frames (null: a logged row)
    """

    config: str
    models: list[str]
    source: Literal["logged", "reconstructed", "unknown"]
    sampler: str | None
    indices: list[int] | None
    timestamps: list[float] | None
    added: list[int] | None
    dropped: list[int] | None
    note: str
    rerun: str | None


class DiffWord(TypedDict):
    """One word of an answer or a reference, as written, marked against the other side (``backend.scope.textdiff``).

    text: the word as written (data: escaped wherever shown)
    state: "matched" (its token is in the other side's bag), "unmatched", or "ignored" (an article or punctuation alone: Token-F1 never counts it)
    """

    text: str
    state: Literal["matched", "unmatched", "ignored"]


class WordDiff(TypedDict):
    """An answer against its best reference, word by word, in Token-F1's terms.

    reference_index: which of the item's references the answer is diffed against (the best one; 0-based)
    answer_words: the answer's words, marked
    reference_words: that reference's words, marked against the answer
    matched: the answer's matched words (Token-F1's overlap)
    answer_tokens: the answer's counted tokens
    reference_tokens: the reference's counted tokens
    token_f1: 2 * matched / (answer_tokens + reference_tokens), recomputed from the texts
    """

    reference_index: int
    answer_words: list[DiffWord]
    reference_words: list[DiffWord]
    matched: int
    answer_tokens: int
    reference_tokens: int
    token_f1: float


class TextRow(TypedDict):
    """One configuration's answer to an open-ended item, beside the reference.

    model: the model
    config: the configuration label
    run: the repeat id (the logged trajectory's run, or a live re-run's)
    live_rerun: true for a worker's re-run (never ranked with the logged answers)
    text: the answer as stored (raw output; data: escaped wherever shown)
    score: the stored score in [0, 1] (null: not scored)
    rank: "best" or "worst" among the model's logged configurations by stored score (null: neither, or all equal)
    diff: the word-level diff against the reference
    """

    model: str
    config: str
    run: str
    live_rerun: bool
    text: str | None
    score: float | None
    rank: Literal["best", "worst"] | None
    diff: WordDiff


class ItemTexts(TypedDict):
    """The texts side by side: an open-ended item's references and each configuration's answer.

    references: the item's references (its target when it stores no list)
    rows: one row per model and configuration (logged first, in grid order; then live re-runs)
    """

    references: list[str]
    rows: list[TextRow]


class InspectReport(TypedDict):
    """The Inspector page and ``trajaudit inspect --json``.

    item: the item's metadata
    responses: every stored response, in grid order per model
    video: the video's status
    frames: the frame plan per visual configuration, each live re-run's frames under its configuration
    texts: the answers beside the reference with a word-level diff (null unless the item is open-ended)
    """

    item: InspectedItem
    responses: list[ResponseRow]
    video: VideoStatus
    frames: list[FramePlanRow]
    texts: ItemTexts | None


class ReplacedResponse(TypedDict):
    """A response as it was stored before an ingest with ``--replace`` changed it (the ``history`` table).

    model: the model
    config: the configuration label
    run: the repeat id
    run_id: the run the old row belonged to
    answer: the old parsed option letter
    correct: the old correctness
    confidence: the old confidence
    score: the old score
    option_probs: the old option probabilities (JSON)
    raw_output: the old raw output
    seq: the write sequence that stored the old row (null: stored before the store kept one)
    replaced_seq: the write sequence that replaced it
    replaced_by: the run id of the row that replaced it
    written_at: when the old row was written (ISO-8601, the writer's clock)
    """

    model: str
    config: str
    run: str
    run_id: str | None
    answer: str | None
    correct: int | None
    confidence: float | None
    score: float | None
    option_probs: str | None
    raw_output: str | None
    seq: int | None
    replaced_seq: int
    replaced_by: str | None
    written_at: str | None


class HistoryReport(TypedDict):
    """``trajaudit inspect --history --json``: every value an item's responses held before a ``--replace``.

    benchmark: the benchmark
    item_id: the item's id
    history: the replaced rows, oldest replacement first
    """

    benchmark: str
    item_id: str
    history: list[ReplacedResponse]
