"""Where the dashboard reads its data: the store folders and the video root, fixed when the server starts.

Links are shared with colleagues, so nothing in a URL may point the server at a folder: the stores and
the video root come from the operator, and a URL may only pick one of the configured stores by name
(``?db=NAME``). Sources, highest precedence first (the first source that names any store wins; the
same for the video root):

1. the dashboard's command line: ``streamlit run app.py -- --store DIR [--store NAME=DIR ...]
   [--video-root DIR] [--config FILE]``;
2. the environment: ``$TRAJAUDIT_STORE`` (the default store), ``$TRAJAUDIT_STORES``
   (``NAME=DIR,NAME=DIR``, more stores), ``$TRAJAUDIT_VIDEO_ROOT``, ``$TRAJAUDIT_CONFIG`` (a file);
3. a TOML file (``--config`` or ``$TRAJAUDIT_CONFIG``): ``video_root = "DIR"`` and a ``[stores]``
   table of ``NAME = "DIR"`` (relative paths are relative to the file);
4. the built-in default: ``./trajaudit-data``, its videos under ``<store>/videos``.

The first store listed is the default one: the only one the dashboard may build the demo store in.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from backend.videos.decode import VIDEO_ROOT_ENV, default_video_root
from store.errors import UserError
from store.store import resolve_root

STORE_ENV = "TRAJAUDIT_STORE"
STORES_ENV = "TRAJAUDIT_STORES"
CONFIG_ENV = "TRAJAUDIT_CONFIG"
ENTRY_SCRIPT = "app.py"  # `streamlit run app.py -- ARGS` hands ARGS to the script as sys.argv[1:]
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class ServerConfig:
    """The configured stores (name -> folder, the default first) and the video root (None: per store)."""

    stores: dict[str, Path]
    video_root: Path | None = None

    @property
    def default(self) -> str:
        return next(iter(self.stores))

    def video_root_for(self, store_root: str | os.PathLike) -> Path:
        """The folder items' video paths are relative to: the configured root, else ``<store>/videos``."""
        return self.video_root if self.video_root is not None else default_video_root(store_root)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit the server
        raise UserError(
            f"dashboard arguments: {message} (expected --store [NAME=]DIR, --video-root DIR, --config FILE)"
        )


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="streamlit run app.py --", add_help=False, allow_abbrev=False)
    p.add_argument("--store", action="append", default=[], metavar="[NAME=]DIR")
    p.add_argument("--video-root", metavar="DIR")
    p.add_argument("--config", metavar="FILE")
    return p


def _named(specs: list[str], where: str, base: Path | None = None) -> dict[str, Path]:
    """``[NAME=]DIR`` entries as name -> resolved folder; an unnamed folder is named after itself."""
    out: dict[str, Path] = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or not _NAME.fullmatch(name):
            name, folder = "", spec
        if not folder.strip():
            raise UserError(f"{where}: store {spec!r} names no folder")
        path = Path(folder).expanduser()
        path = ((base / path) if base is not None and not path.is_absolute() else path).resolve()
        if not name:
            stem = re.sub(r"[^A-Za-z0-9_.-]", "_", path.name).lstrip("_.-") or "store"
            name, k = stem[:60], 2
            while name in out:
                name, k = f"{stem[:60]}-{k}", k + 1
        if name in out:
            raise UserError(f"{where}: two stores are named {name!r}; give each a distinct NAME=DIR")
        out[name] = path
    return out


def _read_file(path: str) -> tuple[dict[str, Path], Path | None]:
    file = Path(path).expanduser()
    try:
        raw = tomllib.loads(file.read_text())
    except OSError as exc:
        raise UserError(f"config file {file}: cannot read it ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"config file {file}: not valid TOML ({exc})") from None
    stores, root = raw.get("stores", {}), raw.get("video_root")
    if not isinstance(stores, dict) or not all(isinstance(v, str) for v in stores.values()):
        raise UserError(f'config file {file}: [stores] must map names to folders (NAME = "DIR")')
    if root is not None and not isinstance(root, str):
        raise UserError(f'config file {file}: video_root must be a folder (video_root = "DIR")')
    bad = [n for n in stores if not _NAME.fullmatch(n)]
    if bad:
        raise UserError(f"config file {file}: store name {bad[0]!r} must be letters, digits, '_', '.' or '-'")
    base = file.resolve().parent
    video_root = None if root is None else (base / Path(root).expanduser()).resolve()
    return _named([f"{n}={d}" for n, d in stores.items()], f"config file {file}", base), video_root


def load(argv: list[str], env: dict[str, str]) -> ServerConfig:
    """The configuration from the dashboard's arguments and environment (``UserError`` when malformed)."""
    args = _parser().parse_args(argv)
    config_file = args.config or env.get(CONFIG_ENV)
    file_stores, file_root = _read_file(config_file) if config_file else ({}, None)
    env_specs = ([env[STORE_ENV]] if env.get(STORE_ENV) else []) + [
        s for s in env.get(STORES_ENV, "").split(",") if s.strip()
    ]
    stores = (
        _named(args.store, "--store")
        or _named(env_specs, f"${STORE_ENV} / ${STORES_ENV}")
        or file_stores
        or _named([str(resolve_root(None))], "default store")
    )
    root = args.video_root or env.get(VIDEO_ROOT_ENV)
    video_root = Path(root).expanduser().resolve() if root else file_root
    return ServerConfig(stores, video_root)


@lru_cache(maxsize=8)
def _cached(argv: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> ServerConfig:
    return load(list(argv), dict(env))


def dashboard_argv() -> list[str]:
    """The arguments given after ``--`` to ``streamlit run app.py`` (none when something else runs the app, e.g. tests)."""
    return sys.argv[1:] if Path(sys.argv[0]).name == ENTRY_SCRIPT else []


def current() -> ServerConfig:
    """This server's configuration, read once per distinct command line and environment.

    A video root set on the command line or in the file is exported as ``$TRAJAUDIT_VIDEO_ROOT``,
    so the re-run checks and the workers the dashboard starts decode from the same root.
    """
    keys = (STORE_ENV, STORES_ENV, VIDEO_ROOT_ENV, CONFIG_ENV)
    config = _cached(tuple(dashboard_argv()), tuple((k, os.environ[k]) for k in keys if k in os.environ))
    if config.video_root is not None:
        os.environ[VIDEO_ROOT_ENV] = str(config.video_root)
    return config
