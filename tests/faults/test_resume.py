"""Resume's promises: the run lock, a reply never paid for twice, no orphan kernel, and a
checkpoint from another schema refused with a remedy.

These are the workflow's bookkeeping, not the kernel's: the run that holds the lock or is
killed is ``bcc`` in a process of its own with scripted kernels (``tests/scripted_bcc.py``), and
what follows runs in this process (``tests/inprocess.py``). That no kernel outlives a killed bcc
is the fault matrix's and test_kill_resume's, on real kernels; the reaping of a kernel left
behind is tested here on a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_bcc.kernel.processes import process_start_time
from notebook_bcc.rundir.store import RunStore
from notebook_bcc.workflow.session import reap_orphan_kernels
from tests.conftest import ROOT
from tests.fakellm import FakeLLM
from tests.faults.test_kill_resume import _alive, _data, _wait
from tests.inprocess import bcc_in_process
from tests.integration.test_llm import MODEL, _env, bcc_scripted, inputs
from tests.scripted_bcc import COMMAND

pytestmark = pytest.mark.slow  # whole runs of bcc, killed and resumed

SCRIPTED_BCC = COMMAND  # bcc, its kernels scripted


def test_a_live_run_is_locked_against_resume_and_run_out(tmp_path: Path):
    problem, data = _data(tmp_path)
    run, mark = tmp_path / "run", tmp_path / "paused"
    env = {**os.environ, "BCC_FAILPOINTS": "agent@3=pause", "BCC_FAILPOINTS_MARK": str(mark)}
    args = [*SCRIPTED_BCC, "run", str(problem), str(data), "--out", str(run), "--quiet",
            "--no-verify"]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    try:
        assert _wait(mark.exists, 60)
        for second in (["resume", str(run)], ["run", str(problem), str(data), "--out", str(run)]):
            other = bcc_in_process(*second, "--quiet")
            assert other.returncode == 8, other.stderr
            lines = other.stderr.strip().splitlines()
            assert len(lines) == 1 and f"locked by pid {proc.pid}" in lines[0], lines
    finally:
        proc.kill()
        proc.wait(10)
    resumed = bcc_in_process("resume", str(run), "--quiet")  # the lock died with its holder
    assert resumed.returncode == 0, resumed.stderr[-2000:]


def test_a_reply_received_before_a_crash_is_reused_not_paid_twice(tmp_path: Path):
    """SIGKILL after START_WORKFLOW's reply was recorded, before the transition committed."""
    with FakeLLM() as fake:
        problem, data = inputs(tmp_path)
        trace = tmp_path / "trace.txt"
        run, mark = tmp_path / "run", tmp_path / "paused"
        env = {**_env(), "BCC_FAILPOINTS_TRACE": str(trace), "BCC_FAILPOINTS_MARK": str(mark)}
        # the transition's log is written after pending_reply.json, before the commit
        env["BCC_FAILPOINTS"] = "write:0001_START_WORKFLOW.pending.xml@1=pause"
        args = [
            *SCRIPTED_BCC, "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
            "--out", str(run), "--quiet", "--no-verify",
        ]  # fmt: skip
        before = len(fake.requests)
        killed = subprocess.Popen(args, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
        try:
            assert _wait(mark.exists, 60)
        finally:
            killed.kill()
            killed.wait(10)
        writes = [x for x in trace.read_text().splitlines() if x.startswith("write ")]
        names = [Path(x.split(" ", 2)[2]).name for x in writes]
        assert "pending_reply.json" in names and "state.json" not in names, names
        assert names[-1] == "0001_START_WORKFLOW.pending.xml", names
        assert json.loads((run / "state.json").read_text())["seq"] == 0
        resumed, _, _ = bcc_scripted("resume", str(run), "--quiet")
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        asked = [r.transition for r in fake.requests[before:]]
    assert asked.count("START_WORKFLOW") == 1  # asked once, before the kill
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in events if e["type"] == "reply_reused"] == [1]
    assert not (run / "pending_reply.json").exists()


def test_resume_kills_a_kernel_left_behind(tmp_path: Path):
    """A process whose command line says ipykernel, recorded as the run's kernel with its
    start time, is reaped."""
    orphan = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "ipykernel"],
        start_new_session=True,
    )
    try:
        store = RunStore(tmp_path)
        started = process_start_time(orphan.pid)
        store.append_event({"type": "kernel", "pid": orphan.pid, "pgid": 1})  # no start time
        assert reap_orphan_kernels(store) == []  # an older bcc's line (or a forged one)
        store.append_event(
            {"type": "kernel", "pid": orphan.pid, "pgid": orphan.pid, "started": started}
        )
        mine = process_start_time(os.getpid())
        store.append_event({"type": "kernel", "pid": os.getpid(), "started": mine})
        assert reap_orphan_kernels(store) == [orphan.pid]  # our own pid is no kernel: spared
        orphan.wait(5)
        assert orphan.returncode == -signal.SIGKILL
    finally:
        if orphan.poll() is None:
            orphan.kill()
    assert not _alive(orphan.pid)


def test_a_checkpoint_of_another_schema_is_refused_with_a_remedy(tmp_path: Path):
    problem, data = _data(tmp_path)
    run = tmp_path / "run"
    done = bcc_in_process(
        "run", str(problem), str(data), "--out", str(run), "--quiet", "--no-verify"
    )
    assert done.returncode == 0
    state = json.loads((run / "state.json").read_text())
    (run / "state.json").write_text(json.dumps({**state, "schema_version": 99}))
    proc = bcc_in_process("resume", str(run))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "schema_version 99" in lines[0] and "fix:" in lines[0]
