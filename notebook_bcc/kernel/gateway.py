"""Kernels started through a Jupyter Kernel Gateway or Enterprise Gateway (REST + websocket).

No protocol code of our own: jupyter_server's ``GatewayKernelManager`` starts, interrupts,
restarts and stops the kernel, and its websocket client is what nbclient drives. A remote
kernel starts in the gateway's directory, not in the run directory, so before any cell runs
it moves into a working directory of its own (``bcc-runs/<run id>`` under where it started)
holding ``assets/`` and ``outputs/``: the data files are sent through the kernel (up to
``MAX_UPLOAD_BYTES`` in all), or, with ``data_dir``, linked from a directory the kernel can
already read. Every start and restart does this again, so a restarted kernel replays in the
same place.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from notebook_bcc.errors import UsageError

__all__ = ["MAX_UPLOAD_BYTES", "TOKEN_ENV", "Gateway", "check_upload"]

#: Data sent to a gateway kernel through the kernel itself, all files together (README).
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
#: The environment variable holding the gateway's token (never written to the run directory).
TOKEN_ENV = "BCC_KERNEL_GATEWAY_TOKEN"
REQUEST_TIMEOUT_S = 60.0  # every REST call to the gateway has this deadline


def check_upload(files: Sequence[Path], data_dir: str | None) -> None:
    """Refuse (UsageError, exit 2) data too big to send through the kernel without a
    ``--kernel-data-dir`` the remote kernel can read them from."""
    total = sum(f.stat().st_size for f in files)
    if data_dir is None and total > MAX_UPLOAD_BYTES:
        raise UsageError(
            f"the data files total {total / 2**20:.0f} MB, over the {MAX_UPLOAD_BYTES // 2**20} "
            "MB bcc sends to a gateway kernel",
            remedy="put them where the remote kernel can read them and pass --kernel-data-dir DIR",
        )


class _AckingWebSocket:
    """A kernel's websocket that acknowledges each message it receives at once.

    The gateway (tornado) writes a reply's messages one by one with Nagle's algorithm on, so
    the second waits for the client's ACK of the first, which Linux delays by up to 40 ms:
    every round trip to a remote kernel cost ~48 ms instead of ~5 ms. ``TCP_QUICKACK`` after
    each receive sends the pending ACK now (Linux only; elsewhere a no-op).
    """

    def __init__(self, ws: Any) -> None:
        self._ws = ws

    def recv(self) -> Any:
        data = self._ws.recv()
        if _QUICKACK is not None and self._ws.sock is not None:
            with contextlib.suppress(OSError):
                self._ws.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


@cache
def _manager_class() -> Any:
    """jupyter_server's GatewayKernelManager (imported on first use: it is slow to import),
    answering ``_async_is_alive``, which jupyter_client's kernel client asks its manager and
    only a local manager can answer (jupyter/jupyter_client#1047), with the gateway's
    ``is_alive`` (a REST call), so nbclient notices a remote kernel that died. Its clients
    read the websocket through ``_AckingWebSocket`` and are ready once the kernel answered
    (``ready.py``)."""
    from jupyter_server.gateway.managers import GatewayKernelClient, GatewayKernelManager
    from traitlets import Type

    from notebook_bcc.kernel.ready import ReadyWhenAnswered

    class _GatewayKernelClient(ReadyWhenAnswered, GatewayKernelClient):
        def _route_responses(self) -> None:  # the reading thread's body
            self.channel_socket = _AckingWebSocket(self.channel_socket)
            super()._route_responses()

    class _GatewayKernelManager(GatewayKernelManager):
        client_factory = Type(_GatewayKernelClient, klass=GatewayKernelClient)

        async def _async_is_alive(self) -> bool:
            return bool(await self.is_alive())

    return _GatewayKernelManager


@dataclass(frozen=True)
class Gateway:
    """Where remote kernels come from: the gateway's base URL, its token (from
    ``TOKEN_ENV``; never logged or saved), and an optional directory on the kernel's side
    that already holds the data files."""

    url: str
    token: str | None = field(default=None, repr=False)
    data_dir: str | None = None

    def manager(self, kernel_name: str) -> Any:
        """A GatewayKernelManager for ``kernel_name`` on this gateway."""
        from jupyter_server.gateway.gateway_client import GatewayClient

        client = GatewayClient.instance()  # jupyter_server's client is process-wide
        client.url = self.url.rstrip("/")
        client.auth_token = self.token or ""
        client.request_timeout = client.connect_timeout = REQUEST_TIMEOUT_S
        return _manager_class()(kernel_name=kernel_name)

    def shut_down(self, kernel_ids: Sequence[str]) -> list[str]:
        """Shut down kernels left on the gateway by a ``bcc`` that was killed; return the ids
        the gateway removed (best effort: a kernel already gone, or a gateway that cannot be
        reached, is skipped)."""
        removed = []
        for kernel_id in dict.fromkeys(kernel_ids):
            request = urllib.request.Request(
                f"{self.url.rstrip('/')}/api/kernels/{urllib.parse.quote(kernel_id)}",
                method="DELETE",
                headers={"Authorization": f"token {self.token}"} if self.token else {},
            )
            try:
                with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S):
                    removed.append(kernel_id)
            except OSError:  # HTTPError (404: already gone) and URLError are OSErrors
                continue
        return removed

    def setup_code(self, run_dir: Path) -> str:
        """Source that moves a fresh remote kernel into the run's working directory, with the
        run's data files in ``assets/`` (sent, or linked from ``data_dir``) and ``outputs/``."""
        assets = sorted(p for p in (run_dir / "assets").glob("*") if p.is_file())
        workdir = f"bcc-runs/{run_dir.name}"
        lines = [
            "import base64 as _b, os as _os",
            f"_os.makedirs({workdir + '/assets'!r}, exist_ok=True)",
            f"_os.makedirs({workdir + '/outputs'!r}, exist_ok=True)",
            f"_os.chdir({workdir!r})",
        ]
        for path in assets:
            target = f"assets/{path.name}"
            if self.data_dir is not None:
                source = f"{self.data_dir.rstrip('/')}/{path.name}"
                lines.append(f"_os.path.lexists({target!r}) or _os.symlink({source!r}, {target!r})")
                continue
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            lines.append(
                f"_os.path.exists({target!r}) and _os.path.getsize({target!r}) == "
                f"{path.stat().st_size} or open({target!r}, 'wb').write(_b.b64decode({data!r}))"
            )
        lines.append("_os.getcwd()")
        return "\n".join(lines)
