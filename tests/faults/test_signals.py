"""Ctrl-C and SIGTERM during a cell, a fork, a model call and the clean-up: checkpoint, no
kernel left, exit 130/143, resume completes.

What bcc does with a signal (its handlers, the checkpoint, the one-line error, the remedy, a
second Ctrl-C, resume) is workflow logic: those runs are ``bcc`` in a process of its own with
scripted kernels (``tests/scripted_bcc.py``, whose ``$BCC_SCRIPTED_SLOW_CELL`` holds the
modelling cell while the signal lands), then resumed in this process (``tests/inprocess.py``).
That every kernel ends when bcc is interrupted is about kernels: the Ctrl-C during a fork runs
on real kernels (the run's and two branches' replaying the notebook), on the smallest table
the offline analyst forks on (``test_fork.forking_inputs``). Killing the kernels at a second
Ctrl-C is ``test_kernel.test_kill_live_kernels`` (real kernels)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BCC, ROOT
from tests.fakellm import FakeLLM, Reply
from tests.faults.test_fault_matrix import _kernel_pids
from tests.faults.test_kill_resume import _alive, _code_cells, _wait
from tests.inprocess import bcc_in_process
from tests.integration.test_fork import forking_inputs
from tests.integration.test_llm import MODEL, _env, inputs
from tests.scripted_bcc import COMMAND
from tests.scripted_kernel import ScriptedKernels

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # runs of bcc, killed and resumed

SCRIPTED = COMMAND  # bcc, its kernels scripted
MODEL_CELL = "cv = _bcc_cv(SEED)"  # the offline analyst's cross-validation cell


def _resumed(run: Path, environ: dict[str, str] | None = None) -> None:
    """``bcc resume`` completes the run (scripted kernels, all shut down after)."""
    kernels = ScriptedKernels()
    resumed = bcc_in_process("resume", str(run), "--quiet", environ=environ, kernels=kernels)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"
    assert kernels.made and all(k.closed for k in kernels.made)


def _start_in_model_cell(tmp: Path, env: dict[str, str] | None = None) -> tuple:
    """An offline run without a fork, in a process of its own, held in its modelling cell."""
    problem, data = forking_inputs(tmp)
    run, mark = tmp / "run", tmp / "in_cell"
    env = {
        **os.environ,
        "BCC_SCRIPTED_SLOW_CELL": MODEL_CELL,
        "BCC_SCRIPTED_SLOW_MARK": str(mark),
        **(env or {}),
    }
    args = [*SCRIPTED, "run", str(problem), str(data), "--out", str(run), "--quiet"]
    args += ["--no-verify", "--max-alternatives", "1"]  # the cell in the run's own kernel
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if not _wait(lambda: mark.exists() or proc.poll() is not None, 120) or not mark.exists():
        proc.kill()
        raise AssertionError(f"never reached the modelling cell: {proc.communicate()[1]}")
    return proc, run, mark


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_a_cell_checkpoints_and_resume_completes(
    sig, code, tmp_path: Path, fault_clock
):
    proc, run, _ = _start_in_model_cell(tmp_path)
    try:
        state = json.loads((run / "state.json").read_text())
        assert state["fsm_state"] == "BEHAVIOR_RUNNING"  # the cell runs inside a behavior
        assert "model_selection" in state["location"]["path"]
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
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_ABORTED"
    assert f"bcc resume {run}" in err  # the remedy names this run
    _resumed(run)
    code = _code_cells(run)
    assert len(code) == len(set(code))  # the interrupted action was redone, not duplicated
    assert sum(MODEL_CELL in c for c in code) == 1


def _forking(run: Path) -> bool:
    """A fork's branch kernels have started replaying the notebook."""
    try:
        text = (run / "events.jsonl").read_text()
    except OSError:
        return False
    return text.count('"why": "fork"') >= 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl_c", "sigkill"])
def test_a_signal_during_a_fork_ends_every_branch_kernel_and_resume_completes(
    sig: signal.Signals, tmp_path: Path, fault_clock
) -> None:
    """Real kernels: the run's, and two branch kernels replaying the notebook. Ctrl-C is an
    abort bcc handles; SIGKILL leaves the kernels to die with it (bubblewrap's
    ``--die-with-parent``, or the kernel's own watch of its parent) and the checkpoint before
    the fork."""
    problem, data = forking_inputs(tmp_path)
    run = tmp_path / "run"
    args = [*BCC, "run", str(problem), str(data), "--out", str(run), "--quiet", "--no-verify"]
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert _wait(lambda: _forking(run) or proc.poll() is not None, 180)
        assert _forking(run), "never reached the fork"
        kernels = _kernel_pids(run)
        assert len(kernels) >= 3  # the run's and two branches'
        assert all(_alive(k) for k in kernels)  # the branches' still run
        sent = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    fault_clock(f"{sig.name} during a fork to exit", took)
    assert _wait(lambda: not any(_alive(k) for k in kernels), 5.0), "a kernel outlived bcc"
    state = json.loads((run / "state.json").read_text())
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: ")
        assert (state["fsm_state"], state["resume_from"]) == ("WORKFLOW_ABORTED", "STEP_RUNNING")
    else:
        assert proc.returncode == -signal.SIGKILL
        assert state["fsm_state"] == "STEP_RUNNING"  # the checkpoint before the fork
    assert not list((run / "logs").glob("*_FORK.xml"))
    _resumed(run)  # the fork's bookkeeping on resume: workflow logic, scripted kernels
    summary = json.loads((run / "summary.json").read_text())
    assert len(summary["alternatives"]) == 1
    code = _code_cells(run)
    assert len(code) == len(set(code))  # the fork ran once more, its cells joined once


def test_a_second_ctrl_c_exits_at_once_and_resume_completes(tmp_path: Path, fault_clock):
    """The clean-up after the first Ctrl-C stalls (a failpoint); the second one ends bcc."""
    mark = tmp_path / "paused"
    env = {"BCC_FAILPOINTS": "abort@1=pause", "BCC_FAILPOINTS_MARK": str(mark)}
    proc, run, _ = _start_in_model_cell(tmp_path, env)
    try:
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
    assert took < 30
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted twice")
    _resumed(run)


#: a cell that says it started (a file), then sleeps: Ctrl-C lands while it runs
SLOW_CELL = (
    "import pathlib, time\npathlib.Path('outputs/cell_started').touch()\ntime.sleep(6)\nresult = 42"
)


def start_llm_run(fake: FakeLLM, tmp: Path) -> tuple[subprocess.Popen, Path]:
    """``bcc run`` against ``fake`` in the background, its kernels scripted (stdout and
    stderr piped)."""
    problem, data = inputs(tmp)
    run = tmp / "run"
    args = [
        *SCRIPTED, "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
        "--out", str(run), "--quiet", "--no-verify",
    ]  # fmt: skip
    proc = subprocess.Popen(
        args, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, run


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_model_call_exits_at_once_and_resume_completes(
    sig: signal.Signals, code: int, tmp_path: Path, fault_clock
):
    """The signal's exception is raised inside the provider's client, which wraps what it meets
    as a connection error: a SIGTERM once came back as a retried 'Connection error' and bcc
    went on until the provider failed five times."""
    with FakeLLM() as fake:
        fake.push(Reply(delay=25, when="COMPLETE_STEP"))  # a slow model call
        proc, run = start_llm_run(fake, tmp_path)
        try:
            assert _wait(lambda: bool(fake.by("COMPLETE_STEP")), 120), "no model call seen"
            sent = time.monotonic()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
        fault_clock(f"{sig.name} in a model call to exit", took)
        assert took < 20  # not after the slow reply
        assert proc.returncode == code, err
        assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: ")
        assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_ABORTED"
        _resumed(run, _env())


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
        _resumed(run, _env())
        assert len(fake.by("COMPLETE_ACTION")) == 1  # paid once
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert len([e for e in events if e["type"] == "reply_reused"]) == 1
    assert _code_cells(run)[-1] == SLOW_CELL
    assert len(_code_cells(run)) == len(set(_code_cells(run)))
