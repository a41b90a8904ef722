"""A re-run on a broken checkpoint, in the running dashboard: one line with the reason and the worker log (issue 25, case 11).

The demo store's random-weights model gets a garbage weights file; Run in the Inspector starts a
local worker, which cannot load the model, fails the job and exits. The panel must say so in one
line that names the worker log, never the raw traceback. Screenshot:
``test-artifacts/screenshots/inspector-rerun-broken-checkpoint.png``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.register_assert_rewrite("tests.browser_fixtures")  # imported here before pytest loads it as a plugin
from tests.browser_fixtures import (
    Server,
    build_small_demo,
    goto,
    press_run,
    require_chromium,
    rerun_panel,
    screenshot,
    serving,
    wait_idle,
)

pytest_plugins = ["tests.browser_fixtures"]  # the browser and page fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.worker]  # a real worker loads a model

BASE = "bench=synthetic-videomme&models=synthetic-A-7B,synthetic-B-13B&model=synthetic-A-7B"
FAIL_TIMEOUT_MS = 150_000  # a local CPU worker starts (imports torch), then fails to load the weights


@pytest.fixture(scope="module")
def broken_server(tmp_path_factory) -> Iterator[Server]:
    """The demo store with its re-run model's weights replaced by garbage, served by ``streamlit run``."""
    require_chromium()
    from backend.demo.model import DEMO_MODEL
    from backend.runtime import registry

    base = tmp_path_factory.mktemp("broken")
    store = build_small_demo(base / "store")
    (weights,) = registry.get(store, DEMO_MODEL).resolved_path(store).glob("*.safetensors")
    weights.write_bytes(b"\x00not a safetensors file" * 64)
    with serving(store, base / "streamlit.log") as server:
        yield server


def test_a_rerun_on_a_broken_checkpoint_shows_one_line_and_the_log(broken_server, page):
    goto(page, broken_server, f"inspector?{BASE}")
    press_run(page, 24)  # a budget the demo grid lacks: the request is queued, not answered from the store
    page.wait_for_function(
        "() => /Job \\d+ \\(24f\\) failed:/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
        timeout=FAIL_TIMEOUT_MS,
    )
    wait_idle(page)
    panel = rerun_panel(page)
    alert = panel.locator('[data-testid="stAlert"]').filter(has_text="failed:")
    assert alert.count() == 1
    text = alert.locator('[data-testid="stMarkdownContainer"]').inner_text().strip()  # the message, not its icon
    log = broken_server.store / "logs" / "worker-synthetic-A-7B.log"
    assert "\n" not in text, text  # one line
    assert "cannot be loaded from" in text and "SafetensorError" in text
    assert text.endswith(f"worker log: {log}"), text
    assert panel.locator('[data-testid="stCode"]').count() == 0  # no raw log block
    assert "Traceback" not in panel.inner_text() and "Traceback" in log.read_text()  # the traceback stays in the log
    path = screenshot(page, "inspector-rerun-broken-checkpoint")
    assert path.is_file()
