"""Runs inside the kernel: an ipykernel ``OutStream`` that flushes once per 1,000,000 chars.

ipykernel sends what a cell printed during 0.2 s as one message, so a fast loop can make one
message of hundreds of MB, which bcc must then receive whole. Flushing every million
characters bounds the messages (and bcc's memory) without changing what is printed. The
kernel gets it through ``--IPKernelApp.outstream_class`` (see ``KernelSession``). This module
imports nothing from bcc, so the kernel pays only for ipykernel's own import.
"""

from __future__ import annotations

from ipykernel.iostream import OutStream

__all__ = ["BoundedOutStream", "FLUSH_CHARS"]

FLUSH_CHARS = 1_000_000


class BoundedOutStream(OutStream):
    _unflushed = 0

    def write(self, string: str) -> int | None:  # type: ignore[override]
        written = super().write(string)
        self._unflushed += len(string)
        if self._unflushed >= FLUSH_CHARS and self._is_master_process():
            self._unflushed = 0
            self.flush()
        return written
