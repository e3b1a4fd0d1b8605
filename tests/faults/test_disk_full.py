"""An ENOSPC injected at the 1st, 10th and last write of a run (``BCC_FAILPOINTS``).

Each time: exit 8 with the path on one line, the previous ``state.json`` and
``notebook.ipynb`` still load, and ``bcc resume`` completes the same notebook.

The injected faults and the stray cells an abort left are the commit's and the resume's
bookkeeping: ``bcc`` runs in this process with scripted kernels (``tests/inprocess.py``), as
the reference run does (``test_kill_resume.reference_run``). A really full disk (a 400 KB
tmpfs) runs ``bcc`` with real kernels, whose working directory is on that disk.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from tests.conftest import run_bcc
from tests.faults.test_fault_matrix import _alive, _kernel_pids
from tests.faults.test_kill_resume import _code_cells, _wait, reference_run
from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.slow  # whole runs of bcc, killed and resumed


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, list[str], int, str]:
    """Inputs, code cells, the number of writes and the last write as ``write:NAME@N``."""
    problem, data, code, trace = reference_run(tmp_path_factory.mktemp("ref"))
    names = [Path(line.split(maxsplit=2)[2]).name for line in trace if line.startswith("write ")]
    last = f"write:{names[-1]}@{names.count(names[-1])}"
    return problem, data, code, len(names), last


@pytest.mark.parametrize("which", ["1st", "10th", "last"])
def test_disk_full_exits_8_keeps_the_checkpoint_and_resume_completes(
    which: str, reference, tmp_path: Path, fault_clock
):
    problem, data, expected, writes, last = reference
    # the last write is named by its file: how many writes precede it depends on timing
    point = {"1st": "write@1", "10th": "write@10", "last": last}[which]
    nth = {"1st": 1, "10th": 10, "last": writes}[which]
    run = tmp_path / "run"
    started = time.monotonic()
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(run), "--quiet", "--no-verify",
        env={"BCC_FAILPOINTS": f"{point}=enospc"},
    )  # fmt: skip
    assert proc.returncode == 8, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "disk full while writing " + str(run) in lines[0], lines
    assert "bcc resume" in lines[0]
    json.loads((run / "state.json").read_text())
    nbformat.validate(nbformat.read(run / "notebook.ipynb", as_version=4))
    status = bcc_in_process("status", str(run)).stdout
    assert f"next      bcc resume {run}" in status
    assert which == "last" or "disk full while writing" in status  # last: the run had completed
    fault_clock(f"ENOSPC at write {nth} of {writes}: run to exit", time.monotonic() - started)
    resumed = bcc_in_process("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"
    assert _code_cells(run) == expected
    assert (run / "summary.md").exists()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 400 KB tmpfs (skipped where mounting is not allowed), removed afterwards."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mnt)], capture_output=True
    )
    if mounted.returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_really_full_disk_exits_8_and_resume_completes_once_space_is_freed(
    small_disk: Path, reference, fault_clock
):
    problem, data, expected, *_ = reference
    run = small_disk / "run"
    proc = run_bcc("run", str(problem), str(data), "--out", str(run), "--quiet", "--no-verify")
    assert proc.returncode == 8, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "disk full while writing " + str(run) in lines[0], lines
    state = json.loads((run / "state.json").read_text())
    assert state["fsm_state"] != "WORKFLOW_COMPLETED"
    nbformat.validate(nbformat.read(run / "notebook.ipynb", as_version=4))
    assert not list(run.rglob(".*.tmp"))  # no temp file left behind
    kernels = _kernel_pids(run)
    assert kernels and _wait(lambda: not any(_alive(k) for k in kernels), 10), "a kernel outlived"
    subprocess.run(["mount", "-o", "remount,size=32m", str(small_disk)], check=True)
    started = time.monotonic()
    resumed = run_bcc("resume", str(run), "--quiet")
    fault_clock("full disk freed to resumed completion", time.monotonic() - started)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"
    assert _code_cells(run) == expected


def test_cells_an_abort_could_not_take_out_of_the_notebook_are_dropped_on_resume(
    reference, tmp_path: Path
):
    """A disk still full when the abort writes the notebook leaves on disk the cells of the
    transition it abandoned, tagged with the seq the abort then took (seen on a 400 KB disk):
    resume drops them, so the step is not in the notebook twice."""
    problem, data, expected, *_ = reference
    run = tmp_path / "run"
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(run), "--quiet", "--no-verify",
        env={"BCC_FAILPOINTS": "agent:COMPLETE_STEP@2=bug"},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    state = json.loads((run / "state.json").read_text())
    assert state["fsm_state"] == "WORKFLOW_ABORTED"
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    stray = nbformat.v4.new_code_cell("print('abandoned')")
    stray.metadata["bcc"] = {"seq": state["seq"]}  # what the failed write left behind
    nb.cells.append(stray)
    nbformat.write(nb, run / "notebook.ipynb")
    resumed = bcc_in_process("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _code_cells(run) == expected
