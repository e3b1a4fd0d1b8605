"""``ShadowRun``, the verify-as-you-go kernel, against real ipykernel kernels (no mocks): its
verdicts, a rollback, ``close`` while the kernel boots or runs a long cell, a fetch that fails,
and no exit hook for a kernel a worker thread owns."""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.kernel.shadow import ShadowRun
from notebook_bcc.workflow.verify import verification_session, verify
from tests.scripted import ScriptedAgent, make_runner

pytestmark = pytest.mark.timeout(120)


def _watched(session: KernelSession, spawned: list[int]) -> KernelSession:
    """``session``, noting in ``spawned`` the pid of each kernel process its backend spawns."""
    spawn = session.backend._a_spawn  # type: ignore[attr-defined]

    async def spawn_and_note(transport: str, env: dict[str, str]) -> None:
        await spawn(transport, env)
        spawned.append(session.pid or 0)

    session.backend._a_spawn = spawn_and_note  # type: ignore[attr-defined]
    return session


class Kernels:
    """The ``make_session`` factory: real sessions, and every kernel process they spawned."""

    def __init__(self, cwd: Path, cell_timeout: float = 60) -> None:
        self.cwd, self.cell_timeout = cwd, cell_timeout
        self.sessions: list[KernelSession] = []
        self.pids: list[int] = []

    def __call__(self) -> KernelSession:
        session = _watched(
            KernelSession(self.cwd, cell_timeout=self.cell_timeout, startup_timeout=30), self.pids
        )
        self.sessions.append(session)
        return session


def _wait_for(condition: Callable[[], object], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _gone(pid: int) -> bool:
    """The process is gone, reaped too (a zombie still has its /proc entry)."""
    return not Path(f"/proc/{pid}").exists()


def _children() -> set[int]:
    """Pids of this process's child processes, zombies included."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(entry.name))
    return found


def _marker(path: Path) -> str:
    return f"open({str(path)!r}, 'w').close()"


def test_cells_submitted_in_two_batches_pass_with_their_values(tmp_path: Path) -> None:
    kernels = Kernels(tmp_path)
    registered = atexit._ncallbacks()
    shadow = ShadowRun(kernels)
    first = ((1, "x = 20\n" + _marker(tmp_path / "first")),)
    shadow.submit(first)
    _wait_for((tmp_path / "first").exists, "the first batch to run")
    # a kernel owned by a worker thread is ended by its owner: it registers no exit hook
    assert atexit._ncallbacks() == registered
    shadow.submit((*first, (3, "y = x + 1")))
    result = shadow.finish(["x", "y", "missing"], timeout=60)
    assert (result.status, result.first_failing_cell, result.error) == ("passed", None, None)
    assert result.values == {"x": 20, "y": 21}
    assert not result.verifier_failed
    assert result.ran_during_run_ms > 0
    assert len(kernels.sessions) == 1  # the second batch ran on in the same kernel
    assert shadow.stopped
    assert all(_gone(pid) for pid in kernels.pids)


def test_a_main_thread_kernel_still_registers_its_exit_hook(tmp_path: Path) -> None:
    registered = atexit._ncallbacks()  # counts registrations: an unregister leaves its slot
    with KernelSession(tmp_path, startup_timeout=30):
        assert atexit._ncallbacks() == registered + 1


def test_a_rollback_runs_the_new_cells_from_the_top(tmp_path: Path) -> None:
    kernels = Kernels(tmp_path)
    shadow = ShadowRun(kernels)
    shadow.submit(((0, "a = 1"), (2, _marker(tmp_path / "ran") + "\nb = a + 1\nleft = 1")))
    _wait_for((tmp_path / "ran").exists, "the first cells to run")
    # a rollback replaced cell 2: the new list is no extension of what ran
    shadow.submit(((0, "a = 1"), (2, "b = a + 5"), (4, "c = b * 10")))
    result = shadow.finish(["b", "c", "left"], timeout=60)
    assert result.status == "passed", result
    assert result.values == {"b": 6, "c": 60}  # nothing left by the replaced cell
    assert len(kernels.sessions) == 2  # a fresh kernel for the new list
    assert all(_gone(pid) for pid in kernels.pids)


def test_a_failing_cell_fails_the_verdict_there(tmp_path: Path) -> None:
    shadow = ShadowRun(Kernels(tmp_path))
    shadow.submit(((1, "x = 1"), (3, "print(y)"), (4, _marker(tmp_path / "after"))))
    result = shadow.finish(["x"], timeout=60)
    assert (result.status, result.first_failing_cell) == ("failed", 3)
    assert result.error == "NameError: name 'y' is not defined"
    assert not result.verifier_failed
    assert result.values == {}
    assert not (tmp_path / "after").exists()  # the cells after the failing one do not run


@pytest.mark.parametrize("when", ["at once", "once spawned"])
def test_close_while_the_kernel_boots(tmp_path: Path, when: str) -> None:
    children = _children()
    kernels = Kernels(tmp_path)
    shadow = ShadowRun(kernels)
    shadow.submit(((0, _marker(tmp_path / "ran") + "\nimport time\ntime.sleep(20)"),))
    if when == "once spawned":
        _wait_for(lambda: kernels.pids, "the kernel process")
    started = time.monotonic()
    shadow.close(timeout=10)
    assert time.monotonic() - started < 11
    assert shadow.stopped
    assert len(kernels.pids) <= 1  # not booted again (over tcp) once its first boot was cut
    assert all(_gone(pid) for pid in kernels.pids)
    assert _children() <= children  # no kernel process of it remains
    assert not (tmp_path / "ran").exists()  # and its cell never ran


@pytest.mark.slow
def test_close_during_a_long_cell_kills_it_and_starts_no_kernel(tmp_path: Path) -> None:
    kernels = Kernels(tmp_path)
    shadow = ShadowRun(kernels)
    long_cell = _marker(tmp_path / "running") + "\nimport time\ntime.sleep(20)"
    shadow.submit(((0, long_cell), (1, _marker(tmp_path / "after"))))
    _wait_for((tmp_path / "running").exists, "the long cell to run")
    started = time.monotonic()
    shadow.close(timeout=10)
    assert time.monotonic() - started < 15  # well before the cell's 20 s
    assert shadow.stopped
    assert len(kernels.sessions) == len(kernels.pids) == 1  # killed, and not restarted
    assert _gone(kernels.pids[0])
    assert kernels.sessions[0].pid is None
    assert not (tmp_path / "after").exists()


# the value's JSON conversion (``item()``, as for a numpy scalar) outlasts the fetch's timeout
_SLOW_VALUE = """
class Slow:
    ndim = 0
    def item(self):
        import time
        time.sleep(30)
        return 1
final_answers = {"q1": Slow()}
"""


@pytest.mark.slow
def test_results_the_verifier_cannot_read_fail_the_verifier_not_the_notebook(
    tmp_path: Path,
) -> None:
    runner = make_runner(tmp_path, ScriptedAgent(lambda obs: ""), verify=False)
    try:
        ctx = runner.ctx
        ctx.doc.nb.cells.append(nbformat.v4.new_code_cell(_SLOW_VALUE))
        shadow = ShadowRun(lambda: verification_session(ctx), disposable=True, fetch_timeout=1)
        ours: dict[str, Any] = {"final_answers": {"q1": 1}}
        record = verify(ctx, ours, shadow)
    finally:
        runner.store.unlock()
    assert record["status"] == "failed"
    assert record["verifier_failed"] is True
    assert record["first_failing_cell"] is None
    assert record["error"].startswith("verification kernel: could not read the results: ")
    assert "results" not in record and "mismatches" not in record  # not "results differ"
    assert shadow.stopped
