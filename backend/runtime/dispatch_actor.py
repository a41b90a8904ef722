"""What runs on a cluster node for the dispatcher: one model, loaded once, answering jobs it is handed.

The actor never sees the store: it is given the model's registry entry, the checkpoint's path on its
node, a device, and optionally the node's video root; each job arrives as a :class:`Payload` (the
item's fields, the configuration, the seed, the logged frame indices when the label replays them,
and, when the dispatcher ships frames, the decoded frames themselves). It returns the answer
(:class:`~backend.runtime.inference.cell.ColdCell`); the dispatcher builds and appends the rows, so
the store keeps one writer. Imports no Ray (the dispatcher wraps the class with ``ray.remote``) and
no torch at import time (the model's libraries load in :meth:`ModelActor.load`).

Video root on the node: the ``video_root`` the actor was started with, else ``$TRAJAUDIT_VIDEO_ROOT`` in
the node's environment; the item's video is resolved under it by the catalog's relative path.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from backend.runtime.inference.base import Adapter
from backend.runtime.inference.cell import ColdCell, Shown, answer_shown, read_frames
from backend.runtime.inference.records import ModelContext, library_versions
from backend.videos.decode import VIDEO_ROOT_ENV
from store.configs import parse
from store.errors import UserError
from store.registry import ModelSpec


@dataclass(frozen=True)
class Payload:
    """One job as an actor receives it: everything :func:`answer_shown` needs, nothing of the store."""

    job_id: int
    item: dict[str, Any]  # the items row (plain values; ``video`` is the catalog's path relative to a video root)
    config: str
    seed: int | None
    given: np.ndarray | None  # a ``logged`` label's frame indices
    default_pixels: int | None
    shown: Shown | None  # frames decoded by the dispatcher (None: the actor reads the video on its node)

    def describe(self) -> str:
        """The payload without its pixels (what an audit of an actor's arguments reads)."""
        frames = "none" if self.shown is None else f"{self.shown.nbytes} bytes of frames"
        return f"job {self.job_id}: item {self.item!r}, config {self.config!r}, seed {self.seed!r}, {frames}"


@dataclass(frozen=True)
class ActorInfo:
    """Where an actor runs and what it loaded: the Workers page's row and every answer's provenance."""

    node_id: str
    node_ip: str
    hostname: str
    pid: int
    gpu_ids: list[str]
    gpu: str | None  # the GPU's name (None: the actor runs on a CPU)
    context: ModelContext


class ModelActor:
    """One registered model on one node (wrapped by ``ray.remote`` in :mod:`backend.runtime.dispatch`)."""

    def __init__(self, spec: ModelSpec, checkpoint: str, device: str = "auto", video_root: str | None = None):
        self.spec, self.checkpoint, self.device = spec, Path(checkpoint), device
        env_root = os.environ.get(VIDEO_ROOT_ENV)
        self.video_root = video_root or env_root
        self.adapter: Adapter | None = None
        self._received = [f"spec {spec!r}, checkpoint {checkpoint!r}, device {device!r}, video_root {video_root!r}"]

    def load(self) -> ActorInfo:
        """Load the checkpoint (raises with the library's reason when it cannot); where this actor runs."""
        import ray

        from backend.runtime.inference.base import checkpoint_fingerprint
        from backend.runtime.worker import load_registered_adapter, resolve_device, resolve_dtype

        if not self.checkpoint.exists():
            raise UserError(
                f"model {self.spec.name!r}: checkpoint {self.checkpoint} is not on node {socket.gethostname()}"
            )
        device = resolve_device(self.spec.device if self.device == "auto" else self.device)
        dtype = resolve_dtype(self.spec.dtype, device)
        fingerprint = checkpoint_fingerprint(self.checkpoint)
        self.adapter = load_registered_adapter(self.spec, self.checkpoint, device, dtype)
        context = ModelContext(
            self.spec.name, self.spec.family, str(self.checkpoint), fingerprint, library_versions(), device, dtype
        )
        gpu = None
        if device == "cuda":
            import torch

            gpu = torch.cuda.get_device_name(torch.cuda.current_device())
        runtime = ray.get_runtime_context()
        return ActorInfo(
            node_id=runtime.get_node_id(),
            node_ip=ray.util.get_node_ip_address(),
            hostname=socket.gethostname(),
            pid=os.getpid(),
            gpu_ids=[str(g) for g in ray.get_gpu_ids()],
            gpu=gpu,
            context=context,
        )

    def answer(self, payload: Payload) -> ColdCell:
        """Answer one job: the shipped frames, or the item's video read under this node's video root."""
        if self.adapter is None:
            raise UserError("the actor's model is not loaded (load() first)")
        self._received.append(payload.describe())
        cfg = parse(payload.config)
        shown = payload.shown
        if shown is not None and shown.frames is not None and not shown.frames.flags.writeable:
            # shipped frames arrive read-only (Ray's zero-copy arrays); the processors hand them to torch
            shown = replace(shown, frames=shown.frames.copy())
        if shown is None:
            if self.video_root is None and not cfg.is_text:
                raise UserError(
                    f"node {socket.gethostname()} has no video root: start the dispatcher with --video-root "
                    f"(the videos' folder on the nodes), set {VIDEO_ROOT_ENV} on the node, or ship frames (--videos ship)"
                )
            shown = read_frames(payload.item, cfg, self.video_root or "", payload.seed, payload.given)
        return answer_shown(self.adapter, payload.item, cfg, shown, payload.default_pixels)

    def received(self) -> list[str]:
        """What this actor was given: its start arguments, then each job without its pixels (an audit:
        the store's path is never among them)."""
        return list(self._received)
