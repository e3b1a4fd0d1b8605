"""The kernel processes of this bcc: which are alive, how to kill them, and the environment
they start with (secrets removed)."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from notebook_bcc.redaction import SECRET_PATTERNS

__all__ = [
    "KERNEL_LAUNCHER",
    "SECRET_PATTERNS",
    "kill_kernel",
    "kill_live_kernels",
    "live_kernels",
    "process_start_time",
    "reap_kernels",
    "scrub_env",
    "stop",
    "track",
    "untrack",
]


#: the module bcc starts ipykernel with (``stream.py``: ipykernel_launcher with its IOPub queue)
KERNEL_LAUNCHER = "notebook_bcc.kernel.stream"
#: what a kernel's command line names: a pid reused by another program names none of these
_KERNEL_MARKS = (b"ipykernel", KERNEL_LAUNCHER.encode(), b"bwrap")

# (pid, pgid) of the kernels started by any KernelSession of this process and not yet shut down
_LIVE: set[tuple[int, int]] = set()


def live_kernels() -> tuple[tuple[int, int], ...]:
    """(pid, process group id) of this process's running kernels."""
    return tuple(_LIVE)


def _sigkill(pid: int, pgid: int) -> bool:
    """SIGKILL a kernel's process group (never our own), else its pid; False if neither went.

    Safe in a signal handler: no locks, no asyncio, no logging.
    """
    if pgid > 0 and pgid != os.getpgrp():
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
            return True
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return False
    return True


def kill_kernel(pid: int, pgid: int) -> bool:
    """SIGKILL one kernel (its process group when it has its own); False if it was gone."""
    return _sigkill(pid, pgid)


def kill_live_kernels() -> None:
    """SIGKILL every live kernel of this process; for a hard exit (signal-handler safe).

    Sessions are left as they are.
    """
    for pid, pgid in tuple(_LIVE):
        _sigkill(pid, pgid)


def process_start_time(pid: int) -> int | None:
    """When ``pid`` started (field 22 of ``/proc/<pid>/stat``, in clock ticks since boot);
    None when there is no such process. With the pid it names one process: pids are reused,
    a (pid, start time) pair is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) ", state is field 3
    try:
        return int(fields[22 - 3])
    except (IndexError, ValueError):
        return None


def reap_kernels(recorded: Sequence[tuple[int, int | None]]) -> list[int]:
    """SIGKILL recorded kernels, (pid, start time), still running; return the pids killed.

    A pid counts only while its start time is the recorded one and its command line names
    ipykernel, bcc's launcher or bwrap (pids are reused; a record without a start time counts
    for nothing). Its process group goes with it only when the pid leads that group: a group
    id is never read from a record.
    """
    reaped = []
    for pid, started in recorded:
        if not isinstance(pid, int) or pid <= 1 or not isinstance(started, int):
            continue
        if pid == os.getpid() or process_start_time(pid) != started:
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            leads_group = os.getpgid(pid) == pid
        except OSError:
            continue
        if not any(mark in cmdline for mark in _KERNEL_MARKS):
            continue
        if process_start_time(pid) == started and _sigkill(pid, pid if leads_group else 0):
            reaped.append(pid)
    return reaped


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """Return ``env`` without variables whose name matches ``SECRET_PATTERNS`` (any case)."""
    patterns = [p.upper() for p in SECRET_PATTERNS]
    return {
        k: v for k, v in env.items() if not any(fnmatch.fnmatchcase(k.upper(), p) for p in patterns)
    }


async def stop(client: Any, now: bool) -> None:
    """Stop a NotebookClient's kernel: channels, then shutdown (``now`` or graceful, then
    immediate), then SIGKILL to its process group if the provisioner lost track of it."""
    km, kc = client.km, client.kc
    if kc is not None:
        kc.stop_channels()
    if km is None or not km.has_kernel:
        return
    pid = getattr(km.provisioner, "pid", None)
    for immediate in (now, True):
        with contextlib.suppress(Exception):
            await km.shutdown_kernel(now=immediate)
        with contextlib.suppress(Exception):
            if not await km.is_alive():
                return
    if pid:  # last resort: the provisioner lost track of the process
        with contextlib.suppress(OSError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)


def track(live: tuple[int, int]) -> None:
    """A kernel (pid, pgid) this process started."""
    _LIVE.add(live)


def untrack(live: tuple[int, int]) -> None:
    _LIVE.discard(live)
