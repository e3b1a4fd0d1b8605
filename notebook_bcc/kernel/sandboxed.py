"""``SandboxedBackend``: a local kernel process confined by bubblewrap (``sandbox.py``).

No network inside, so ipc sockets only, in a directory of the kernel's own (bound into the
sandbox: it sees no other kernel's keys), its kernel spec beside that directory and out of
the kernel's reach; only the allowed part of the environment goes in (``sandbox_env``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from notebook_bcc.kernel.local import LocalBackend
from notebook_bcc.kernel.sandbox import SPEC_NAME, Sandbox, SandboxLimits, sandbox_env

__all__ = ["SandboxedBackend"]


class SandboxedBackend(LocalBackend):
    """A local kernel under ``limits``: nothing of the host, a read-only filesystem but
    ``cwd/outputs`` and a private /tmp."""

    sandboxed = True

    def __init__(self, cwd: Path, new_client: Any, *, limits: SandboxLimits, **local: Any) -> None:
        super().__init__(cwd, new_client, **local)
        self.limits = limits
        self._sockets: Path | None = None  # this kernel's own connection directory

    def _transports(self) -> tuple[str, ...]:
        return ("ipc",)

    def _kernel_env(self) -> dict[str, str]:
        """Only what the sandboxed kernel itself gets (the sandbox's pid 1 keeps ``bwrap``'s)."""
        return sandbox_env(super()._kernel_env())

    def _socket_base(self) -> Path:
        self._sockets = super()._socket_base()
        return self._sockets / "k"

    def _manager_options(self, base: Path | None, env: dict[str, str]) -> dict[str, Any]:
        where = super()._manager_options(base, env)
        if self._sockets is None:
            return where
        spec_dir = self._sockets.with_name(f"{self._sockets.name}-spec")
        sandbox = Sandbox(self.cwd.resolve(), self._sockets, spec_dir, self.limits)
        return where | {
            "kernel_name": SPEC_NAME,
            "kernel_spec_manager": sandbox.spec_manager(self.kernel_name, env),
        }

    async def _a_teardown(self, now: bool) -> None:
        await super()._a_teardown(now)
        sockets, self._sockets = self._sockets, None
        if sockets is not None:
            shutil.rmtree(sockets, ignore_errors=True)
            shutil.rmtree(sockets.with_name(f"{sockets.name}-spec"), ignore_errors=True)
