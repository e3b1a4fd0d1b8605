"""Ctrl-C and SIGTERM during a cell: checkpoint, no kernel left, exit 130/143, resume completes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BCC, ROOT, run_bcc
from tests.faults.test_kill_resume import _alive, _children, _wait


def _big(tmp: Path) -> tuple[Path, Path]:
    problem = tmp / "problem.md"
    problem.write_text("---\ntarget: y\ntask: regression\n---\nPredict `y`.\n")
    lines = ["a,b,c,d,e,y"]
    for i in range(40_000):
        a, b, c, d = i % 97, (i * 7) % 89, (i * 13) % 83, (i * 31) % 79
        lines.append(f"{a},{b},{c},{d},{'pq'[i % 2]},{a * 0.5 - b * 0.2 + c * 0.1 + (d % 5)}")
    data = tmp / "big.csv"
    data.write_text("\n".join(lines) + "\n")
    return problem, data


def _in_model_cell(run: Path) -> bool:
    try:
        state = json.loads((run / "state.json").read_text())
    except (OSError, ValueError):
        return False
    return (
        state["fsm_state"] == "BEHAVIOR_RUNNING" and "model_selection" in state["location"]["path"]
    )


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_a_cell_checkpoints_and_resume_completes(sig, code, tmp_path: Path):
    problem, data = _big(tmp_path)
    run = tmp_path / "run"
    args = [
        *BCC,
        "run",
        str(problem),
        str(data),
        "--out",
        str(run),
        "--quiet",
        "--no-verify",
    ]
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert _wait(lambda: _in_model_cell(run), 120), "never reached the modelling cell"
        time.sleep(0.5)
        kernels = _children(proc.pid)
        sent = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: ")
    assert took < 30
    assert not any(_alive(k) for k in kernels)
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_ABORTED"
    resumed = run_bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"
