"""The model registry as the store keeps it: ``<store>/models.toml``, read-only.

Readers of a store need it (the scope caps a default grid at a model's context ceiling; the
inspector marks a live re-run with its model's note; iso-compute reads a model's default
resolution), so it lives beside the store's other files; registering a model, which checks the
family and checkpoint a worker would load, is ``backend.runtime.registry``'s.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from store.errors import UserError
from store.paths import outside_reason

REGISTRY_FILE = "models.toml"
DEFAULT_MAX_FRAMES = 64


@dataclass(frozen=True)
class ModelSpec:
    """One registered model."""

    name: str
    family: str
    path: str  # absolute, or relative to the store folder
    dtype: str = "auto"
    device: str = "auto"
    max_frames: int = DEFAULT_MAX_FRAMES  # context ceiling: the largest frame budget accepted
    default_pixels: int | None = None  # pixels per frame for labels without a spatial part; None = the processor's
    note: str = ""

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

    def to_dict(self) -> dict:
        return asdict(self)


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
    known = {f.name for f in fields(ModelSpec)} - {"name"}
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
