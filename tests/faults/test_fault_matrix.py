"""The fault matrix: each fault at each of the three writes of a commit, at two points of a run.

A commit writes a pending log, its events.jsonl lines and state.json (then renames the log).
SIGKILL, SIGTERM and SIGINT land while one of those writes is paused; ENOSPC makes it fail.
Whatever the fault, the run is then read as a user meets it: ``bcc resume`` completes it,
every seq appears once in ``logs/`` and in events.jsonl, ``bcc logs`` lists each transition
once, no kernel outlives bcc, and ``bcc replay`` of the resumed run exits 0 with the same code
cells as the resumed notebook (which are those of an uninterrupted run).

SIGTERM at the state write of the action's commit runs ``bcc`` with real kernels (that no
kernel outlives bcc is about kernels; the other faults meet real kernels in tests of their
own); the other cases run ``bcc`` with scripted kernels, which the fault matrix is about: the
commit, the signal handling and the resume, at the speed of bcc's own code. A signalled
``bcc`` runs in a process of its own (``tests/scripted_bcc.py``); a full disk, which needs no
signal, and what follows each fault run in this process. The reference run (made once for the
session's workers) uses real kernels, so the scripted cases also check that a scripted kernel
leads the offline analyst to the same cells.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import nbformat
import pytest

from tests.conftest import BCC, ROOT, made_once, run_bcc
from tests.faults.test_kill_resume import _wait
from tests.inprocess import bcc_in_process
from tests.scripted_bcc import COMMAND

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PROBLEM = "---\ntitle: Plant growth\n---\nHow many rows have a `light` above 3?\n"
FAULTS = {"SIGKILL": -9, "SIGTERM": 143, "SIGINT": 130, "ENOSPC": 8}  # and the exit it gives
WRITES = ("log", "events", "state")
POINTS = {"agent_transition": 2, "action_with_cells": 10}  # the seq of the commit hit
SCRIPTED = COMMAND  # bcc, its kernels scripted


def _bcc_for(fault: str, write: str, point: str) -> list[str]:
    """Real kernels for SIGTERM where the action's state is written; scripted kernels
    elsewhere. The other faults meet real kernels in tests of their own: SIGKILL in
    test_kill_resume and test_signals, SIGINT in test_signals, a full disk in test_disk_full."""
    real = (fault, write, point) == ("SIGTERM", "state", "action_with_cells")
    return BCC if real else SCRIPTED


def _run(command: list[str], *args: str) -> subprocess.CompletedProcess:
    """What follows the fault (resume, logs, replay): as it was run, but in this process when
    the kernels are scripted (only the faulted run needs a process of its own)."""
    if command is SCRIPTED:
        return bcc_in_process(*args)
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=600, cwd=ROOT)


def _inputs(tmp: Path) -> tuple[Path, Path]:
    problem = tmp / "problem.md"
    problem.write_text(PROBLEM)
    rows = ["light,water,soil,height"]
    for i in range(60):
        rows.append(f"{i % 7},{(i * 3) % 11},{'ab'[i % 2]},{2 * (i % 7) + (i * 3) % 11 * 0.5}")
    data = tmp / "plants.csv"
    data.write_text("\n".join(rows) + "\n")
    return problem, data


def _code_cells(run: Path) -> list[str]:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> tuple[Path, Path, list[str], list[str]]:
    """An uninterrupted run, made once for the session's workers (``made_once``): its inputs,
    code cells and failpoint trace (``write N PATH``)."""

    def make(folder: Path) -> None:
        folder.mkdir(parents=True)
        problem, data = _inputs(folder)
        proc = run_bcc(
            "run", str(problem), str(data), "--out", str(folder / "run"), "--quiet",
            env={"BCC_FAILPOINTS_TRACE": str(folder / "trace.txt")},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr

    tmp = made_once(tmp_path_factory, worker_id, "fault-matrix-reference", make)
    trace = (tmp / "trace.txt").read_text().splitlines()
    names = [Path(line.split(" ", 2)[2]).name for line in trace]
    assert any(n.startswith("0010_COMPLETE_ACTION") for n in names), "the run's shape changed"
    return tmp / "problem.md", tmp / "plants.csv", _code_cells(tmp / "run"), names


def _failpoint(names: list[str], write: str, seq: int) -> str:
    """``write:NAME@N`` for the ``write`` of commit ``seq``, counted in the reference trace."""
    log = next(i for i, n in enumerate(names) if n.startswith(f"{seq:04d}_"))
    if write == "log":
        return f"write:{names[log]}@1"
    name = "events.jsonl" if write == "events" else "state.json"
    at = next(i for i in range(log, len(names)) if names[i] == name)
    return f"write:{name}@{names[: at + 1].count(name)}"


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split()[2] != "Z"
    except OSError:
        return False


def _kernel_pids(run: Path) -> list[int]:
    lines = (run / "events.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if '"type": "kernel"' in line]
    return [r["pid"] for r in records if r.get("pid")]


def _assert_one_history(run: Path, command: list[str] = BCC) -> None:
    committed = sorted(
        p.name for p in (run / "logs").glob("[0-9]*_*.xml") if p.name.count(".") == 1
    )
    seqs = [int(n[:4]) for n in committed]
    assert seqs == list(range(1, len(seqs) + 1)), committed
    assert not list((run / "logs").glob("*.pending.xml"))
    records = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    transitions = [r["seq"] for r in records if r.get("type") == "transition"]
    assert transitions == seqs
    listed = _run(command, "logs", str(run))
    assert listed.returncode == 0, listed.stderr
    rows = [int(line.split()[0]) for line in listed.stdout.splitlines() if line.strip()]
    assert rows == seqs


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_at_a_commit_leaves_one_replayable_history(
    fault: str, write: str, point: str, reference, tmp_path: Path
) -> None:
    _fault_then_resume(
        fault, write, POINTS[point], _bcc_for(fault, write, point), reference, tmp_path
    )


@pytest.mark.parametrize("write", ("events", "state"))
@pytest.mark.parametrize("fault", ("SIGTERM", "ENOSPC"))
def test_a_fault_at_the_final_commit_is_not_a_completed_run(
    fault: str, write: str, reference, tmp_path: Path
) -> None:
    """The commit to WORKFLOW_COMPLETED is a commit like the others: a fault before its
    state.json is written ends bcc as an abort (it once exited 0 with state.json one
    transition behind the completed summary)."""
    names = reference[3]
    final = max(int(n[:4]) for n in names if n[:4].isdigit() and n.endswith(".pending.xml"))
    _fault_then_resume(fault, write, final, SCRIPTED, reference, tmp_path)


def _fault_then_resume(
    fault: str, write: str, seq: int, command: list[str], reference, tmp_path: Path
) -> None:
    problem, data, expected, names = reference
    run, mark = tmp_path / "run", tmp_path / "paused"
    action = "enospc" if fault == "ENOSPC" else "pause"
    env = {
        **os.environ,
        "BCC_FAILPOINTS": f"{_failpoint(names, write, seq)}={action}",
        "BCC_FAILPOINTS_MARK": str(mark),
    }
    args = ["run", str(problem), str(data), "--out", str(run), "--quiet"]
    if action == "enospc" and command is SCRIPTED:  # no signal: this process will do
        done = bcc_in_process(*args, env={k: env[k] for k in env if k.startswith("BCC_FAIL")})
        returncode, stderr = done.returncode, done.stderr
    else:
        returncode, stderr = _faulted(command, args, env, action, fault, mark)
    assert returncode == FAULTS[fault], stderr
    if fault != "SIGKILL":
        assert len(stderr.strip().splitlines()) == 1, stderr  # one line: cause and remedy
    assert _wait(lambda: not any(_alive(k) for k in _kernel_pids(run)), 10), "a kernel outlived bcc"

    resumed = _run(command, "resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_COMPLETED"
    _assert_one_history(run, command)
    assert _code_cells(run) == expected

    replayed = _run(command, "replay", str(run), "--out", str(tmp_path / "replayed"), "--quiet")
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    assert _code_cells(tmp_path / "replayed") == _code_cells(run)


def _faulted(
    command: list[str], args: list[str], env: dict[str, str], action: str, fault: str, mark: Path
) -> tuple[int, str]:
    """``bcc ARGS`` in a process of its own, sent ``fault`` once its failpoint pauses it (or
    left to fail there): its exit code and standard error."""
    proc = subprocess.Popen(
        [*command, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        if action == "pause":
            assert _wait(lambda: mark.exists() or proc.poll() is not None, 120)
            assert mark.exists(), "the failpoint was never reached"
            proc.send_signal(getattr(signal, fault))
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr
