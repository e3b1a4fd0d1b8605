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

__all__ = [
    "SECRET_PATTERNS",
    "kill_kernel",
    "kill_live_kernels",
    "live_kernels",
    "reap_kernels",
    "scrub_env",
    "stop",
    "track",
    "untrack",
]

SECRET_PATTERNS: tuple[str, ...] = (
    "*_API_KEY", "*_APIKEY", "*_TOKEN", "*_SECRET", "*_SECRET_KEY", "*_PASSWORD", "*_PASSWD",
    "*_ACCESS_KEY", "*_PRIVATE_KEY", "*_CREDENTIALS", "*_KEY_ID", "AWS_*", "OPENAI_*",
    "ANTHROPIC_*", "AZURE_OPENAI_*", "GEMINI_*", "GOOGLE_API_*", "GROQ_*", "MISTRAL_*",
    "COHERE_*", "TOGETHER_*", "HF_*", "HUGGINGFACE_*", "LITELLM_*", "OPENROUTER_*",
    "DEEPSEEK_*", "XAI_*",
)  # fmt: skip


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


def reap_kernels(recorded: Sequence[tuple[int, int]]) -> list[int]:
    """SIGKILL recorded (pid, pgid) kernels still running; return the pids killed.

    A pid counts only while its command line still names ipykernel (pids are reused).
    """
    reaped = []
    for pid, pgid in recorded:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"ipykernel" in cmdline and _sigkill(pid, pgid):
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
