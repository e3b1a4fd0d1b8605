"""Runs inside the kernel: an ipykernel ``OutStream`` that flushes once per 1,000,000 chars,
and lets the kernel's IOPub socket queue ``IOPUB_SNDHWM`` messages.

ipykernel sends what a cell printed during 0.2 s as one message, so a fast loop can make one
message of hundreds of MB, which bcc must then receive whole. Flushing every million
characters bounds the messages (and bcc's memory) without changing what is printed. The
kernel gets it through ``--IPKernelApp.outstream_class`` (see ``KernelSession``). This module
imports nothing from bcc, so the kernel pays only for ipykernel's own import.

The kernel's IOPub socket (zmq XPUB) queues 1000 messages per client by default and silently
drops what comes past them. A cell that flushes 3000 times in a tight loop fills that queue
whenever the client's zmq I/O thread is starved of CPU for a fraction of a second (one loaded
core): the end of the progress bar, the cell's last line and its ``idle`` status were lost
(2,978 of 3,000 updates arrived, reproduced with the client on a busy core). No reading on
the client's side brings a dropped message back, so the queue is raised here, in the kernel,
as ``ready.py`` raises the client's. Measured (2026-11-28): raised here, it holds only for a
client that connects later; bcc's client connects while the kernel starts, so its share of
the kernel's queue stays about 1000 messages (a client holding 10 got 988 of 3000) and the
client's own queue, set before it connects, is what holds the backlog.
"""

from __future__ import annotations

from typing import Any

from ipykernel.iostream import OutStream

__all__ = ["IOPUB_SNDHWM", "BoundedOutStream", "FLUSH_CHARS"]

FLUSH_CHARS = 1_000_000
#: messages the kernel's IOPub socket queues per client before it drops more (zmq's 1000)
IOPUB_SNDHWM = 100_000


class BoundedOutStream(OutStream):
    _unflushed = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        thread = self.pub_thread
        socket = getattr(thread, "socket", None)
        if socket is not None:  # set on the IOPub thread, which owns the socket
            thread.schedule(lambda: setattr(socket, "sndhwm", IOPUB_SNDHWM))

    def write(self, string: str) -> int | None:  # type: ignore[override]
        written = super().write(string)
        self._unflushed += len(string)
        if self._unflushed >= FLUSH_CHARS and self._is_master_process():
            self._unflushed = 0
            self.flush()
        return written
