"""The one-shot GPU check script in its CPU smoke mode: tiny checkpoints, one family, one table."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning"), pytest.mark.slow, pytest.mark.worker]


def test_gpu_check_smoke_mode_prints_one_row_per_family(tmp_path, capsys):
    from benchmarks.gpu_check import COLUMNS, main

    out = main(
        [
            "--device",
            "cpu",
            "--families",
            "llava_next_video",
            "--frames",
            "4",
            "--grid",
            "text,4f",
            "--workdir",
            str(tmp_path),
        ]
    )
    header, _, row = out.splitlines()
    assert header.split(" | ") == [name for name, _ in COLUMNS]
    cells = [c.strip() for c in row.split(" | ")]
    assert cells[0] == "llava_next_video"
    assert cells[[n for n, _ in COLUMNS].index("sweep_drift")] == "0"
    assert cells[-1] == "-"  # no GPU memory on the CPU
