"""The model registry: ``<store>/models.toml``, the local checkpoints a worker may load.

Re-runs name a model; the registry says which adapter family loads it, from which local path
(nothing is ever downloaded), with which dtype and device, and the model's context ceiling
(``max_frames``) and default resolution (``default_pixels``), which the re-run form validates
against before anything is queued. TOML because people edit it by hand; it is read by
``store.registry`` (readers of a store need it too) and written by the small writer below, through a temporary file and ``os.replace`` so
a reader never sees half a file. Relative paths are relative to the store folder (the demo model
lives under ``<store>/models/``), so a store can be moved.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from msgspec.structs import asdict

from backend.extras import require_worker_extra
from backend.runtime.inference import base as inference
from store.errors import UserError
from store.paths import write_atomic
from store.registry import DEFAULT_MAX_FRAMES, ModelSpec, get, load, registry_path

FAMILIES = inference.FAMILIES
DTYPES = ("auto", *inference.DTYPES)  # auto: bfloat16 on a GPU, float32 on the CPU
DEVICES = ("auto", "cuda", "cpu")
DEMO_NOTE = "random weights: pipeline demo"


def _check(spec: ModelSpec, store_root: str | os.PathLike) -> None:
    """Refuse a spec a worker could not load or a request could not be checked against."""
    where = f"model {spec.name!r}"
    if not spec.name.strip():
        raise UserError("a model needs a non-empty name")
    if spec.family not in FAMILIES:
        raise UserError(f"{where}: unknown family {spec.family!r}; known families: {', '.join(FAMILIES)}")
    if spec.dtype not in DTYPES:
        raise UserError(f"{where}: unknown dtype {spec.dtype!r}; expected one of {', '.join(DTYPES)}")
    if spec.device not in DEVICES:
        raise UserError(f"{where}: unknown device {spec.device!r}; expected one of {', '.join(DEVICES)}")
    if not isinstance(spec.max_frames, int) or spec.max_frames < 1:
        raise UserError(f"{where}: max_frames must be a positive integer (got {spec.max_frames!r})")
    if spec.default_pixels is not None and (not isinstance(spec.default_pixels, int) or spec.default_pixels < 1):
        raise UserError(f"{where}: default_pixels must be a positive integer (got {spec.default_pixels!r})")
    if not spec.resolved_path(store_root).exists():
        raise UserError(f"{where}: checkpoint path {spec.path!r} does not exist")


def _toml_str(value: str) -> str:
    """A TOML basic string. JSON's escapes are a subset of TOML's; DEL must be escaped too."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007F")


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _toml_str(str(value))


def dumps(models: dict[str, ModelSpec]) -> str:
    """The registry as TOML: one ``[models."<name>"]`` table per model; None values are left out."""
    parts = ["# trajaudit model registry (trajaudit models add/list/remove)\n"]
    for name in sorted(models):
        entry = {k: v for k, v in asdict(models[name]).items() if k != "name" and v is not None}
        body = "".join(f"{k} = {_toml_value(v)}\n" for k, v in entry.items())
        parts.append(f"\n[models.{_toml_str(name)}]\n{body}")
    return "".join(parts)


def _save(store_root: str | os.PathLike, models: dict[str, ModelSpec]) -> None:
    path = registry_path(store_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dumps(models))


def list_models(store_root: str | os.PathLike) -> list[ModelSpec]:
    return [spec for _, spec in sorted(load(store_root).items())]


def add(store_root: str | os.PathLike, spec: ModelSpec, replace: bool = False) -> ModelSpec:
    """Register a model (checked first); an existing name is refused unless ``replace``."""
    _check(spec, store_root)
    models = load(store_root)
    if spec.name in models and not replace:
        raise UserError(f"model {spec.name!r} is already registered (remove it first)")
    models[spec.name] = spec
    _save(store_root, models)
    return spec


def remove(store_root: str | os.PathLike, name: str) -> ModelSpec:
    models = load(store_root)
    spec = get(store_root, name)
    del models[name]
    _save(store_root, models)
    return spec


def register_demo_model(
    store_root: str | os.PathLike, name: str, family: str = "qwen2_5_vl", max_frames: int = DEFAULT_MAX_FRAMES
) -> ModelSpec:
    """Build a tiny randomly initialised model of ``family`` under ``<store>/models/<name>`` and register it.

    Its answers are noise, but noise that depends on the frames it is fed (``tiny.DEMO_INIT_SCALE``), so a
    re-run under another budget or policy can move an item's trajectory; it exists so the whole re-run
    pipeline (queue, worker, decode, adapter, store write) runs on any machine without a checkpoint.
    ``max_frames`` is the ceiling the registry accepts (a demo store's grid may go past the default).
    """
    require_worker_extra("building a demo model")
    from backend.runtime.inference.tiny import (  # torch: only imported when a demo model is built
        DEMO_INIT_SCALE,
        build_tiny,
    )

    if family not in FAMILIES:
        raise UserError(f"unknown family {family!r}; known families: {', '.join(FAMILIES)}")
    rel = Path("models") / name
    build_tiny(family, Path(store_root) / rel, init_scale=DEMO_INIT_SCALE)
    spec = ModelSpec(name=name, family=family, path=str(rel), dtype="float32", max_frames=max_frames, note=DEMO_NOTE)
    return add(store_root, spec, replace=True)
