"""Browser-test plumbing: a small demo store, a Streamlit server on a free port, headless Chromium.

The server is the real ``streamlit run app.py`` (the way users start it), pointed at a demo store
built once per session in a temp folder; pages are driven with Playwright's sync API in Debian's
Chromium (Playwright cannot download its own browser here).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
DEMO_ITEMS = 48  # 16 short videos: a demo store in a few seconds
STARTUP_TIMEOUT_S = 90
RENDER_TIMEOUT_MS = 90_000
RERUN_PANEL = "Re-run this item"  # the heading of the Inspector's re-run panel


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    store: Path
    process: subprocess.Popen
    log: Path


def build_small_demo(root: Path) -> Path:
    """The demo store with its random-weights re-run model (backend.demo.model), as a fresh install has it."""
    from backend.demo.model import build_demo_store

    build_demo_store(root, n_items=DEMO_ITEMS, seed=0)
    return root


def start_server(store: Path, log: Path, env_extra: dict[str, str] | None = None) -> Server:
    port = free_port()
    env = (
        os.environ
        | {"TRAJAUDIT_STORE": str(store), "TRAJAUDIT_THUMB_CACHE": str(store.parent / "thumbs")}
        | (env_extra or {})
    )
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200:
                    return Server(url, store, proc, log)
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"streamlit did not answer within {STARTUP_TIMEOUT_S} s:\n{log.read_text()}")


def stop_server(server: Server) -> None:
    """Stop streamlit and the detached workers it started for re-runs (they outlive it otherwise)."""
    from backend.runtime.worker_pool import stop_local_workers

    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
    stop_local_workers(server.store)


@contextmanager
def serving(store: Path, log: Path, env_extra: dict[str, str] | None = None) -> Iterator[Server]:
    """``start_server`` for the block, ``stop_server`` however it ends (a fixture yields inside it)."""
    server = start_server(store, log, env_extra)
    try:
        yield server
    finally:
        stop_server(server)


def require_chromium() -> None:
    """Skip, saying why, where Debian's Chromium is not installed."""
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (tests/run.sh installs it with apt)")


@pytest.fixture(scope="session")
def app_server(tmp_path_factory) -> Iterator[Server]:
    require_chromium()
    base = tmp_path_factory.mktemp("browser")
    store = build_small_demo(base / "store")
    small = {"TRAJAUDIT_DEMO_ITEMS": "8"}  # a demo built on request stays small
    with serving(store, base / "streamlit.log", small) as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is a test extra (pip install -e '.[test]')"
    )
    require_chromium()
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    p = context.new_page()
    p.set_default_timeout(RENDER_TIMEOUT_MS)
    yield p
    context.close()


_IDLE_PARTS = """{
    script: document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state'),
    running_icon: !!document.querySelector('[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]'),
    skeleton: !!document.querySelector('[data-testid="stSkeleton"]'),
    title: !!document.querySelector('[data-testid="stMain"] h1'),
}"""


def wait_idle(page, timeout_ms: int = RENDER_TIMEOUT_MS) -> None:
    """Wait until the script run finished and the page drew (no running state, no lazy-loading skeletons).

    On a timeout the failure names which of those conditions still held, the URL and the page's text, so a
    hang seen only in CI says where it hung."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    try:
        page.wait_for_function(
            f"""() => {{
                const s = {_IDLE_PARTS};
                return s.script !== 'running' && !s.running_icon && !s.skeleton && s.title;
            }}""",
            timeout=timeout_ms,
        )
    except PlaywrightTimeout as exc:
        seen = page.evaluate(f"() => ({_IDLE_PARTS})")
        text = page.locator('[data-testid="stMain"]').inner_text()[:1500]
        raise AssertionError(f"page not idle after {timeout_ms} ms at {page.url}: {seen}\n{text}") from exc
    page.wait_for_timeout(800)  # let Plotly and images paint


def goto(page, server, path: str) -> None:
    """Open ``path`` on the server, wait until it drew, and fail with the page's exception if it raised one."""
    page.goto(f"{server.url}/{path}")
    wait_idle(page)
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()


def sidebar_popover(page, label: str):
    """Open the sidebar's popover whose button starts with ``label`` ("Filter items", "Options") and return its
    body: Streamlit draws it in a layer of its own, outside the sidebar, and only while it is open."""
    page.locator('[data-testid="stSidebar"] [data-testid="stPopoverButton"]').filter(has_text=label).click()
    body = page.locator('[data-testid="stPopoverBody"]')
    body.wait_for()
    return body


def rerun_panel(page):
    """The Inspector's re-run panel: the bordered block under its heading."""
    heading = page.locator("h3", has_text=RERUN_PANEL)
    return page.locator('[data-testid="stVerticalBlock"]').filter(has=heading).last


def press_run(page, frames: int) -> None:
    """In the Inspector's re-run panel: set Frames to ``frames`` (the other fields as they are), then press Run."""
    box = rerun_panel(page).locator('[data-testid="stNumberInput"]').filter(has_text="Frames").locator("input")
    box.scroll_into_view_if_needed()
    box.fill(str(frames))
    box.press("Enter")
    wait_idle(page)
    assert box.input_value() == str(frames)
    page.get_by_role("button", name="Run", exact=True).click()


def screenshot(page, name: str) -> Path:
    """The whole page: Streamlit scrolls inside its main area, so the viewport grows to fit it first."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate(
        """() => { const m = document.querySelector('[data-testid="stMain"]');
                   return Math.max(document.body.scrollHeight, m ? m.scrollHeight : 0); }"""
    )
    page.set_viewport_size({"width": size["width"], "height": min(max(size["height"], height), 6000)})
    page.wait_for_timeout(600)  # charts re-layout to the new size
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path
