"""Starting a kernel where it lives, and stopping it.

A kernel is a local ipykernel process (ipc sockets, else tcp), the same in a bubblewrap sandbox
(``sandbox.py``), or a kernel on a Jupyter gateway (``gateway.py``). ``KernelLaunch`` starts
it, connects an nbclient ``StreamingClient`` to it, and tears it down again; ``KernelSession``
(``session.py``) builds the rest on top.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import nbformat
import zmq
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import NoSuchKernel
from jupyter_core.paths import jupyter_runtime_dir

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel import processes
from notebook_bcc.kernel.gateway import (
    CLEANUP_NOW_S,
    CLEANUP_TIMEOUT_S,
    REQUEST_TIMEOUT_S,
    Gateway,
    run_quietly,
)
from notebook_bcc.kernel.loop import run_sync
from notebook_bcc.kernel.outputs import StreamingClient
from notebook_bcc.kernel.ready import ReadyKernelClient
from notebook_bcc.kernel.records import KernelEnvironment
from notebook_bcc.kernel.sandbox import SPEC_NAME, Sandbox, SandboxLimits, sandbox_env
from notebook_bcc.own_files import open_own

__all__ = ["KernelLaunch", "START_ERRORS"]

#: What starting a local kernel raises when it fails (jupyter_client, zmq, the process).
START_ERRORS = (
    RuntimeError,
    OSError,
    TimeoutError,
    asyncio.TimeoutError,
    zmq.ZMQError,
    NoSuchKernel,
)

_OUTSTREAM = "notebook_bcc.kernel.stream.BoundedOutStream"  # bounds each stream message
_IPC_PATH_MAX = 90  # AF_UNIX paths are limited to ~107 bytes; leave room for '-ipc-N'


#: Seconds nbclient reads a cell's remaining outputs after its reply, until the kernel is idle
#: (its default). On a loaded one-core machine that cut the end of a progress bar's 3,000
#: updates, which had been sent and were still queued; ``StreamingClient.finish_outputs``
#: now reads on after it while they keep coming (each within ``LATE_OUTPUT_GAP_S``).
IOPUB_DRAIN_S = 4
LATE_OUTPUT_GAP_S = 15.0


class KernelLaunch:
    """A kernel's life: launched, connected to (``start``), restarted and shut down.

    ``start`` here only connects; ``KernelSession.start`` extends it to prepare the kernel, and
    every (re)start goes through that.
    """

    def __init__(
        self,
        cwd: Path,
        *,
        cell_timeout: float = 600,
        startup_timeout: float = 60,
        output_cap_chars: int = 20_000,
        excerpt_chars: int = 2_000,
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        kernel_name: str = "python3",
        spill_dir: Path | None = None,
        sandbox: SandboxLimits | None = None,
        gateway: Gateway | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.cell_timeout = cell_timeout
        self.startup_timeout = startup_timeout
        self.output_cap_chars = output_cap_chars
        self.excerpt_chars = excerpt_chars
        self.kernel_name = kernel_name
        self.restarts = 0
        #: Run the kernel in a bubblewrap sandbox (``sandbox.py``) under these limits: no
        #: network, nothing of the host, read-only filesystem but ``cwd/outputs`` and a private
        #: /tmp. None: unconfined. Needs the ipc transport.
        self.sandbox = sandbox
        #: Start the kernel through this Jupyter gateway instead of locally (``gateway.py``).
        self.gateway = gateway
        self._sockets: Path | None = None  # a sandboxed kernel's own connection directory
        self._remote_mark = ""  # set in a gateway kernel's builtins when it was prepared
        self._env = dict(env) if env is not None else None
        self.log_path = log_path  # the kernel process's own stdout/stderr go here when set
        # Where a cell's full stream text goes when it passes ``output_cap_chars``:
        # ``spill_dir / f"cell-{spill_name}.txt"`` for ``run_cell(..., spill_name=...)``, named in
        # the truncation marker (relative to ``cwd`` when inside it). None: the rest is dropped.
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self._log_file: Any = None
        self._client: StreamingClient | None = None
        #: a gateway kernel ``launch`` is starting in a thread: its client, or what went wrong
        self._remote_launch: concurrent.futures.Future[StreamingClient] | None = None
        #: the client is connected (implies ``_client``; a ``launch``-ed kernel may still boot)
        self._ready = False
        self._live: tuple[int, int] | None = None  # this kernel's entry in processes._LIVE
        self._last_reply: dict[str, Any] | None = None
        #: Called before each kernel (re)start and each process spawn; raising refuses it
        #: (``ShadowRun`` starts nothing once it is closed).
        self.before_start: Callable[[], None] | None = None
        #: the kernel's Python and analysis packages, read once it started (None: not read)
        self.environment: KernelEnvironment | None = None
        #: modules the problem names, whose presence the environment also reports
        self.named_modules: tuple[str, ...] = ()

    def launch(self) -> None:
        """Start the kernel and return without waiting for it, so that it boots while the
        caller works; ``start`` (or the first cell) waits for it. A local kernel's process is
        spawned; a gateway kernel is asked for and connected to in a thread of its own (the
        gateway takes 0.3-1 s). A no-op for a kernel already launched; a failure here is left
        to ``start`` to retry and report."""
        if self._client is not None or self._remote_launch is not None or not self.cwd.is_dir():
            return
        if self.gateway is not None:
            self._remote_launch = future = concurrent.futures.Future()
            threading.Thread(
                target=self._launch_remote_in_thread,
                args=(future,),
                name="bcc-gateway-launch",
                daemon=True,
            ).start()
            return
        try:
            run_sync(self._a_spawn)(self._transports()[0], self._kernel_env())
        except START_ERRORS:  # ``start`` tries again and says why
            run_sync(self._a_teardown)(True)
            return
        if threading.current_thread() is threading.main_thread():  # else its thread ends it
            atexit.unregister(self.shutdown)
            atexit.register(self.shutdown)

    def start(self) -> None:
        """Start the kernel and connect to it (no-op when connected). Tries ipc, then tcp.
        Raises KernelError."""
        if self._ready:
            return
        if self.before_start is not None:
            self.before_start()
        if not self.cwd.is_dir():
            raise KernelError(f"kernel working directory does not exist: {self.cwd}")
        if self.gateway is not None:
            self._start_remote()
        elif self._client is not None:  # launched: wait for it, else start afresh
            try:
                run_sync(self._client.async_start_new_kernel_client)()
            except START_ERRORS:
                run_sync(self._a_teardown)(True)
                self._start_local()
        else:
            self._start_local()
        self._ready = True

    def _transports(self) -> tuple[str, ...]:
        if self.sandbox is not None:  # no network inside: ipc sockets in a directory bound into it
            return ("ipc",)
        return ("ipc", "tcp") if zmq.has("ipc") else ("tcp",)

    @property
    def sandboxed(self) -> bool:
        return self.sandbox is not None

    def _kernel_env(self) -> dict[str, str]:
        """The kernel process's environment: secrets removed; for ``bwrap``, only what the
        sandboxed kernel itself gets (the sandbox's pid 1 keeps ``bwrap``'s)."""
        env = processes.scrub_env(self._env if self._env is not None else os.environ)
        return sandbox_env(env) if self.sandbox is not None else env

    def _start_local(self) -> None:
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
        if threading.current_thread() is threading.main_thread():  # else its thread ends it
            atexit.unregister(self.shutdown)
            atexit.register(self.shutdown)

    def _launch_remote_in_thread(self, future: concurrent.futures.Future[StreamingClient]) -> None:
        """``launch``'s thread: ask the gateway for a kernel and connect to it, on an event loop
        of this thread's own; the client (or the error) goes to ``future``."""
        try:
            future.set_result(run_sync(self._a_remote_client)())
        except BaseException as exc:  # noqa: BLE001 - handed whole to ``start`` via the future
            future.set_exception(exc)

    def _launched_remote(self) -> StreamingClient | None:
        """The client ``launch`` connected in its thread (waited for), None if it failed."""
        future, self._remote_launch = self._remote_launch, None
        if future is None:
            return None
        try:
            return future.result(timeout=self.startup_timeout + REQUEST_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - gateway and tornado errors alike: ``start`` retries and says why
            return None

    def _start_remote(self) -> None:
        """Start a kernel through the gateway (or take the one ``launch`` started) and connect
        to it; ``KernelSession.start`` then moves it into the run's working directory there.
        Raises KernelError."""
        assert self.gateway is not None
        try:
            self._client = self._launched_remote() or run_sync(self._a_remote_client)()
        except Exception as exc:
            run_sync(self._a_teardown)(True)
            raise KernelError(
                f"kernel gateway {self.gateway.url}: could not start a kernel: {exc}"
            ) from exc
        if threading.current_thread() is threading.main_thread():  # else its thread ends it
            atexit.unregister(self.shutdown)
            atexit.register(self.shutdown)

    async def _a_remote_client(self) -> StreamingClient:
        """A kernel asked for on the gateway and connected to; removed again if the
        connection fails."""
        assert self.gateway is not None
        client = self._new_client(self.gateway.manager(self.kernel_name), [])
        await client.async_start_new_kernel()
        try:
            await client.async_start_new_kernel_client()
        except BaseException:
            await processes.stop(client, True)
            raise
        return client

    def _new_client(self, km: Any, extra_arguments: list[str]) -> StreamingClient:
        return StreamingClient(
            nbformat.v4.new_notebook(),
            km=km,
            timeout_func=lambda _cell: self.cell_timeout or None,
            interrupt_on_timeout=True,
            # Makes nbclient stop waiting right after the interrupt; its reply has no header.
            error_on_timeout={"ename": "TimeoutError", "evalue": "", "traceback": []},
            allow_errors=True,
            startup_timeout=max(1, round(self.startup_timeout)),
            record_timing=False,
            iopub_timeout=IOPUB_DRAIN_S,
            coalesce_streams=False,  # its \r regex is quadratic on long lines; see merge_streams
            on_cell_executed=self._on_cell_executed,
            extra_arguments=extra_arguments,
        )

    async def _a_launch(self, transport: str, env: dict[str, str]) -> None:
        await self._a_spawn(transport, env)
        assert self._client is not None
        await self._client.async_start_new_kernel_client()

    async def _a_spawn(self, transport: str, env: dict[str, str]) -> None:
        """Start the kernel process (not waiting for it to answer)."""
        if self.before_start is not None:
            self.before_start()
        where: dict[str, Any] = {"kernel_name": self.kernel_name}
        if transport == "ipc":  # absolute socket paths; a relative default breaks with cwd
            base = Path(jupyter_runtime_dir()) / f"bcc-{uuid.uuid4().hex[:12]}"
            if self.sandbox is not None:  # its own directory: the sandbox sees no other kernel's
                self._sockets = base  # keys; the spec lives beside it, out of the kernel's reach
                base = base / "k"
            if len(str(base)) > _IPC_PATH_MAX:
                raise OSError(f"ipc socket path too long: {base}")
            base.parent.mkdir(parents=True, exist_ok=True)
            where |= {"connection_file": f"{base}.json", "ip": f"{base}-ipc"}
        if self._sockets is not None and self.sandbox is not None:
            spec_dir = self._sockets.with_name(f"{self._sockets.name}-spec")
            sandbox = Sandbox(self.cwd.resolve(), self._sockets, spec_dir, self.sandbox)
            where |= {
                "kernel_name": SPEC_NAME,
                "kernel_spec_manager": sandbox.spec_manager(self.kernel_name, env),
            }
        km = AsyncKernelManager(transport=transport, client_factory=ReadyKernelClient, **where)
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

    def _on_cell_executed(self, cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        self._last_reply = execute_reply

    def shutdown(self, *, now: bool = False) -> None:
        """Stop the kernel; idempotent. ``now``: kill it at once instead of asking it to exit
        (what is running is lost). A graceful shutdown falls back to a kill."""
        atexit.unregister(self.shutdown)
        launched = self._launched_remote()  # a gateway kernel still being asked for: waited for
        if launched is not None:
            run_sync(processes.stop)(launched, True)
        self._remove_remote_workdir(now)
        run_sync(self._a_teardown)(now)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _remove_remote_workdir(self, now: bool) -> None:
        """A prepared gateway kernel's last request: leave its working directory there and
        remove it (``Gateway.cleanup_code``), unless the gateway keeps files. Best effort: a
        kernel that is gone, or still busy after a few seconds when shut down ``now``, leaves
        it. A restart does not come here: the new kernel works in the same directory."""
        gateway, client = self.gateway, self._client
        if gateway is None or gateway.keep_files or not self._remote_mark or client is None:
            return
        self._remote_mark = ""
        if client.kc is not None:
            timeout = CLEANUP_NOW_S if now else CLEANUP_TIMEOUT_S
            run_sync(run_quietly)(client.kc, gateway.cleanup_code(self.cwd), timeout)

    async def _a_teardown(self, now: bool) -> None:
        client, self._client = self._client, None
        self._ready = False
        live, self._live = self._live, None
        if client is not None:
            await processes.stop(client, now)
        if live is not None:  # an interrupted teardown leaves it for kill_live_kernels()
            processes.untrack(live)
        sockets, self._sockets = self._sockets, None
        if sockets is not None:
            shutil.rmtree(sockets, ignore_errors=True)
            shutil.rmtree(sockets.with_name(f"{sockets.name}-spec"), ignore_errors=True)

    def restart(self) -> None:
        """Replace the kernel by a fresh one (empty namespace, execution count 1)."""
        self._restart(now=False)

    def _restart(self, *, now: bool) -> None:
        run_sync(self._a_teardown)(now)
        self.restarts += 1
        self.start()

    def _running(self) -> StreamingClient:
        if not self._ready:
            self.start()
        assert self._client is not None
        return self._client
