"""Kernel faults under a scripted model on a loopback server (the real litellm path).

The first action runs a faulty cell; the retried behavior runs ``result = 42``. Each run must
still complete with a valid notebook, and its transition log must say what happened. ``bcc``
runs in this process with real kernels (``llm_run(where="here")``): the faults are the kernel's.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from lxml import etree

from tests.fakellm import FakeLLM, Request, scripted_reply
from tests.integration.test_llm import bcc_here, fsm_state, llm_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def first_fault_then(fault: str, fake: FakeLLM, fixed: str = "result = 42"):
    """A policy: the first COMPLETE_ACTION runs ``fault``, later ones run ``fixed``."""

    def policy(req: Request) -> str:
        actions = len(fake.by("COMPLETE_ACTION"))
        return scripted_reply(req.transition, fault if actions <= 1 else fixed)

    return policy


def cell_log(run: Path, seq: int = 4) -> etree._Element:
    return etree.parse(str(run / "logs" / f"{seq:04d}_COMPLETE_ACTION.xml")).getroot()


def events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


CASES = {
    "os_exit": ("import os\nos._exit(1)", "dead", "the kernel died"),
    "segfault": ("import ctypes\nctypes.string_at(0)", "dead", "the kernel died"),
    "busy_loop": ("while True:\n    pass", "timeout", "the kernel kept its state"),
    "sigint_ignored": (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "while True:\n    time.sleep(0.05)",
        "timeout",
        "ignored the interrupt",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_kernel_fault_is_survived_and_logged(case: str, tmp_path: Path, fault_clock):
    fault, status, note = CASES[case]
    with FakeLLM() as fake:
        fake.policy = first_fault_then(fault, fake)
        done = llm_run(fake, tmp_path, "--cell-timeout", "3", where="here")
    assert done.proc.returncode == 0, done.proc.stderr
    assert fsm_state(done.run) == "WORKFLOW_COMPLETED"
    nb = nbformat.read(done.run / "notebook.ipynb", as_version=4)
    nbformat.validate(nb)
    assert [c.source for c in nb.cells if c.cell_type == "code"][-1] == "result = 42"
    cell = cell_log(done.run).find("execution/cell")
    assert cell.get("status") == status, etree.tostring(cell)
    # the reflector is told what happened
    reflect = [r for r in done.requests if r.transition == "COMPLETE_STEP"][0]
    assert note in reflect.last_user
    restarted = status == "dead" or case == "sigint_ignored"
    replays = [e for e in events(done.run) if e["type"] == "kernel_replay"]
    kernels = [e for e in events(done.run) if e["type"] == "kernel"]
    assert len(replays) == int(restarted) and len(kernels) == 1 + int(restarted)
    state = json.loads((done.run / "state.json").read_text())
    assert state["counters"]["kernel_restarts"] == int(restarted)
    action = [r for r in done.requests if r.transition == "COMPLETE_ACTION"][0]
    fault_clock(f"{case}: fault cell sent to reflector asked", reflect.at - action.at)


def test_past_the_restart_budget_exit_5_then_resume_completes(tmp_path: Path, fault_clock):
    crash = {"on": True}
    with FakeLLM() as fake:

        def policy(req: Request) -> str:
            n = len(fake.by("COMPLETE_ACTION"))
            code = f"import os\nos._exit({n})" if crash["on"] else "result = 42"
            return scripted_reply(req.transition, code)

        fake.policy = policy
        done = llm_run(fake, tmp_path, "--max-kernel-restarts", "1", where="here")
        assert done.proc.returncode == 5, done.proc.stderr
        assert len(done.lines) == 1 and "--max-kernel-restarts" in done.lines[0]
        assert fsm_state(done.run) == "WORKFLOW_ABORTED"
        nbformat.validate(nbformat.read(done.run / "notebook.ipynb", as_version=4))
        second = fake.by("COMPLETE_ACTION")[-1].at
        fault_clock("second kernel death to exit 5", done.started + done.seconds - second)
        crash["on"] = False
        proc, _, _ = bcc_here("resume", str(done.run), "--max-kernel-restarts", "5", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert fsm_state(done.run) == "WORKFLOW_COMPLETED"


def test_a_cell_printing_200_mb_is_capped_and_spilled(tmp_path: Path, fault_clock):
    huge = "import sys\nfor i in range(200):\n    sys.stdout.write(('x' * 99 + '\\n') * 10_000)\n"
    with FakeLLM() as fake:
        fake.policy = first_fault_then(huge + "result = 42", fake)
        done = llm_run(fake, tmp_path, where="here")
    assert done.proc.returncode == 0, done.proc.stderr
    assert fsm_state(done.run) == "WORKFLOW_COMPLETED"
    nb = nbformat.read(done.run / "notebook.ipynb", as_version=4)
    nbformat.validate(nb)
    assert (done.run / "notebook.ipynb").stat().st_size < 1_000_000
    cell = [c for c in nb.cells if c.cell_type == "code"][-1]
    text = "".join(o["text"] for o in cell.outputs if o["output_type"] == "stream")
    assert "output truncated by bcc" in text and "logs/cells/cell-4-2.txt" in text  # action 2
    spill = done.run / "logs" / "cells" / "cell-4-2.txt"
    assert spill.stat().st_size == 200 * 10_000 * 100  # every character printed
    logged = cell_log(done.run).find("execution/cell")
    assert logged.get("status") == "ok" and "truncated" in logged.text
    action = fake.by("COMPLETE_ACTION")[0]
    reflect = fake.by("COMPLETE_STEP")[0]
    fault_clock("200 MB cell sent to reflector asked", reflect.at - action.at)
