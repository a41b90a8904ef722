"""lmms-eval ``--log_samples`` output (FORMATS.md): the JSONL per task, and the older ``<task>.json``
holding ``{"args", "model_configs", "logs": [...]}``.

Item key: the task's metric payload carries it (Video-MME and MLVU ``question_id``, LongVideoBench
``id``). ``doc_id`` restarts across sharded runs and ``doc_hash`` is the same on every row, so
neither is ever the key where a real one exists. MVBench logs carry no question id: the key is
composed as ``<task>/<video>#<sha1(question)[:8]>`` when the sample has its ``doc``, else
``<task>/<doc_id>``; the composition is recorded in the run's settings (``item_key``).

Payloads and ``filtered_resps`` may be Python-repr strings; they are read with ``ast.literal_eval``.
The budget comes from ``--config`` or the harness's own settings: ``config.model_args`` of the
sibling ``<timestamp>_results.json`` (or ``args.model_args`` / ``model_configs`` of the older file),
else from a budget the file's or its folder's name states unambiguously (``16f``, ``16frames``,
``nframes16``), which the summary line says.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from store import configs
from store.answers import LETTERS, split_lettered
from store.ingest import gate, jsontext
from store.ingest.common import (
    Batch,
    IngestOptions,
    budget_hint,
    fail,
    given_config,
    json_rows,
    load_json,
    make_batch,
    read_text_bytes,
)

FORMAT = "lmms-eval"
# Metric payload key -> benchmark. "percetion" is lmms-eval's own spelling for MLVU.
PAYLOADS = {
    "videomme_perception_score": "videomme",
    "lvb_acc": "longvideobench",
    "mvbench_accuracy": "mvbench",
    "mlvu_percetion_score": "mlvu",
    "mlvu_perception_score": "mlvu",
}
TASK_PREFIXES = {"videomme": "videomme", "longvideobench": "longvideobench", "mvbench": "mvbench", "mlvu": "mlvu"}
KEY_FIELDS = ("question_id", "id")
# Payload field -> our column. answer/gt_answer are the target; pred_answer/parsed_pred/score are
# the harness's verdict, kept to flag disagreement with our extraction.
PAYLOAD_FIELDS = {
    "duration": "duration",
    "duration_group": "duration",
    "category": "domain",
    "sub_category": "sub_category",
    "task_category": "task_type",
    "question_category": "task_type",
    "task_type": "task_type",
    "domain": "domain",
    "videoID": "video",
    "video_path": "video",
    "video_name": "video",
    "video": "video",
    "answer": "target",
    "gt_answer": "target",
    "pred_answer": "harness_answer",
    "parsed_pred": "harness_answer",
    "score": "harness_correct",
}
# The file's own video reference, in the order tried (payload, then the sample's doc); a ``video_id``
# counts only when it is not Video-MME's numeric id (``001``), which names no file.
VIDEO_KEYS = ("videoID", "video_path", "video_name", "video", "video_id")
_NUMERIC_VIDEO_ID = re.compile(r"^\d+$")
FRAME_INDEX_KEYS = ("frame_idx", "frame_indices")  # a customised run's logged frames (VIDEOS.md)
FRAME_KEYS = ("max_frames_num", "max_num_frames", "num_frame", "num_frames", "nframes")
_SAMPLES_NAME = re.compile(r"^(?P<stamp>\d{8}_\d{6})_samples_(?P<task>.+)\.jsonl$")
_OPTIONS_HEADER = re.compile(r"^\s*(options|choices|candidates)\s*:?\s*$", re.IGNORECASE)
_INSTRUCTION = re.compile(r"best answer|respond with only|answer with the option|select the", re.IGNORECASE)


def looks_like(first: dict) -> bool:
    """A sample line: a doc_id and the harness's responses."""
    return "doc_id" in first and ("filtered_resps" in first or "resps" in first)


def read(path: Path, opts: IngestOptions) -> Batch:
    data = read_text_bytes(path).decode("utf-8")
    top: dict = {}
    if path.suffix.lower() == ".json":
        top = _load_json(path, data)
        samples = list(enumerate(top["logs"], 1))
        word = "log entry"
    else:
        samples = _json_lines(path, data)
        word = "line"
    if not samples:
        raise fail(path, "no samples in the file")
    results_file, harness = _harness_settings(path, top)
    first_payload, first_fields = _payload(samples[0][1])
    task = _task_name(path) or PAYLOADS.get(first_payload or "") or first_payload
    records = [_record(path, n, s, task, word) for n, s in tqdm(samples, disable=not opts.progress, desc=path.name)]
    rows = pd.DataFrame.from_records(records)
    rows["benchmark"] = opts.benchmark or _benchmark(path, first_payload, task)
    rows["model"] = opts.model or _model(path, harness)
    config, hint = _given_config(path, harness, results_file, opts) if opts.config else _config(path, harness)
    rows["config"] = config
    if "harness_correct" in rows:
        score = pd.Series(gate.numbers(path, rows["harness_correct"], rows["_line"], "score", word), index=rows.index)
        rows["harness_correct"] = score.where(score.isin([0, 1]))  # only a 0/1 score is a verdict
    rows["provenance"] = json_rows(pd.DataFrame.from_records(list(rows.pop("_prov"))))
    settings = {
        "task": task,
        "results_file": str(results_file) if results_file else None,
        "harness": harness,
        "item_key": _key_note(first_payload, first_fields),
        "config_hint": hint,
    }
    return make_batch(path, FORMAT, rows, opts, settings, line_word=word)


# -- reading -------------------------------------------------------------------------------------
def _json_lines(path: Path, text: str) -> list[tuple[int, dict]]:
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        obj = load_json(path, line, n, constants=True)
        if not isinstance(obj, dict):
            raise fail(path, "expected one JSON object per line", n)
        out.append((n, obj))
    return out


def _load_json(path: Path, text: str) -> dict:
    top = load_json(path, text, constants=True)
    if not isinstance(top, dict) or not isinstance(top.get("logs"), list):
        raise fail(path, 'expected an lmms-eval log {"args", "model_configs", "logs": [...]}')
    return top


def _literal(value: object) -> object:
    """JSON or Python-repr text -> the object; anything else unchanged."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        for parse in (lambda v: jsontext.decode(v, constants=True), ast.literal_eval):
            try:
                return parse(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):  # ast's parser on deep nesting
                continue
    return value


def _response_text(value: object) -> str | None:
    """``filtered_resps``: a list (possibly nested), a string, or a repr of a list -> the first text."""
    value = _literal(value)
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    return None if value is None else str(value)


def _payload(sample: dict) -> tuple[str | None, dict]:
    """The task's metric payload: a known key, else any dict value holding an item id."""
    for key in PAYLOADS:
        if key in sample:
            value = _literal(sample[key])
            return key, value if isinstance(value, dict) else {}
    for key, value in sample.items():
        value = _literal(value)
        if key != "doc" and isinstance(value, dict) and any(k in value for k in KEY_FIELDS):
            return key, value
    return None, {}


def _prompt(sample: dict) -> str | None:
    """The prompt text: ``input``, or the first string inside the older ``arguments``."""
    stack = [sample.get("input"), sample.get("arguments")]
    while stack:
        v = stack.pop(0)
        if isinstance(v, str):
            return v
        if isinstance(v, dict):
            stack[:0] = list(v.values())
        elif isinstance(v, (list, tuple)):
            stack[:0] = list(v)
    return None


def parse_prompt(prompt: str | None) -> tuple[str | None, list[str]]:
    """(question, ["A. ...", ...]) from a multiple-choice prompt; instruction lines are dropped."""
    if not prompt:
        return None, []
    lines = prompt.splitlines()
    options: list[str] = []
    first = None
    for i, line in enumerate(lines):
        found = split_lettered(line)
        if found and len(options) < len(LETTERS) and found[0] == LETTERS[len(options)]:
            first = i if first is None else first
            options.append(f"{found[0]}. {found[1]}")
        elif options:
            break
    if len(options) < 2:
        return None, []
    head = lines[:first]
    cut = max((i + 1 for i, line in enumerate(head) if _INSTRUCTION.search(line)), default=0)
    question = "\n".join(line for line in head[cut:] if line.strip() and not _OPTIONS_HEADER.match(line))
    question = re.sub(r"^\s*question:\s*", "", question, flags=re.IGNORECASE).strip()
    return question or None, options


def _target_letter(target: object, options: list[str]) -> object:
    """A target given as option text (or "(B) text") -> its letter; letters and others unchanged."""
    if not isinstance(target, str):
        return target
    t = target.strip()
    found = split_lettered(f"{t} ", spaced=True)  # "(B) text", "(B)", "B.": white space or the end after the mark
    if found:
        return found[0]
    for letter, text in filter(None, map(split_lettered, options)):
        if text.rstrip(".").lower() == t.rstrip(".").lower() and t:
            return letter
    return t


def _record(path: Path, n: int, sample: dict, task: str | None, word: str) -> dict:
    payload_key, payload = _payload(sample)
    doc = _literal(sample.get("doc"))
    doc = doc if isinstance(doc, dict) else {}
    prompt = _prompt(sample)
    question, options = parse_prompt(prompt)
    rec: dict = {"_line": n, "raw_output": _response_text(sample.get("filtered_resps", sample.get("resps")))}
    for k, v in payload.items():
        if k in PAYLOAD_FIELDS and PAYLOAD_FIELDS[k] not in rec:
            rec[PAYLOAD_FIELDS[k]] = None if v is None else str(v)
    target = rec.get("target") if rec.get("target") not in (None, "") else sample.get("target")
    rec["target"] = _target_letter(target if target is None else str(target), options)
    rec["question"] = question or doc.get("question")
    rec["options"] = json.dumps(options, ensure_ascii=False) if options else None
    rec["n_options"] = len(options) or None
    rec["video"] = _video_reference(payload, doc)
    rec["frame_indices"] = next((payload[k] for k in FRAME_INDEX_KEYS if k in payload), None)
    rec["item_id"] = _item_key(path, n, payload, doc, sample, task, word)
    prov = {"doc_id": sample.get("doc_id"), "payload": payload_key, "prompt": prompt}
    for k in ("pred_answer", "parsed_pred", "score"):
        if k in payload:
            prov[f"harness_{k}"] = payload[k]
    extra = {k: v for k, v in payload.items() if k not in PAYLOAD_FIELDS and k not in KEY_FIELDS + FRAME_INDEX_KEYS}
    if extra:  # every other field the payload carries (frame_num, use_topk, ...), kept as written
        prov["payload_fields"] = extra
    if "token_counts" in sample:
        prov["token_counts"] = sample["token_counts"]
    if "resps" in sample and _response_text(sample["resps"]) != rec["raw_output"]:
        prov["resps"] = sample["resps"]
    rec["_prov"] = prov
    return rec


def _video_reference(payload: dict, doc: dict) -> str | None:
    """The file's own name for the item's video (``VIDEO_KEYS``), payload first."""
    for source in (payload, doc):
        for k in VIDEO_KEYS:
            v = source.get(k)
            if v in (None, "") or (k == "video_id" and _NUMERIC_VIDEO_ID.match(str(v))):
                continue
            return str(v)
    return None


def _item_key(path: Path, n: int, payload: dict, doc: dict, sample: dict, task: str | None, word: str) -> str:
    for source in (payload, doc):
        for k in KEY_FIELDS:
            if source.get(k) not in (None, ""):
                return str(source[k])
    if doc.get("video") and doc.get("question"):
        digest = hashlib.sha1(str(doc["question"]).encode()).hexdigest()[:8]
        return f"{task}/{doc['video']}#{digest}"
    if "doc_id" in sample and task:
        return f"{task}/{sample['doc_id']}"
    raise fail(path, "no item id: the metric payload has no question_id/id and there is no doc_id", n, word)


def _key_note(payload_key: str | None, payload: dict) -> str:
    if not any(k in payload for k in KEY_FIELDS):
        return (
            "composed: <task>/<video>#<sha1(question)[:8]> from the sample's doc, else <task>/<doc_id> "
            "(the log carries no question id; doc_id restarts across sharded runs)"
        )
    return f"question_id/id from the {payload_key} payload"


# -- harness settings ----------------------------------------------------------------------------
def _task_name(path: Path) -> str | None:
    m = _SAMPLES_NAME.match(path.name)
    if m:
        return m["task"]
    return path.stem if path.suffix.lower() == ".json" else None


def _results_file(path: Path) -> Path | None:
    """The run's results file: the one sharing the samples file's stamp (``<stamp>_results.json``, or a
    suffixed ``<stamp>_results_aks.json`` as patched harnesses write it), else the folder's only
    ``*_results*.json``. Two files with the stamp are refused: picking one would pick a budget."""
    m = _SAMPLES_NAME.match(path.name)
    if m:
        exact = path.parent / f"{m['stamp']}_results.json"
        if exact.is_file():
            return exact
        stamped = sorted(path.parent.glob(f"{m['stamp']}_results*.json"))
        if len(stamped) > 1:
            raise fail(
                path, f"several results files share its stamp ({', '.join(p.name for p in stamped)}); pass --config"
            )
        if stamped:
            return stamped[0]
    siblings = sorted(path.parent.glob("*_results*.json"))
    return siblings[0] if len(siblings) == 1 else None


def parse_model_args(text: object) -> dict[str, str]:
    """lmms-eval's comma-joined ``k=v`` string (or an already parsed dict) -> dict."""
    if isinstance(text, dict):
        return {str(k): str(v) for k, v in text.items()}
    if not isinstance(text, str):
        return {}
    pairs = (p.split("=", 1) for p in text.split(",") if "=" in p)
    return {k.strip(): v.strip() for k, v in pairs}


def _harness_settings(path: Path, top: dict) -> tuple[Path | None, dict]:
    """What the harness says about the run: model, model_args (parsed), versions."""
    results_file = None if top else _results_file(path)
    cfg: dict[str, Any]
    if top:
        args = given if isinstance(given := top.get("args"), dict) else {}
        cfg = {"model": args.get("model"), "model_args": args.get("model_args")}
        model_args = parse_model_args(args.get("model_args"))
        if isinstance(top.get("model_configs"), dict):
            model_args = {**parse_model_args(top["model_configs"]), **model_args}
        extra = {}
    elif results_file:
        res = load_json(results_file, read_text_bytes(results_file).decode("utf-8"), constants=True)
        res = res if isinstance(res, dict) else {}
        cfg = given if isinstance(given := res.get("config"), dict) else {}
        model_args = parse_model_args(cfg.get("model_args"))
        extra = {k: res[k] for k in ("model_name", "lmms_eval_version", "git_hash", "date") if k in res}
    else:
        return None, {}
    keep = {k: v for k, v in cfg.items() if isinstance(v, (str, int, float, bool)) or v is None}
    return results_file, {**keep, **extra, "model_args": model_args}


def config_from_model_args(model_args: dict[str, str]) -> str | None:
    """The budget label from the model's arguments; None when they say nothing about it.

    ``fps`` without a frame count cannot be a label (the count varies with video length), so it
    raises ValueError and the caller asks for ``--config``.
    """
    frames = next((model_args[k] for k in FRAME_KEYS if k in model_args), None)
    fps = model_args.get("fps")
    max_pixels = model_args.get("max_pixels")
    if frames is None:
        if fps is not None or max_pixels is not None:
            raise ValueError(f"fps={fps} / max_pixels={max_pixels} without a frame count")
        return None
    pixels_k = float(max_pixels) / 1000 if max_pixels else None
    policy = f"fps-{float(fps):g}" if fps else None
    return configs.make_label(int(float(frames)), pixels_k, policy)


def _config(path: Path, harness: dict) -> tuple[str, str | None]:
    """(label, how it was inferred when not from the harness): the harness's settings, else a
    budget the file's or folder's name states unambiguously."""
    try:
        label = config_from_model_args(harness.get("model_args", {}))
    except (ValueError, configs.ConfigLabelError) as exc:
        raise fail(
            path, f"the harness settings do not fix the visual budget ({exc}); pass --config, e.g. --config 32f"
        ) from None
    if label is not None:
        return label, None
    hint = budget_hint(path)
    if hint is None:
        where = (
            "its harness settings name no frame count"
            if harness
            else "no results file beside it shares its stamp (<stamp>_results*.json)"
        )
        raise fail(
            path,
            f"cannot tell the visual budget ({where}, and the file and folder names state no single budget like "
            "16f); pass --config, e.g. --config 16f",
        )
    return hint[0], f"config {hint[0]} from {hint[1]}"


def _given_config(path: Path, harness: dict, results_file: Path | None, opts: IngestOptions) -> tuple[str, str | None]:
    """``--config`` checked against the budget the harness logged (``common.given_config``)."""
    model_args = harness.get("model_args", {})
    try:
        logged = config_from_model_args(model_args)
    except (ValueError, configs.ConfigLabelError):
        logged = None  # the settings fix no budget: --config is what names it
    key = next((f"{k}={model_args[k]}" for k in FRAME_KEYS if k in model_args), "")
    source = f"{results_file.name if results_file else 'its log'} ({key})" if key else "its harness"
    return given_config(path, opts, logged, source)


def _model(path: Path, harness: dict) -> str:
    pretrained = harness.get("model_args", {}).get("pretrained")
    if pretrained:
        return pretrained.rstrip("/").split("/")[-1]
    if harness.get("model_name") or harness.get("model"):
        return str(harness.get("model_name") or harness.get("model"))
    if _SAMPLES_NAME.match(path.name):
        # lmms-eval writes <out>/<model>/<stamp>_samples_<task>.jsonl, the model's path with "/" as "__": a
        # relative checkpoint path's leading ``..__`` names no model
        return re.sub(r"^(?:\.{1,2}__)+", "", path.parent.name) or path.parent.name
    raise fail(path, "cannot tell the model (no results.json beside the file); pass --model")


def _benchmark(path: Path, payload_key: str | None, task: str | None) -> str:
    if payload_key in PAYLOADS:
        return PAYLOADS[payload_key]
    for prefix, bench in TASK_PREFIXES.items():
        if task and task.lower().startswith(prefix):
            return bench
    raise fail(path, f"cannot tell the benchmark from task {task!r} / payload {payload_key!r}; pass --benchmark")
