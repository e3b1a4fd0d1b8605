"""Requests to the kernel that leave no trace in the notebook.

A silent ``execute_request`` whose ``user_expressions`` do the work: the in-kernel helper's
calls (``helper_source.py``), the wait for an interrupted kernel to be idle again, and a gateway
kernel's preparation and the check that the gateway did not restart it behind our back. The
user namespace, the history and the execution count are left untouched.
"""

from __future__ import annotations

import json
import uuid
from queue import Empty
from time import monotonic
from typing import Any

from nbclient.exceptions import DeadKernelError

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel.helper_source import call_expression
from notebook_bcc.kernel.launch import KernelLaunch
from notebook_bcc.kernel.loop import run_sync
from notebook_bcc.syntax import literal

__all__ = ["KernelCalls"]


class KernelCalls(KernelLaunch):
    """Silent requests to the kernel, on top of starting and restarting it."""

    #: Seconds an interrupted kernel gets to become idle again, on top of the 4 s a kernel that
    #: honours the interrupt takes at most to answer it.
    interrupt_grace: float = 1.0

    def _silent(self, expressions: dict[str, str], timeout: float) -> dict[str, Any] | None:
        """Send a silent execute_request; return its reply content, None past the deadline."""
        client = self._running()
        return run_sync(self._a_silent)(client.kc, client.km, expressions, timeout)

    @staticmethod
    async def _a_silent(
        kc: Any, km: Any, expressions: dict[str, str], timeout: float
    ) -> dict[str, Any] | None:
        msg_id = kc.execute(
            "", silent=True, store_history=False, user_expressions=expressions, allow_stdin=False
        )
        deadline = monotonic() + timeout
        while (remaining := deadline - monotonic()) > 0:
            try:
                msg = await kc.get_shell_msg(timeout=min(1.0, remaining))
            except Empty:
                if not await km.is_alive():
                    raise DeadKernelError("Kernel died") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]
        return None

    def _await_idle(self, timeout: float) -> bool:
        try:
            return self._silent({}, timeout) is not None
        except DeadKernelError:
            return False

    def _call_helper(self, func: str, payload: Any, timeout: float) -> Any:
        """Run ``func(json payload)`` of the helper source in the kernel; return its JSON value.

        Raises TimeoutError past ``timeout`` (the kernel is interrupted, or restarted if it stays
        busy) and KernelError if the kernel died (it is restarted).
        """
        return self._call_helpers({"bcc": (func, payload)}, timeout)["bcc"]

    def _call_helpers(self, calls: dict[str, tuple[str, Any]], timeout: float) -> dict[str, Any]:
        """Several helper calls in one silent request (one round trip, which a gateway's
        kernel makes costly): key -> JSON value of ``func(payload)``."""
        expressions = {
            key: call_expression(func, payload) for key, (func, payload) in calls.items()
        }
        try:
            content = self._silent(expressions, timeout)
        except DeadKernelError:
            self._restart(now=True)
            raise KernelError("the kernel died during inspection; it was restarted") from None
        if content is None:
            client = self._running()
            assert client.km is not None
            run_sync(client.km.interrupt_kernel)()
            if not self._await_idle(self.interrupt_grace + 4):
                self._restart(now=True)
            raise TimeoutError(f"kernel inspection exceeded {timeout:g} s")
        values = {}
        for key in calls:
            result = content.get("user_expressions", {}).get(key, {})
            if result.get("status") != "ok":
                raise KernelError(
                    f"inspection failed: {result.get('ename')}: {result.get('evalue')}"
                )
            values[key] = json.loads(literal(result["data"]["text/plain"]))
        return values

    # -- a gateway kernel ----------------------------------------------------------------------

    def _prepare_remote(self) -> None:
        """Move the remote kernel into the run's working directory with the data files, and
        mark the process (a builtins attribute) so that a restart behind our back shows."""
        assert self.gateway is not None
        self._remote_mark = uuid.uuid4().hex
        setup = (
            self.gateway.setup_code(self.cwd)
            + f"\nsetattr(__import__('builtins'), '_bcc_kernel_mark', {self._remote_mark!r})"
        )
        expr = f"(lambda d: (exec({setup!r}, d), __import__('os').getcwd())[1])({{}})"
        try:
            content = self._silent({"bcc": expr}, self.startup_timeout)
        except Exception as exc:
            raise KernelError(f"kernel gateway: the remote kernel failed: {exc}") from exc
        result = (content or {}).get("user_expressions", {}).get("bcc", {})
        if result.get("status") != "ok":
            detail = f"{result.get('ename')}: {result.get('evalue')}" if result else "no reply"
            raise KernelError(f"kernel gateway: preparing the remote working directory: {detail}")

    def _restarted_remotely(self) -> bool:
        """A gateway restarts a kernel that died on its own, and nbclient does not notice
        (jupyter/nbclient#319): the mark set when it was prepared is then gone."""
        if self.gateway is None or self._client is None:
            return False
        expr = "getattr(__import__('builtins'), '_bcc_kernel_mark', '')"
        try:
            content = self._silent({"bcc": expr}, self.interrupt_grace + 5)
        except DeadKernelError:
            return True
        value = ((content or {}).get("user_expressions", {}).get("bcc") or {}).get("data", {})
        return value.get("text/plain") != repr(self._remote_mark)
