"""SIGKILL at several points of an offline run; `bcc resume` finishes the same notebook.

The commit and resume bookkeeping runs ``bcc`` with scripted kernels: the killed ``bcc`` in a
process of its own (``tests/scripted_bcc.py``), the reference run and each resume in this
process (``tests/inprocess.py``). Killed during a cell and during the final verification,
``bcc`` runs real kernels (a kernel runs a cell, the verifier's kernel replays the notebook:
that no kernel outlives bcc is the point there), and resumes with them. The problem is a
one-question problem on a 60-row table (33 transitions): the analysis is not the point.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from notebook_bcc.rundir.store import RunStore
from tests.conftest import BCC, ROOT, run_bcc
from tests.inprocess import bcc_in_process
from tests.scripted_bcc import COMMAND

pytestmark = pytest.mark.slow  # whole runs of bcc, killed and resumed

PROBLEM = "---\ntitle: Plant growth\ntarget: height\ntask: regression\n---\nPredict `height`.\n"
QUESTION = "---\ntitle: Plant growth\n---\nHow many rows have a `light` above 3?\n"  # this file's
SCRIPTED = COMMAND  # bcc, its kernels scripted
REAL = ("during_a_cell", "during_the_final_verification")  # bcc with real kernels


def _data(tmp: Path, text: str = PROBLEM) -> tuple[Path, Path]:
    problem = tmp / "problem.md"
    problem.write_text(text)
    rows = ["light,water,soil,height"]
    for i in range(60):
        rows.append(
            f"{i % 7},{(i * 3) % 11},{'ab'[i % 2]},{2 * (i % 7) + (i * 3) % 11 * 0.5 + i % 2}"
        )
    data = tmp / "plants.csv"
    data.write_text("\n".join(rows) + "\n")
    return problem, data


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _code_cells(run: Path) -> list[str]:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def reference_run(tmp: Path) -> tuple[Path, Path, list[str], list[str]]:
    """An uninterrupted run (kernels scripted): its inputs, its code cells and its failpoint
    trace lines."""
    problem, data = _data(tmp, QUESTION)
    trace = tmp / "trace.txt"
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(tmp / "run"), "--quiet", "--no-verify",
        env={"BCC_FAILPOINTS_TRACE": str(trace)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return problem, data, _code_cells(tmp / "run"), trace.read_text().splitlines()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str], list[str]]:
    return reference_run(tmp_path_factory.mktemp("ref"))


def _wait(condition, deadline: float) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return False


def _transitions(run: Path) -> int:
    path = run / "events.jsonl"
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if '"type": "transition"' in line)


def _mid_action(run: Path) -> bool:
    """A COMPLETE_ACTION is in flight: a notebook cell exists past the last checkpoint."""
    try:
        state = json.loads((run / "state.json").read_text())
        nb = json.loads((run / "notebook.ipynb").read_text())
    except (OSError, ValueError):
        return False
    seqs = [c["metadata"].get("bcc", {}).get("seq", 0) for c in nb["cells"]]
    return state["fsm_state"] == "BEHAVIOR_RUNNING" and max(seqs) > state["seq"]


def _completed(run: Path) -> bool:
    path = run / "state.json"
    return path.exists() and '"WORKFLOW_COMPLETED"' in path.read_text()


POINTS = [
    "during_an_agent_transition",
    "during_a_cell",
    "between_transitions",
    "during_a_checkpoint_write",
    "during_the_final_verification",
]


@pytest.mark.parametrize("point", POINTS)
def test_sigkill_then_resume_completes_the_same_notebook(
    point: str, reference, tmp_path: Path, fault_clock
):
    problem, data, expected, trace = reference
    run = tmp_path / "run"
    mark = tmp_path / "paused"
    env = {**os.environ, "BCC_FAILPOINTS_MARK": str(mark)}
    if point == "during_an_agent_transition":
        env["BCC_FAILPOINTS"] = "agent@12=pause"  # the 12th agent call stalls; killed there
    elif point == "during_a_checkpoint_write":  # temp file written, not yet renamed
        env["BCC_FAILPOINTS"] = "write:state.json@9=pause"
    real = point in REAL
    args = [*(BCC if real else SCRIPTED), "run", str(problem), str(data), "--out", str(run)]
    args.append("--quiet")
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        if point in ("during_an_agent_transition", "during_a_checkpoint_write"):
            ok = _wait(mark.exists, 90)
        elif point == "during_a_cell":
            ok = _wait(lambda: _mid_action(run), 90)
        elif point == "between_transitions":
            ok = _wait(lambda: _transitions(run) >= 20, 90)
        else:
            ok = _wait(lambda: _completed(run), 120)
        assert ok, f"never reached {point}"
        kernels = _children(proc.pid)
        killed = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL, "bcc ended before it was killed"
    assert bool(kernels) == real, kernels  # a real kernel was running (none when scripted)
    assert _wait(lambda: not any(_alive(k) for k in kernels), 2.0), "a kernel outlived bcc"
    fault_clock("SIGKILL to no kernel alive", time.monotonic() - killed)
    if point == "during_a_checkpoint_write":
        assert (run / ".state.json.tmp").exists()  # killed between the temp write and the rename
        json.loads((run / "state.json").read_text())  # the previous checkpoint is whole
    resumed = (run_bcc if real else bcc_in_process)("resume", str(run), "--quiet")
    fault_clock("SIGKILL to resumed completion", time.monotonic() - killed)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    state = json.loads((run / "state.json").read_text())
    assert state["fsm_state"] == "WORKFLOW_COMPLETED"
    assert _code_cells(run) == expected
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verification"]["status"] == "passed"
    seqs = [int(p.name[:4]) for p in RunStore(run).log_files()]
    assert seqs == list(range(1, len(seqs) + 1))  # one log per committed transition
    if point == "during_a_checkpoint_write":  # its log was written, its state.json never was
        assert len(list((run / "logs").glob("*.abandoned.xml"))) == 1
