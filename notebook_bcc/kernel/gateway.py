"""Kernels started through a Jupyter Kernel Gateway or Enterprise Gateway (REST + websocket).

No protocol code of our own: jupyter_server's ``GatewayKernelManager`` starts, interrupts,
restarts and stops the kernel, and its websocket client is what nbclient drives (each manager
with a ``GatewayClient`` of its own: ``_manager_class``). A remote kernel starts in the
gateway's directory, not in the run directory, so before any cell runs it moves into a working
directory of its own (``bcc-runs/<run id>`` under where it started, ``bcc-runs/<run id>.<role>``
for a kernel with a ``role``: the verification kernel's is ``.verify``) holding ``assets/`` and
``outputs/``: the data files are sent through the kernel (up to ``MAX_UPLOAD_BYTES`` in all),
or, with ``data_dir``, linked from a directory the kernel can already read. Every start and
restart does this again, so a restarted kernel replays in the same place. When the kernel is
shut down it leaves that directory and removes it (``cleanup_code``), unless ``keep_files``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from queue import Empty
from typing import Any

from notebook_bcc.errors import UsageError

__all__ = ["MAX_UPLOAD_BYTES", "TOKEN_ENV", "Gateway", "check_upload", "run_quietly"]

#: Data sent to a gateway kernel through the kernel itself, all files together (docs/gateway.md).
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
#: The environment variable holding the gateway's token (never written to the run directory).
TOKEN_ENV = "BCC_KERNEL_GATEWAY_TOKEN"
REQUEST_TIMEOUT_S = 60.0  # every REST call to the gateway has this deadline
#: Seconds a kernel being shut down gets to remove its working directory; ``CLEANUP_NOW_S``
#: when it is shut down at once (it may still be running a cell: then the directory stays).
CLEANUP_TIMEOUT_S = 10.0
CLEANUP_NOW_S = 3.0


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
    configured per kernel: the manager holds a ``GatewayClient`` of its own (url, token,
    timeouts), and it and its websocket client use that one.

    jupyter_server's manager and client read ``GatewayClient.instance()``, a process-wide
    singleton (its ``kernels_url`` when made, every REST call through ``gateway_request``,
    and the websocket's URL and certificates); ``ws_url`` is even derived from the ``url``
    the singleton had first. bcc's run kernel and verification kernel start from two
    threads, so the methods that reach the gateway are restated here on the manager's own
    client, and the websocket also sends that client's headers (the token: a Kernel Gateway
    with a token refuses a websocket without it, which jupyter_server's client omits).

    It also answers ``_async_is_alive``, which jupyter_client's kernel client asks its
    manager and only a local manager can answer (jupyter/jupyter_client#1047), with the
    gateway's ``is_alive`` (a REST call), so nbclient notices a remote kernel that died. Its
    clients read the websocket through ``_AckingWebSocket`` and are ready once the kernel
    answered (``ready.py``)."""
    import websocket
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_core.utils import ensure_async
    from jupyter_server.gateway.gateway_client import GatewayClient, RetryableHTTPClient
    from jupyter_server.gateway.managers import GatewayKernelClient, GatewayKernelManager
    from jupyter_server.utils import url_path_join
    from tornado.escape import json_decode, json_encode, url_escape
    from tornado.httpclient import HTTPClientError
    from traitlets import Instance, Type

    from notebook_bcc.kernel.ready import ReadyWhenAnswered

    class _GatewayKernelClient(ReadyWhenAnswered, GatewayKernelClient):
        async def start_channels(
            self,
            shell: bool = True,
            iopub: bool = True,
            stdin: bool = True,
            hb: bool = True,
            control: bool = True,
        ) -> None:
            """GatewayKernelClient.start_channels with the manager's client (``parent``)."""
            gateway = self.parent.gateway_client
            self.channel_socket = websocket.create_connection(
                url_path_join(
                    gateway.ws_url or "",
                    gateway.kernels_endpoint,
                    url_escape(self.kernel_id),
                    "channels",
                ),
                timeout=gateway.KERNEL_LAUNCH_TIMEOUT,
                enable_multithread=True,
                sslopt={
                    "ca_certs": gateway.ca_certs,
                    "certfile": gateway.client_cert,
                    "keyfile": gateway.client_key,
                },
                header=gateway.load_connection_args(headers={})["headers"],
            )
            await ensure_async(
                AsyncKernelClient.start_channels(self, shell, iopub, stdin, hb, control)
            )
            self.response_router = threading.Thread(target=self._route_responses)
            self.response_router.start()

        def _route_responses(self) -> None:  # the reading thread's body
            self.channel_socket = _AckingWebSocket(self.channel_socket)
            super()._route_responses()

    class _GatewayKernelManager(GatewayKernelManager):
        client_factory = Type(_GatewayKernelClient, klass=GatewayKernelClient)
        gateway_client = Instance(GatewayClient)

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)  # its kernels_url comes from the singleton: replaced
            self.kernels_url = url_path_join(
                self.gateway_client.url or "", self.gateway_client.kernels_endpoint
            )

        async def _request(self, url: str, **kwargs: Any) -> Any:
            """jupyter_server's ``gateway_request`` on this manager's client (its errors are
            tornado's, not translated into ``web.HTTPError``)."""
            gateway = self.gateway_client
            response = await RetryableHTTPClient().fetch(
                url, **gateway.load_connection_args(**kwargs)
            )
            if gateway.accept_cookies:
                gateway.update_cookies(response.headers)
            return response

        async def _post(self, url: str, body: dict[str, Any]) -> Any:
            headers = {"Content-Type": "application/json"}
            return await self._request(url, method="POST", headers=headers, body=json_encode(body))

        async def start_kernel(self, **kwargs: Any) -> None:
            gateway = self.gateway_client
            allowed = gateway.allowed_envs.split(",")
            env = {k: v for k, v in os.environ.items() if k.startswith("KERNEL_") or k in allowed}
            if gateway.http_user:
                env.setdefault("KERNEL_USERNAME", gateway.http_user)
            name = kwargs.get("kernel_name") or self.kernel_name
            response = await self._post(self.kernels_url, {"name": name, "env": env})
            self.kernel = json_decode(response.body)
            self.kernel_id = self.kernel["id"]
            self.kernel_url = url_path_join(self.kernels_url, url_escape(str(self.kernel_id)))

        async def refresh_model(self, model: Any = None) -> Any:
            if model is None:
                try:
                    model = json_decode((await self._request(self.kernel_url, method="GET")).body)
                except HTTPClientError as error:
                    if error.code != 404:
                        raise
            if model:
                self.execution_state = model.get("execution_state", self.execution_state)
            self.kernel = model
            return model

        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            if not self.has_kernel:
                return
            try:
                await self._request(self.kernel_url, method="DELETE")
            except HTTPClientError as error:
                if error.code != 404:  # 404: already gone
                    raise

        async def restart_kernel(self, **kwargs: Any) -> None:
            if self.has_kernel:
                await self._post(self.kernel_url + "/restart", {})

        async def interrupt_kernel(self) -> None:
            if self.has_kernel:
                await self._post(self.kernel_url + "/interrupt", {})

        async def _async_is_alive(self) -> bool:
            return bool(await self.is_alive())

    return _GatewayKernelManager


@dataclass(frozen=True)
class Gateway:
    """Where remote kernels come from: the gateway's base URL, its token (from
    ``TOKEN_ENV``; never logged or saved), an optional directory on the kernel's side that
    already holds the data files, whether the kernels' working directories stay there after
    the run (``keep_files``), and the kernel's ``role`` ("" for the run's own kernel), which
    names its working directory."""

    url: str
    token: str | None = field(default=None, repr=False)
    data_dir: str | None = None
    keep_files: bool = False
    role: str = ""

    def manager(self, kernel_name: str) -> Any:
        """A GatewayKernelManager for ``kernel_name`` on this gateway, with a gateway client of
        its own (not jupyter_server's process-wide one: see ``_manager_class``)."""
        from jupyter_server.gateway.gateway_client import GatewayClient

        client = GatewayClient(
            url=self.url.rstrip("/"),
            auth_token=self.token or "",
            request_timeout=REQUEST_TIMEOUT_S,
            connect_timeout=REQUEST_TIMEOUT_S,
        )
        return _manager_class()(kernel_name=kernel_name, gateway_client=client)

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

    def workdir(self, run_dir: Path) -> str:
        """The kernel's working directory, relative to where the gateway started it."""
        return f"bcc-runs/{run_dir.name}" + (f".{self.role}" if self.role else "")

    def setup_code(self, run_dir: Path) -> str:
        """Source that moves a fresh remote kernel into its working directory, with the run's
        data files in ``assets/`` (sent, or linked from ``data_dir``) and ``outputs/``; the
        directory's absolute path is kept (a builtins attribute) for ``cleanup_code``."""
        assets = sorted(p for p in (run_dir / "assets").glob("*") if p.is_file())
        workdir = self.workdir(run_dir)
        lines = [
            "import base64 as _b, os as _os",
            f"_os.makedirs({workdir + '/assets'!r}, exist_ok=True)",
            f"_os.makedirs({workdir + '/outputs'!r}, exist_ok=True)",
            f"_os.chdir({workdir!r})",
            "setattr(__import__('builtins'), '_bcc_workdir', _os.getcwd())",
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

    def cleanup_code(self, run_dir: Path) -> str:
        """Source that moves the kernel back to where the gateway started it and removes the
        working directory ``setup_code`` made (only that one: its name is checked)."""
        parent, name = self.workdir(run_dir).rsplit("/", 1)
        return "\n".join(
            [
                "import os as _os, shutil as _sh",
                "_d = getattr(__import__('builtins'), '_bcc_workdir', None) or ''",
                "_up = _os.path.dirname(_d)",
                f"if (_os.path.basename(_d), _os.path.basename(_up)) == ({name!r}, {parent!r}):",
                "    _os.chdir(_os.path.dirname(_up))",
                "    _sh.rmtree(_d)",
            ]
        )


async def run_quietly(kc: Any, code: str, timeout: float) -> bool:
    """Run ``code`` in a gateway kernel in a fresh namespace, silently (no history, no
    outputs); True once it ran without error, False on an error, past ``timeout`` (a busy
    kernel) or when the connection is gone."""
    from websocket import WebSocketException  # imported already by the kernel's client

    try:
        msg_id = kc.execute(
            f"exec({code!r}, {{}})", silent=True, store_history=False, allow_stdin=False
        )
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            msg = await kc.get_shell_msg(timeout=remaining)
            if msg["parent_header"].get("msg_id") == msg_id:
                return bool(msg["content"].get("status") == "ok")
    except (Empty, RuntimeError, OSError, WebSocketException):  # RuntimeError: the reader ended
        return False
    return False
