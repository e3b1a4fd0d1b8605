"""Runs inside the kernel: an ipykernel ``OutStream`` that flushes once per 1,000,000 chars,
and lets the kernel's IOPub socket queue ``IOPUB_SNDHWM`` messages.

ipykernel sends what a cell printed during 0.2 s as one message, so a fast loop can make one
message of hundreds of MB, which bcc must then receive whole. Flushing every million
characters bounds the messages (and bcc's memory) without changing what is printed. The
kernel gets it through ``--IPKernelApp.outstream_class`` (see ``KernelSession``). This module
imports nothing from bcc, so the kernel pays only for ipykernel's own import.

The kernel's IOPub socket (zmq XPUB) queues 1000 messages per client by default and silently
drops what comes past them. A client whose process is stopped or starved of CPU while a cell
flushes 3000 times in a tight loop lost the end of the progress bar, the cell's last line and
its ``idle`` status (992 of 3,000 updates arrived with the client stopped for 3 s). No reading
on the client's side brings a dropped message back, so the kernel queues ``IOPUB_SNDHWM``
instead, as ``ready.py`` raises the client's. zmq sizes a client's queue when the client
connects, and bcc's client connects while the kernel starts, so the size must be set before
the socket is bound: ``BoundedKernelApp`` does it, and bcc launches the kernel with this module
(``python -m notebook_bcc.kernel.stream``) where the kernel spec runs ``-m ipykernel_launcher``
or ``-m ipykernel``.
Setting it later, on the bound socket, held only for clients that connected after.
"""

from __future__ import annotations

from typing import Any

import zmq
from ipykernel.iostream import OutStream
from ipykernel.kernelapp import IPKernelApp

__all__ = ["IOPUB_SNDHWM", "BoundedKernelApp", "BoundedOutStream", "FLUSH_CHARS"]

FLUSH_CHARS = 1_000_000
#: messages the kernel's IOPub socket queues per client before it drops more (zmq's 1000)
IOPUB_SNDHWM = 100_000


class BoundedOutStream(OutStream):
    _unflushed = 0

    def write(self, string: str) -> int | None:  # type: ignore[override]
        written = super().write(string)
        self._unflushed += len(string)
        if self._unflushed >= FLUSH_CHARS and self._is_master_process():
            self._unflushed = 0
            self.flush()
        return written


class BoundedKernelApp(IPKernelApp):
    """ipykernel's app, whose IOPub socket queues ``IOPUB_SNDHWM`` messages for every client,
    the first included."""

    def init_iopub(self, context: zmq.Context[Any]) -> None:
        context.setsockopt(zmq.SNDHWM, IOPUB_SNDHWM)  # the default of sockets made from here
        try:
            super().init_iopub(context)
        finally:
            del context.sockopts[zmq.SNDHWM]


if __name__ == "__main__":  # what ipykernel_launcher does, with the app above
    import sys
    from pathlib import Path

    if sys.path[0] == "" or Path(sys.path[0]) == Path.cwd():
        del sys.path[0]  # the working directory is the analysis's, not a place to import from
    from notebook_bcc.kernel.stream import BoundedKernelApp as App  # one class, not __main__'s

    App.launch_instance()
