"""The model registry as the store keeps it: ``<store>/models.toml``, read-only.

Readers of a store need it (the scope caps a default grid at a model's context ceiling; the
inspector marks a live re-run with its model's note; iso-compute reads a model's default
resolution), so it lives beside the store's other files; registering a model, which checks the
family and checkpoint a worker would load, is ``backend.runtime.registry``'s.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated

from store.contract import Contract, doc
from store.errors import UserError
from store.paths import outside_reason

REGISTRY_FILE = "models.toml"
DEFAULT_MAX_FRAMES = 64


class ModelSpec(Contract):
    """A registered model (``models list --json`` prints each, ``models add|remove|demo`` the one)."""

    name: Annotated[str, doc("the name workers and re-runs use")]
    family: Annotated[str, doc("the adapter family (qwen2_5_vl, ...)")]
    path: Annotated[str, doc("the local checkpoint folder (absolute, or relative to the store)")]
    dtype: Annotated[str, doc("auto or a torch dtype name")] = "auto"
    device: Annotated[str, doc("auto, cuda or cpu")] = "auto"
    max_frames: Annotated[int, doc("the largest frame budget accepted (the context ceiling)")] = DEFAULT_MAX_FRAMES
    default_pixels: Annotated[
        int | None, doc("pixels per frame for labels without @<n>k (null: the processor's default)")
    ] = None
    note: Annotated[str, doc("free text")] = ""

    def resolved_path(self, store_root: str | os.PathLike) -> Path:
        """The checkpoint folder. An absolute path is the registering user's explicit choice (real
        checkpoints live outside stores); a relative one must stay inside the store, so the registry
        of a copied store cannot reach elsewhere with ``..`` or a link (UserError otherwise)."""
        if Path(self.path).is_absolute():
            return Path(self.path).resolve()
        reason = outside_reason(store_root, self.path)
        if reason:
            raise UserError(
                f"model {self.name!r}: checkpoint path {self.path!r} leaves the store ({reason}); "
                "register an absolute path if the checkpoint really lives elsewhere"
            )
        return (Path(store_root) / self.path).resolve()


def registry_path(store_root: str | os.PathLike) -> Path:
    return Path(store_root) / REGISTRY_FILE


def load(store_root: str | os.PathLike) -> dict[str, ModelSpec]:
    """Every registered model by name ({} when there is no registry yet)."""
    path = registry_path(store_root)
    if not path.exists():
        return {}
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from exc
    known = set(ModelSpec.__struct_fields__) - {"name"}
    out = {}
    for name, entry in raw.get("models", {}).items():
        unknown = set(entry) - known
        if unknown:
            raise UserError(f"{path}: model {name!r} has unknown keys {sorted(unknown)}")
        try:
            out[name] = ModelSpec(name=name, **entry)
        except TypeError as exc:
            raise UserError(f"{path}: model {name!r}: {exc}") from exc
    return out


def get(store_root: str | os.PathLike, name: str) -> ModelSpec:
    models = load(store_root)
    if name not in models:
        known = ", ".join(sorted(models)) or "none registered (trajaudit models add NAME --family F --path P)"
        raise UserError(f"unknown model {name!r}; registered models: {known}")
    return models[name]


def default_pixels(store_root: str | os.PathLike, model: str) -> int | None:
    """The model's registered ``default_pixels`` (what iso-compute places unlabelled resolutions at); None when unknown."""
    spec = load(store_root).get(model)
    return None if spec is None else spec.default_pixels
