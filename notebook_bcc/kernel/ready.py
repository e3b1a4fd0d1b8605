"""``ReadyWhenAnswered``: a kernel client that is ready as soon as the kernel is.

jupyter_client's ``wait_for_ready`` sends ``kernel_info`` until it is answered on shell and
something arrives on IOPub (which proves the IOPub subscription is live), then drains IOPub
until it has been silent for 0.2 s. That last wait is idle time on every kernel start and
restart (~0.2 s of the ~0.5 s a start takes). This client stops at the ``status: idle`` that
the kernel publishes for its ``kernel_info`` request: the same proof that both channels work,
without the wait. Messages left on IOPub are harmless: nbclient and ``KernelSession`` read only
those whose parent is their own request. ``ReadyKernelClient`` is the local kernels' client;
``gateway.py`` mixes the same wait into its websocket client.

``ReadyKernelClient`` also lets its IOPub socket queue up to ``IOPUB_RCVHWM`` messages, not
zmq's 1000. The queue is filled by zmq's own I/O thread while Python reads nothing (a cell
still running, a slow agent call); once it is full, the kernel holds the rest in its own
queue, which ``stream.py`` sizes the same, for the time the client's process does not run at
all (one loaded core). Past both, the kernel's XPUB socket drops what follows: a progress bar
that flushed 3000 times lost its end and the cell's idle status.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

import zmq
from jupyter_client.asynchronous import AsyncKernelClient

__all__ = ["IOPUB_RCVHWM", "ReadyKernelClient", "ReadyWhenAnswered"]

_IOPUB_WAIT_S = 0.2  # how long to wait for each IOPub message of the kernel_info request
#: IOPub messages the client's socket holds before the kernel drops more (a stream message
#: is about 1 KB with its header, so at most about 100 MB for a client that stopped reading).
IOPUB_RCVHWM = 100_000


class ReadyWhenAnswered:
    """Mixin for a jupyter_client ``AsyncKernelClient`` (put it first among the bases)."""

    async def wait_for_ready(self: Any, timeout: float | None = None) -> None:
        """Return once a ``kernel_info`` request was answered on shell and its ``idle`` status
        seen on IOPub. Raises RuntimeError if the kernel dies or ``timeout`` passes first."""
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            msg_id = self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            answered = reply is not None and reply["msg_type"] == "kernel_info_reply"
            if answered and await self._idle_after(msg_id):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    async def _idle_after(self: Any, msg_id: str) -> bool:
        """True once IOPub carries the ``idle`` status of ``msg_id``; False if it falls silent
        first (the subscription was not live yet: the request is sent again)."""
        while True:
            try:
                msg = await self.iopub_channel.get_msg(timeout=_IOPUB_WAIT_S)
            except Empty:
                return False
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"].get("execution_state") == "idle"
            ):
                return True


class ReadyKernelClient(ReadyWhenAnswered, AsyncKernelClient):
    """The client of a local kernel (``AsyncKernelManager(client_factory=...)``)."""

    def connect_iopub(self, identity: bytes | None = None) -> zmq.sugar.socket.Socket:
        # The queue is the socket's before it connects (a context's default for the sockets it
        # makes next): zmq sizes a connection's queue when it is made, not on a live one.
        self.context.setsockopt(zmq.RCVHWM, IOPUB_RCVHWM)
        try:
            sock = super().connect_iopub(identity=identity)
        finally:
            self.context.sockopts.pop(zmq.RCVHWM, None)
        sock.rcvhwm = IOPUB_RCVHWM  # the same, should another client of this context have
        # taken the default away before this socket was made
        return sock
