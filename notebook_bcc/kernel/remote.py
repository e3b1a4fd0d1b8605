"""``GatewayBackend``: a kernel on a Jupyter Kernel Gateway or Enterprise Gateway.

The kernel is asked for through ``Gateway.manager`` (``gateway.py``: the REST and websocket
side). ``launch`` asks for it in a thread of its own (the gateway takes 0.3-1 s), ``start``
takes that one or asks anew. After each start, ``prepare`` moves the kernel into the run's
working directory there (``Gateway.setup_code``) and marks its process (a builtins
attribute): a gateway restarts a kernel that died on its own and nbclient does not notice
(jupyter/nbclient#319), so a missing mark is how ``restarted_behind`` sees it. ``close``
has the kernel remove that directory (``Gateway.cleanup_code``) unless the gateway keeps
files; a restart does not, the new kernel works in the same directory.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from nbclient.exceptions import DeadKernelError

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel import processes
from notebook_bcc.kernel.backend import ClientFactory, SilentRequest, stop_at_exit
from notebook_bcc.kernel.client import StreamingClient
from notebook_bcc.kernel.gateway import (
    CLEANUP_NOW_S,
    CLEANUP_TIMEOUT_S,
    REQUEST_TIMEOUT_S,
    Gateway,
    run_quietly,
)
from notebook_bcc.kernel.loop import run_sync

__all__ = ["GatewayBackend"]

_MARK = "getattr(__import__('builtins'), '_bcc_kernel_mark', '')"


class GatewayBackend:
    """A kernel on ``gateway``, working in the run's directory there."""

    sandboxed = False
    pid = None
    pgid = None

    def __init__(
        self,
        cwd: Path,
        new_client: ClientFactory,
        *,
        gateway: Gateway,
        kernel_name: str = "python3",
        startup_timeout: float = 60,
    ) -> None:
        self.cwd = Path(cwd)
        self.gateway = gateway
        self.kernel_name = kernel_name
        self.startup_timeout = startup_timeout
        self.before_start: Callable[[], None] | None = None
        self._new_client = new_client
        self._client: StreamingClient | None = None
        #: a kernel ``launch`` is asking for in a thread: its client, or what went wrong
        self._launching: concurrent.futures.Future[StreamingClient] | None = None
        self._mark = ""  # set in the kernel's builtins when it was prepared

    @property
    def remote_id(self) -> str | None:
        """The kernel's id on the gateway."""
        if self._client is None or self._client.km is None:
            return None
        return getattr(self._client.km, "kernel_id", None)

    def launch(self) -> None:
        if self._client is not None or self._launching is not None or not self.cwd.is_dir():
            return
        self._launching = future = concurrent.futures.Future()
        threading.Thread(
            target=self._launch_in_thread, args=(future,), name="bcc-gateway-launch", daemon=True
        ).start()

    def start(self) -> StreamingClient:
        try:
            self._client = self._launched() or run_sync(self._a_client)()
        except Exception as exc:
            self.stop(now=True)
            raise KernelError(
                f"kernel gateway {self.gateway.url}: could not start a kernel: {exc}"
            ) from exc
        stop_at_exit(self.close)
        return self._client

    def prepare(self, silent: SilentRequest) -> None:
        """Move the kernel into the run's working directory with the data files, and mark it."""
        self._mark = uuid.uuid4().hex
        setup = (
            self.gateway.setup_code(self.cwd)
            + f"\nsetattr(__import__('builtins'), '_bcc_kernel_mark', {self._mark!r})"
        )
        expr = f"(lambda d: (exec({setup!r}, d), __import__('os').getcwd())[1])({{}})"
        try:
            content = silent({"bcc": expr}, self.startup_timeout)
        except Exception as exc:
            raise KernelError(f"kernel gateway: the remote kernel failed: {exc}") from exc
        result = (content or {}).get("user_expressions", {}).get("bcc", {})
        if result.get("status") != "ok":
            detail = f"{result.get('ename')}: {result.get('evalue')}" if result else "no reply"
            raise KernelError(f"kernel gateway: preparing the remote working directory: {detail}")

    def restarted_behind(self, silent: SilentRequest, timeout: float) -> bool:
        if self._client is None:
            return False
        try:
            content = silent({"bcc": _MARK}, timeout)
        except DeadKernelError:
            return True
        value = ((content or {}).get("user_expressions", {}).get("bcc") or {}).get("data", {})
        return value.get("text/plain") != repr(self._mark)

    def interrupt(self) -> None:
        if self._client is not None and self._client.km is not None:
            run_sync(self._client.km.interrupt_kernel)()

    def stop(self, *, now: bool) -> None:
        client, self._client = self._client, None
        if client is not None:
            run_sync(processes.stop)(client, now)

    def close(self, *, now: bool = False) -> None:
        atexit.unregister(self.close)
        launched = self._launched()  # a kernel still being asked for: waited for
        if launched is not None:
            run_sync(processes.stop)(launched, True)
        self._remove_workdir(now)
        self.stop(now=now)

    def _remove_workdir(self, now: bool) -> None:
        """The prepared kernel's last request: leave its working directory and remove it.
        Best effort: a kernel that is gone, or still busy after a few seconds when shut down
        ``now``, leaves it."""
        client = self._client
        if self.gateway.keep_files or not self._mark or client is None:
            return
        self._mark = ""
        if client.kc is not None:
            timeout = CLEANUP_NOW_S if now else CLEANUP_TIMEOUT_S
            run_sync(run_quietly)(client.kc, self.gateway.cleanup_code(self.cwd), timeout)

    def _launch_in_thread(self, future: concurrent.futures.Future[StreamingClient]) -> None:
        """``launch``'s thread: ask for a kernel and connect to it, on an event loop of this
        thread's own; the client (or the error) goes to ``future``."""
        try:
            future.set_result(run_sync(self._a_client)())
        except BaseException as exc:  # noqa: BLE001 - handed whole to ``start`` via the future
            future.set_exception(exc)

    def _launched(self) -> StreamingClient | None:
        """The client ``launch`` connected in its thread (waited for), None if it failed."""
        future, self._launching = self._launching, None
        if future is None:
            return None
        try:
            return future.result(timeout=self.startup_timeout + REQUEST_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - gateway and tornado errors alike: ``start`` retries and says why
            return None

    async def _a_client(self) -> StreamingClient:
        """A kernel asked for on the gateway and connected to; removed again if the
        connection fails."""
        client = self._new_client(self.gateway.manager(self.kernel_name), [])
        await client.async_start_new_kernel()
        try:
            await client.async_start_new_kernel_client()
        except BaseException:
            await processes.stop(client, True)
            raise
        return client
