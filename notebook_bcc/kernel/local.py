"""``LocalBackend``: a kernel that is a local ipykernel process (ipc sockets, else tcp).

The process runs in ``cwd`` with a scrubbed environment (``processes.scrub_env``), its own
stdout/stderr going to ``log_path`` when set, launched by ``stream.py`` (which sizes its IOPub
queue) with the stream class that bounds its messages. Each process is tracked in
``processes`` while it lives, so that a hard exit can kill it. ``sandboxed.py`` runs the same
process in a bubblewrap sandbox.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import zmq
from jupyter_client import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel import processes
from notebook_bcc.kernel.backend import (
    START_ERRORS,
    ClientFactory,
    SilentRequest,
    stop_at_exit,
)
from notebook_bcc.kernel.client import StreamingClient
from notebook_bcc.kernel.loop import run_sync
from notebook_bcc.kernel.ready import ReadyKernelClient
from notebook_bcc.own_files import open_own

__all__ = ["LocalBackend"]

_OUTSTREAM = "notebook_bcc.kernel.stream.BoundedOutStream"  # bounds each stream message
_IPC_PATH_MAX = 90  # AF_UNIX paths are limited to ~107 bytes; leave room for '-ipc-N'


class _BoundedKernelManager(AsyncKernelManager):
    """Starts an ipykernel spec through ``stream.py``'s launcher (``BoundedKernelApp``)."""

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        """The spec's command, ``-m ipykernel_launcher`` (or the older ``-m ipykernel``, which
        runs the same app) swapped for bcc's launcher; any other command as it is."""
        cmd = super().format_kernel_cmd(extra_arguments)
        return [
            processes.KERNEL_LAUNCHER
            if i and cmd[i - 1] == "-m" and part in ("ipykernel_launcher", "ipykernel")
            else part
            for i, part in enumerate(cmd)
        ]


class LocalBackend:
    """A local kernel process: spawned, connected to, interrupted and stopped."""

    def __init__(
        self,
        cwd: Path,
        new_client: ClientFactory,
        *,
        kernel_name: str = "python3",
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.kernel_name = kernel_name
        self.log_path = log_path  # the kernel process's own stdout/stderr go here when set
        self.before_start: Callable[[], None] | None = None
        self._new_client = new_client
        self._env = dict(env) if env is not None else None
        self._log_file: Any = None
        self._client: StreamingClient | None = None  # spawned (maybe still booting)
        self._live: tuple[int, int] | None = None  # this kernel's entry in processes._LIVE

    sandboxed = False
    remote_id = None

    @property
    def pid(self) -> int | None:
        km = self._client.km if self._client is not None else None
        provisioner = km.provisioner if km is not None else None
        return getattr(provisioner, "pid", None) if provisioner is not None else None

    @property
    def pgid(self) -> int | None:
        """The kernel's process group id (its own group: ``pid`` as launched by jupyter)."""
        return (self._live[1] or None) if self._live is not None else None

    def launch(self) -> None:
        if self._client is not None or not self.cwd.is_dir():
            return
        try:
            run_sync(self._a_spawn)(self._transports()[0], self._kernel_env())
        except START_ERRORS:  # ``start`` tries again and says why
            run_sync(self._a_teardown)(True)
            return
        stop_at_exit(self.close)

    def start(self) -> StreamingClient:
        """Connect to the launched kernel, else start one: ipc, then tcp."""
        if self._client is not None:  # launched: wait for it, else start afresh
            try:
                run_sync(self._client.async_start_new_kernel_client)()
                return self._client
            except START_ERRORS:
                run_sync(self._a_teardown)(True)
        env = self._kernel_env()
        error: BaseException | None = None
        for transport in self._transports():
            try:
                run_sync(self._a_launch)(transport, env)
                break
            except START_ERRORS as exc:
                error = exc
                run_sync(self._a_teardown)(True)
        else:
            raise KernelError(f"kernel {self.kernel_name!r} failed to start: {error}") from error
        stop_at_exit(self.close)
        assert self._client is not None
        return self._client

    def prepare(self, silent: SilentRequest) -> None:
        """Nothing to prepare: the process was started in ``cwd``."""

    def restarted_behind(self, silent: SilentRequest, timeout: float) -> bool:
        return False  # a local kernel that dies is seen dead by nbclient

    def interrupt(self) -> None:
        if self._client is not None and self._client.km is not None:
            run_sync(self._client.km.interrupt_kernel)()

    def stop(self, *, now: bool) -> None:
        run_sync(self._a_teardown)(now)

    def close(self, *, now: bool = False) -> None:
        atexit.unregister(self.close)
        self.stop(now=now)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    # -- what the sandbox changes ---------------------------------------------------------------

    def _transports(self) -> tuple[str, ...]:
        return ("ipc", "tcp") if zmq.has("ipc") else ("tcp",)

    def _kernel_env(self) -> dict[str, str]:
        """The kernel process's environment: secrets removed."""
        return processes.scrub_env(self._env if self._env is not None else os.environ)

    def _manager_options(self, base: Path | None, env: dict[str, str]) -> dict[str, Any]:
        """``AsyncKernelManager`` keywords: the kernel spec and, for ipc, the socket paths
        under ``base``."""
        where: dict[str, Any] = {"kernel_name": self.kernel_name}
        if base is not None:
            where |= {"connection_file": f"{base}.json", "ip": f"{base}-ipc"}
        return where

    def _socket_base(self) -> Path:
        return Path(jupyter_runtime_dir()) / f"bcc-{uuid.uuid4().hex[:12]}"

    # -- the process ----------------------------------------------------------------------------

    async def _a_launch(self, transport: str, env: dict[str, str]) -> None:
        await self._a_spawn(transport, env)
        assert self._client is not None
        await self._client.async_start_new_kernel_client()

    async def _a_spawn(self, transport: str, env: dict[str, str]) -> None:
        """Start the kernel process (not waiting for it to answer)."""
        if self.before_start is not None:
            self.before_start()
        base = None
        if transport == "ipc":  # absolute socket paths; a relative default breaks with cwd
            base = self._socket_base()
            if len(str(base)) > _IPC_PATH_MAX:
                raise OSError(f"ipc socket path too long: {base}")
            base.parent.mkdir(parents=True, exist_ok=True)
        where = self._manager_options(base, env)
        km = _BoundedKernelManager(transport=transport, client_factory=ReadyKernelClient, **where)
        client = self._new_client(km, [f"--IPKernelApp.outstream_class={_OUTSTREAM}"])
        self._client = client
        streams: dict[str, Any] = {}
        if self.log_path is not None:
            if self._log_file is None:
                fd, _ = open_own(self.log_path, os.O_WRONLY | os.O_APPEND, self.cwd)  # no link
                self._log_file = open(fd, "ab")  # noqa: SIM115 - kept for the kernel's life
            streams = {"stdout": self._log_file, "stderr": self._log_file}
        await client.async_start_new_kernel(cwd=str(self.cwd), env=env, **streams)
        pid = getattr(km.provisioner, "pid", None)
        if pid:
            pgid = getattr(km.provisioner, "pgid", None)
            with contextlib.suppress(OSError):
                pgid = pgid or os.getpgid(pid)
            self._live = (pid, pgid or 0)
            processes.track(self._live)

    async def _a_teardown(self, now: bool) -> None:
        client, self._client = self._client, None
        live, self._live = self._live, None
        if client is not None:
            await processes.stop(client, now)
        if live is not None:  # an interrupted teardown leaves it for kill_live_kernels()
            processes.untrack(live)
