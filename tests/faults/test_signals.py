"""Ctrl-C and SIGTERM during a cell: checkpoint, no kernel left, exit 130/143, resume completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BCC, ROOT, run_bcc
from tests.fakellm import FakeLLM, Reply
from tests.faults.test_fault_matrix import _kernel_pids
from tests.faults.test_kill_resume import _alive, _children, _code_cells, _wait
from tests.integration.test_llm import MODEL, _env, bcc, inputs

pytestmark = pytest.mark.slow  # whole runs of bcc, killed and resumed


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
def test_signal_during_a_cell_checkpoints_and_resume_completes(
    sig, code, tmp_path: Path, fault_clock
):
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
        "--max-alternatives",
        "1",  # the modelling cell in the run's own kernel (a fork: the test below)
    ]
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert _wait(lambda: _in_model_cell(run), 120), "never reached the modelling cell"
        kernels = _children(proc.pid)
        sent = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    fault_clock(f"{signal.Signals(sig).name} during a cell to exit", took)
    assert proc.returncode == code, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: ")
    assert not any(_alive(k) for k in kernels)
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_ABORTED"
    assert f"bcc resume {run}" in err  # the remedy names this run
    resumed = run_bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"
    code = _code_cells(run)
    assert len(code) == len(set(code))  # the interrupted action was redone, not duplicated


def _forking(run: Path) -> bool:
    """A fork's branch kernels have started replaying the notebook."""
    try:
        text = (run / "events.jsonl").read_text()
    except OSError:
        return False
    return text.count('"why": "fork"') >= 2


def test_ctrl_c_during_a_fork_ends_every_branch_kernel_and_resume_completes(
    tmp_path: Path, fault_clock
) -> None:
    problem, data = _big(tmp_path)
    run = tmp_path / "run"
    args = [*BCC, "run", str(problem), str(data), "--out", str(run), "--quiet", "--no-verify"]
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert _wait(lambda: _forking(run), 180), "never reached the fork"
        kernels = _kernel_pids(run)
        assert len(kernels) >= 3  # the run's and two branches'
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    fault_clock("SIGINT during a fork to exit", took)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: ")
    assert _wait(lambda: not any(_alive(k) for k in kernels), 5.0), "a kernel outlived bcc"
    state = json.loads((run / "state.json").read_text())
    assert (state["fsm_state"], state["resume_from"]) == ("WORKFLOW_ABORTED", "STEP_RUNNING")
    assert not list((run / "logs").glob("*_FORK.xml"))
    resumed = run_bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert len(summary["alternatives"]) == 1
    code = _code_cells(run)
    assert len(code) == len(set(code))  # the fork ran once more, its cells joined once
    assert not any(_alive(k) for k in _kernel_pids(run))


def test_a_second_ctrl_c_exits_at_once_and_resume_completes(tmp_path: Path, fault_clock):
    """The clean-up after the first Ctrl-C stalls (a failpoint); the second one ends bcc."""
    problem, data = _big(tmp_path)
    run, mark = tmp_path / "run", tmp_path / "paused"
    env = {**os.environ, "BCC_FAILPOINTS": "abort@1=pause", "BCC_FAILPOINTS_MARK": str(mark)}
    args = [*BCC, "run", str(problem), str(data), "--out", str(run), "--quiet", "--no-verify"]
    args += ["--max-alternatives", "1"]
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert _wait(lambda: _in_model_cell(run), 120), "never reached the modelling cell"
        kernels = _children(proc.pid)
        proc.send_signal(signal.SIGINT)
        assert _wait(mark.exists, 30), "the first Ctrl-C never reached the clean-up"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)  # the stalled clean-up would take 120 s
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    fault_clock("second Ctrl-C to exit", took)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted twice")
    assert _wait(lambda: not any(_alive(k) for k in kernels), 2.0)
    resumed = run_bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"


#: a cell that says it started (a file), then sleeps: Ctrl-C lands while it runs
SLOW_CELL = (
    "import pathlib, time\npathlib.Path('outputs/cell_started').touch()\ntime.sleep(6)\nresult = 42"
)


def start_llm_run(fake: FakeLLM, tmp: Path) -> tuple[subprocess.Popen, Path]:
    """``bcc run`` against ``fake`` in the background (stdout and stderr piped)."""
    problem, data = inputs(tmp)
    run = tmp / "run"
    args = [
        *BCC, "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
        "--out", str(run), "--quiet", "--no-verify",
    ]  # fmt: skip
    proc = subprocess.Popen(
        args, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, run


def test_ctrl_c_during_a_model_call_exits_130_and_resume_completes(tmp_path: Path, fault_clock):
    with FakeLLM() as fake:
        fake.push(Reply(delay=25, when="COMPLETE_STEP"))  # a slow model call
        proc, run = start_llm_run(fake, tmp_path)
        try:
            assert _wait(lambda: bool(fake.by("COMPLETE_STEP")), 120), "no model call seen"
            kernels = _children(proc.pid)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
        fault_clock("Ctrl-C in a model call to exit", took)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: ")
        assert not any(_alive(k) for k in kernels)
        assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_ABORTED"
        resumed, _, _ = bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"


def test_ctrl_c_during_a_cell_does_not_pay_for_its_reply_twice(tmp_path: Path, fault_clock):
    """The interrupted action is redone on resume from its recorded reply, not asked again."""
    with FakeLLM(code=SLOW_CELL) as fake:
        proc, run = start_llm_run(fake, tmp_path)
        try:
            assert _wait(lambda: (run / "outputs" / "cell_started").exists(), 120), "no cell ran"
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            fault_clock("Ctrl-C in an LLM run's cell to exit", time.monotonic() - sent)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        assert (run / "pending_reply.json").exists()
        resumed, _, _ = bcc("resume", str(run), "--quiet")
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert len(fake.by("COMPLETE_ACTION")) == 1  # paid once
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert len([e for e in events if e["type"] == "reply_reused"]) == 1
    assert _code_cells(run)[-1] == SLOW_CELL
    assert len(_code_cells(run)) == len(set(_code_cells(run)))
