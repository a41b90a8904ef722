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


def test_drift_trace_runs_each_reuse_alone_and_finds_no_drift_in_float32(tmp_path):
    from benchmarks.gpu_drift_trace import main

    out = main(["--device", "cpu", "--family", "llava_next_video", "--grid", "text,4f", "--rounds", "1",
                "--workdir", str(tmp_path)])  # fmt: skip
    rows = [line.split(" | ") for line in out.splitlines()[1:-1]]
    assert [row[0] for row in rows] == [
        "none",
        "decode",
        "prefix",
        "vision",
        "all",
        *(f"all but {n}" for n in ("decode", "prefix", "vision")),
    ]
    assert all(row[2] == "0" for row in rows)  # float32 on the CPU: every reuse gives the cold answer
    assert out.splitlines()[-1].endswith("bit-equal: True")
