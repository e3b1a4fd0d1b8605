"""Where a kernel lives: the ``KernelBackend`` a ``KernelSession`` is given.

Like jupyter_client's provisioner beside its manager: ``KernelSession`` (``session.py``) runs
cells and asks the kernel things; a backend starts, connects, interrupts and stops the kernel
wherever it lives, and knows its process (pid, process group) or remote id and its working
directory. One module each: ``local.py`` (a local ipykernel process), ``sandboxed.py`` (the
same in a bubblewrap sandbox) and ``remote.py`` (a kernel on a Jupyter gateway).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import zmq
from jupyter_client.kernelspec import NoSuchKernel

from notebook_bcc.kernel.client import StreamingClient

__all__ = ["START_ERRORS", "ClientFactory", "KernelBackend", "SilentRequest", "stop_at_exit"]

#: What starting a local kernel raises when it fails (jupyter_client, zmq, the process).
START_ERRORS = (
    RuntimeError,
    OSError,
    TimeoutError,
    asyncio.TimeoutError,
    zmq.ZMQError,
    NoSuchKernel,
)

#: ``(kernel manager, the kernel's extra arguments)`` -> the client that drives it
ClientFactory = Callable[[Any, list[str]], StreamingClient]
#: ``(user_expressions, timeout)`` -> the reply's content, None past the deadline
SilentRequest = Callable[[dict[str, str], float], "dict[str, Any] | None"]


class KernelBackend(Protocol):
    """A kernel's life where it lives. Every (re)start goes through ``start``; a restart is
    ``stop`` then ``start``; ``close`` is the end."""

    cwd: Path
    #: Called before each kernel start and process spawn; raising refuses it.
    before_start: Callable[[], None] | None

    @property
    def sandboxed(self) -> bool: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def pgid(self) -> int | None: ...
    @property
    def remote_id(self) -> str | None: ...

    def launch(self) -> None:
        """Start the kernel without waiting for it; a failure is left to ``start``."""

    def start(self) -> StreamingClient:
        """The kernel started (or the launched one waited for) and connected. KernelError."""

    def prepare(self, silent: SilentRequest) -> None:
        """After each start, before any cell: make the kernel's working directory."""

    def restarted_behind(self, silent: SilentRequest, timeout: float) -> bool:
        """Whether the kernel was replaced without bcc asking (its namespace is gone)."""

    def interrupt(self) -> None:
        """Interrupt what the kernel is running."""

    def stop(self, *, now: bool) -> None:
        """Stop the kernel (``now``: kill it at once); ``start`` may follow."""

    def close(self, *, now: bool) -> None:
        """Stop the kernel and release everything it had; idempotent."""


def stop_at_exit(shutdown: Callable[[], None]) -> None:
    """Have ``shutdown`` run at exit, once, when the main thread started the kernel (a
    branch's thread ends its own)."""
    if threading.current_thread() is threading.main_thread():
        atexit.unregister(shutdown)
        atexit.register(shutdown)
