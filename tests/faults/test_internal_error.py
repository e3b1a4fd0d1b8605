"""An unexpected error (a bug) ends the run as cleanly as any other: one line, exit 1, an
ABORT checkpoint, a summary, the lock released, no kernel left; ``bcc resume`` completes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from notebook_bcc.rundir.store import RunStore
from tests.conftest import run_bcc
from tests.faults.test_fault_matrix import _alive, _assert_one_history, _inputs, _kernel_pids

pytestmark = pytest.mark.slow  # whole runs of bcc, killed and resumed


def test_a_bug_mid_run_is_an_abort_that_resume_gets_past(tmp_path: Path) -> None:
    problem, data = _inputs(tmp_path)
    run = tmp_path / "run"
    env = {"BCC_FAILPOINTS": "agent@5=bug", "BCC_FAILPOINTS_MARK": str(tmp_path / "mark")}
    proc = run_bcc("run", str(problem), str(data), "--out", str(run), "--quiet", env=env)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error: RuntimeError: failpoint agent@5" in lines[0]
    state = json.loads((run / "state.json").read_text())
    assert state["fsm_state"] == "WORKFLOW_ABORTED" and state["resume_from"]
    assert json.loads((run / "summary.json").read_text())["final_state"] == "WORKFLOW_ABORTED"
    store = RunStore(run)
    store.lock()  # released by the aborted run
    store.unlock()
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    bug = [e for e in events if e["type"] == "internal_error"]
    assert len(bug) == 1 and "RuntimeError: failpoint agent@5" in bug[0]["traceback"]
    assert not any(_alive(pid) for pid in _kernel_pids(run))
    assert not (run / ".verify").exists()

    resumed = run_bcc("resume", str(run), "--quiet", env={"BCC_FAILPOINTS": ""})
    assert resumed.returncode == 0, resumed.stderr
    _assert_one_history(run)
    assert os.path.exists(run / "summary.md")
