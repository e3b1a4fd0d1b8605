"""One row of a batch, done once: a ``bcc run`` (or ``bcc resume``) process of its own.

``perform`` is what an executor calls, in a thread of the batch (local) or on a Dask worker:
it looks at the row's run directory first, so that the same call skips a completed run,
resumes an aborted or killed one (also when a lost Dask worker's task is retried) and starts
a missing one. The ``bcc`` process is started with the parent-death signal SIGTERM: if the
thread's process dies (the batch killed, a worker lost), the run checkpoints, ends its kernels
and exits, and the next attempt resumes it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["RunRecord", "RunTask", "finished", "perform", "read_record", "spent", "stop_all"]

#: how long a resume waits for the lock of a run whose previous process is still exiting
LOCK_WAIT_S = 60.0
_PR_SET_PDEATHSIG = 1
#: the command a row's ``bcc`` is (the tests' ``tests.scripted_bcc`` puts its own: a ``bcc``
#: whose kernels are scripted)
BCC_COMMAND: tuple[str, ...] = (sys.executable, "-m", "notebook_bcc")
_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()


@dataclass(frozen=True)
class RunTask:
    """What one row asks for; everything in it pickles (a Dask worker receives it)."""

    id: str
    run_dir: Path
    #: ``bcc run`` arguments after ``run`` (problem, data, options; ``--out`` is added)
    run_args: tuple[str, ...]
    #: ``bcc resume`` budget options (``--max-llm-calls`` …) for an aborted run
    resume_args: tuple[str, ...] = ()
    #: USD this attempt may spend on top of what the run spent already (None: no bound)
    cost_allowance: float | None = None
    retry_failed: bool = False
    log: Path | None = None  # the bcc process's stdout and stderr, appended


@dataclass(frozen=True)
class RunRecord:
    """A row's result, read from its run directory after the attempt."""

    id: str
    #: completed | completed_with_failed_steps | failed | aborted | not_run
    status: str
    exit_code: int
    outcome: str
    action: str  # run | resume | skipped | not_run
    run_dir: str
    message: str = ""
    answers: tuple[dict[str, Any], ...] = ()
    key_results: dict[str, Any] = field(default_factory=dict)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "answers": list(self.answers)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**known, "answers": tuple(known.get("answers") or ())})


def perform(task: RunTask) -> RunRecord:
    """Skip, resume or run ``task``'s run, as its directory says; its record."""
    where = _where(task.run_dir)
    if finished(task.run_dir, task.retry_failed):
        return read_record(task.id, task.run_dir, None, "skipped", "")
    if where in ("failed", "unstarted"):  # kept beside, never deleted
        task.run_dir.rename(_aside(task.run_dir))
        where = "new"
    started = time.monotonic()
    if where == "new":
        args = ["run", *task.run_args, "--out", str(task.run_dir), *_cost(task, 0.0)]
        code, line = _bcc(args, task.log)
        action = "run"
    else:
        before = spent(task.run_dir)
        args = ["resume", str(task.run_dir), *task.resume_args, *_cost(task, before)]
        code, line = _bcc(args, task.log)
        deadline = time.monotonic() + LOCK_WAIT_S
        while code == 8 and "locked by pid" in line and time.monotonic() < deadline:
            time.sleep(1.0)  # the killed attempt's process is still checkpointing
            code, line = _bcc(args, task.log)
        action = "resume"
    record = read_record(task.id, task.run_dir, code, action, line)
    if action == "run" or record.wall_s == 0:
        return replace(record, wall_s=round(time.monotonic() - started, 2))
    return record


def stop_all(signum: int) -> None:
    """Send ``signum`` to every bcc process this process started that still runs."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)


def read_record(
    row_id: str, run_dir: Path, exit_code: int | None, action: str, line: str
) -> RunRecord:
    """The record of ``run_dir`` as it is on disk (``exit_code`` None: derived from it)."""
    state = _json(run_dir / "state.json")
    summary = _json(run_dir / "summary.json")
    final = state.get("fsm_state", "")
    outcome = summary.get("outcome") or final or "not started"
    if final == "WORKFLOW_COMPLETED":
        status = "completed" if outcome == "completed" else "completed_with_failed_steps"
    elif final == "WORKFLOW_FAILED" or not state:
        status = "failed"
    else:
        status = "aborted"
    if exit_code is None:
        exit_code = {"completed": 0, "completed_with_failed_steps": 9}.get(status, 1)
    usage, counts = summary.get("usage") or {}, summary.get("counts") or {}
    answers = tuple(
        {k: a.get(k) for k in ("question", "value", "values", "answered") if k in a}
        for a in summary.get("answers") or []
    )
    return RunRecord(
        id=row_id,
        status=status,
        exit_code=exit_code,
        outcome=outcome,
        action=action,
        run_dir=str(run_dir),
        message=line or summary.get("error") or "",
        answers=answers,
        key_results=summary.get("key_results") or {},
        llm_calls=int(counts.get("llm_calls") or 0),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cost_usd=float(usage.get("cost_usd") or 0.0),
        wall_s=float(summary.get("elapsed_s") or 0.0),
    )


def _where(run_dir: Path) -> str:
    """new | completed | failed | resumable | unstarted (files, but no checkpoint)."""
    if not run_dir.is_dir() or not any(run_dir.iterdir()):
        return "new"
    state = _json(run_dir / "state.json")
    if not state:
        return "unstarted"
    final = state.get("fsm_state")
    if final == "WORKFLOW_COMPLETED" and (run_dir / "summary.json").is_file():
        return "completed"
    return "failed" if final == "WORKFLOW_FAILED" else "resumable"


def finished(run_dir: Path, retry_failed: bool) -> bool:
    """Whether ``perform`` would only read this run (completed, or failed and not retried)."""
    where = _where(run_dir)
    return where == "completed" or (where == "failed" and not retry_failed)


def _aside(run_dir: Path) -> Path:
    n = 1
    while (moved := run_dir.with_name(f"{run_dir.name}.old-{n}")).exists():
        n += 1
    return moved


def spent(run_dir: Path) -> float:
    """USD the run in ``run_dir`` has spent so far (0 for none)."""
    usage = _json(run_dir / "state.json").get("usage") or {}
    return float(usage.get("cost_usd") or 0.0)


def _cost(task: RunTask, spent: float) -> list[str]:
    if task.cost_allowance is None:
        return []
    return ["--max-cost-usd", f"{spent + task.cost_allowance:.6f}"]


def _bcc(args: list[str], log: Path | None) -> tuple[int, str]:
    """Run ``bcc ARGS --quiet`` to its end; its exit code and last stderr line."""
    argv = [*BCC_COMMAND, *args, "--quiet"]
    with open(log or os.devnull, "ab") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.PIPE, preexec_fn=_dies_with_parent(os.getpid())
        )
        with _live_lock:
            _live.add(proc)
        try:
            _, err = proc.communicate()
        finally:
            with _live_lock:
                _live.discard(proc)
        out.write(err)
    lines = err.decode(errors="replace").strip().splitlines()
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    return code, (lines[-1] if lines else "")


def _dies_with_parent(parent: int) -> Any:
    """A ``preexec_fn`` asking Linux to send SIGTERM when the starting thread's process dies
    (none elsewhere: the batch then forwards its own signals)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:  # the parent died before the request: do as it would
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
