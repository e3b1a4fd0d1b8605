"""SIGKILL at several points of an offline run; `bcc resume` finishes the same notebook."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from tests.conftest import BCC, ROOT, run_bcc

PROBLEM = "---\ntitle: Plant growth\ntarget: height\ntask: regression\n---\nPredict `height`.\n"


def _data(tmp: Path) -> tuple[Path, Path]:
    problem = tmp / "problem.md"
    problem.write_text(PROBLEM)
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


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    tmp = tmp_path_factory.mktemp("ref")
    problem, data = _data(tmp)
    proc = run_bcc(
        "run", str(problem), str(data), "--out", str(tmp / "run"), "--quiet", "--no-verify"
    )
    assert proc.returncode == 0, proc.stderr
    return problem, data, _code_cells(tmp / "run")


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


@pytest.mark.parametrize(
    "point",
    ["after_3_transitions", "mid_action_cells", "after_20_transitions", "during_verification"],
)
def test_sigkill_then_resume_completes_the_same_notebook(point: str, reference, tmp_path: Path):
    problem, data, expected = reference
    run = tmp_path / "run"
    args = [
        *BCC,
        "run",
        str(problem),
        str(data),
        "--out",
        str(run),
        "--quiet",
    ]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if point == "after_3_transitions":
            ok = _wait(lambda: _transitions(run) >= 3, 60)
        elif point == "mid_action_cells":
            # a COMPLETE_ACTION is in flight: a notebook cell exists past the last checkpoint
            def mid() -> bool:
                try:
                    state = json.loads((run / "state.json").read_text())
                    nb = json.loads((run / "notebook.ipynb").read_text())
                except (OSError, ValueError):
                    return False
                seqs = [c["metadata"].get("bcc", {}).get("seq", 0) for c in nb["cells"]]
                return state["fsm_state"] == "BEHAVIOR_RUNNING" and max(seqs) > state["seq"]

            ok = _wait(mid, 90)
        elif point == "after_20_transitions":
            ok = _wait(lambda: _transitions(run) >= 20, 90)
        else:
            ok = _wait(
                lambda: (
                    '"WORKFLOW_COMPLETED"' in (run / "state.json").read_text()
                    if (run / "state.json").exists()
                    else False
                ),
                120,
            )
        assert ok, f"never reached {point}"
        kernels = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _wait(lambda: not any(_alive(k) for k in kernels), 2.5), "a kernel outlived bcc"
    resumed = run_bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    state = json.loads((run / "state.json").read_text())
    assert state["fsm_state"] == "WORKFLOW_COMPLETED"
    assert _code_cells(run) == expected
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verification"]["status"] == "passed"
