"""Verification as the run goes: a second, fresh kernel runs each committed cell, and the
verdict still means "the saved notebook runs top to bottom in a fresh kernel". Real kernels,
a scripted agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_bcc.contract.observation import Observation
from tests.scripted import ScriptedAgent, make_runner, one_stage

pytestmark = pytest.mark.timeout(180)


def leaky(obs: Observation) -> str:
    """The first attempt defines a name, then fails (its cell is not kept); the second uses
    the name, which only the run's kernel still holds."""
    if obs.iteration <= 1:
        return "leaked = 41\nraise ValueError('the first attempt fails')"
    return "result = leaked + 1"


def test_state_leaked_from_a_removed_cell_is_caught(tmp_path: Path) -> None:
    agent = ScriptedAgent(lambda obs: one_stage(obs, leaky))
    result = make_runner(tmp_path, agent).run()
    assert result.final_state == "WORKFLOW_COMPLETED"
    verification = result.summary["verification"]
    assert verification["status"] == "failed"
    assert verification["error"] == "NameError: name 'leaked' is not defined"
    assert result.exit_code == 10  # completed, but the notebook does not re-run
    assert result.outcome().endswith(", but the notebook does not re-run (verification failed)")
    nb_index = verification["first_failing_cell"]
    import nbformat

    nb = nbformat.read(tmp_path / "run" / "notebook.ipynb", as_version=4)
    assert nb.cells[nb_index].source.strip() == "result = leaked + 1"


def test_a_clean_run_is_verified_while_it_runs(tmp_path: Path) -> None:
    agent = ScriptedAgent(lambda obs: one_stage(obs, lambda o: "result = sum(range(10))"))
    result = make_runner(tmp_path, agent).run()
    verification = result.summary["verification"]
    assert verification["status"] == "passed"
    assert verification["during_run_ms"] > 0  # the cells ran in the second kernel as they came


def leaves_a_file(obs: Observation) -> str:
    """The first attempt writes a file, then fails (its cell is not kept); the second reads it."""
    if obs.iteration <= 1:
        return (
            "open('outputs/half.txt', 'w').write('41')\nraise ValueError('the first attempt fails')"
        )
    return "result = int(open('outputs/half.txt').read()) + 1"


def test_a_file_left_by_a_removed_cell_is_caught(tmp_path: Path) -> None:
    agent = ScriptedAgent(lambda obs: one_stage(obs, leaves_a_file))
    result = make_runner(tmp_path, agent).run()
    verification = result.summary["verification"]
    assert verification["status"] == "failed"
    assert verification["error"].startswith("FileNotFoundError")
    assert not (tmp_path / "run" / ".verify").exists()  # its working directory is gone


def test_the_verification_kernel_does_not_write_over_the_runs_files(tmp_path: Path) -> None:
    code = (
        "open('outputs/log.txt', 'a').write('ran\\n')\nresult = len(open('outputs/log.txt').read())"
    )
    agent = ScriptedAgent(lambda obs: one_stage(obs, lambda o: code))
    result = make_runner(tmp_path, agent).run()
    assert result.summary["verification"]["status"] == "passed"
    assert (tmp_path / "run" / "outputs" / "log.txt").read_text() == "ran\n"  # once, not twice


@pytest.mark.parametrize("fault", [RuntimeError("a bug"), KeyboardInterrupt()], ids=repr)
def test_an_aborted_run_leaves_no_kernel_and_no_thread(
    tmp_path: Path, fault: BaseException
) -> None:
    """The fault strikes at the step's reflection: a cell has run in both kernels by then."""
    import threading

    from notebook_bcc.kernel.processes import live_kernels

    threads_before = set(threading.enumerate())
    seen_at_fault: list[str] = []

    def answer(obs: Observation) -> str:
        if obs.event == "COMPLETE_STEP":
            seen_at_fault.extend(t.name for t in threading.enumerate())
            raise fault
        return one_stage(obs, lambda o: "result = sum(range(10))")

    runner = make_runner(tmp_path, ScriptedAgent(answer))
    result = runner.run()
    assert result.final_state == "WORKFLOW_ABORTED"
    assert result.exit_code == (130 if isinstance(fault, KeyboardInterrupt) else 1)
    assert "bcc-verify" in seen_at_fault  # the verifier was at work when the fault struck
    assert live_kernels() == ()
    assert set(threading.enumerate()) <= threads_before
    assert (tmp_path / "run" / "summary.md").exists()
    assert not (tmp_path / "run" / ".verify").exists()
