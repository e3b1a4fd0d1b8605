"""Running one cell: its outputs capped (and spilled to a file) while they arrive, and a
timeout, a dead kernel or a gateway's silent restart turned into the cell's outcome."""

from __future__ import annotations

import contextlib
from pathlib import Path
from time import monotonic

import nbformat
from nbclient.exceptions import DeadKernelError

from notebook_bcc.errors import BccError, KernelError
from notebook_bcc.kernel.calls import KernelCalls
from notebook_bcc.kernel.launch import LATE_OUTPUT_GAP_S
from notebook_bcc.kernel.outputs import StreamSink, drop_oversized, excerpt, merge_streams
from notebook_bcc.kernel.records import CellOutcome
from notebook_bcc.redaction import redact, redact_tree

__all__ = ["CellExecution"]


class CellExecution(KernelCalls):
    """Cells run through the nbclient client, one at a time."""

    def run_cell(
        self, source: str, *, spill_name: str | None = None, excerpt_chars: int | None = None
    ) -> CellOutcome:
        """Execute one cell; never raises for user errors, timeouts or kernel death.

        The agents' excerpt of its output is ``excerpt_chars`` long at most (default: the
        session's ``excerpt_chars``; a cell that builds the run's results gets more).

        Stream text past ``output_cap_chars`` is cut from the outputs while it arrives; with
        ``spill_name`` and ``spill_dir`` set, all of it is written to ``cell-{spill_name}.txt``
        there (see ``CellOutcome.spilled``).

        ``timeout``: the cell ran past ``cell_timeout`` and was interrupted. If the kernel is not
        idle again within ``interrupt_grace`` seconds (SIGINT ignored), it is restarted and its
        state is lost (``restarts`` increases). ``dead``: the kernel died during the cell; it is
        restarted, so the next call works on an empty namespace. Raises KernelError only when the
        kernel cannot be restarted or the connection breaks.
        """
        spill = self._spill_target(spill_name)
        client = self._running()
        cell = nbformat.v4.new_code_cell(source)
        client.nb.cells = [cell]
        client.clear_display_id_mapping(0)
        self._last_reply = None
        limit = excerpt_chars or self.excerpt_chars
        client.sink = sink = StreamSink(self.output_cap_chars, limit, *spill, root=self.cwd)
        started = monotonic()
        try:
            client.execute_cell(cell, 0)
            dead = False
        except DeadKernelError:
            dead = True
        except BccError:  # e.g. Terminated raised by a signal handler: not a kernel fault
            raise
        except Exception as exc:
            raise KernelError(f"kernel communication failed: {exc}") from exc
        finally:
            # a real reply: the kernel is done, its late outputs are read; else (a timeout, a
            # dead kernel) the poll just stops
            real = "header" in (self._last_reply or {})
            with contextlib.suppress(Exception):  # the loop may be gone with a dead kernel
                client.finish_outputs(LATE_OUTPUT_GAP_S if real else 0)
            client.sink = None
            sink.finish(cell.get("outputs", []))
        reply = self._last_reply or {}
        content = reply.get("content", {})
        if dead:
            status, ename, evalue = "dead", "DeadKernelError", "the kernel died; it was restarted"
            self._restart(now=True)
        elif reply and "header" not in reply:  # nbclient's synthetic reply: timed out
            status, ename = "timeout", "TimeoutError"
            evalue = f"cell exceeded {self.cell_timeout:g} s and was interrupted"
            if not self._await_idle(self.interrupt_grace):
                evalue += "; the kernel did not recover and was restarted"
                self._restart(now=True)
        elif content.get("status") == "error":
            status, ename, evalue = "error", content.get("ename"), content.get("evalue")
        else:
            status, ename, evalue = "ok", None, None
        if status != "ok" and self._restarted_remotely():
            status, ename = "dead", "DeadKernelError"
            evalue = "the kernel died; the gateway restarted it with an empty namespace"
            self.restarts += 1
            self._prepare_remote()
        # what bcc keeps of a cell, the secrets of its environment redacted (README, "Secrets")
        outputs = redact_tree(
            drop_oversized(merge_streams([dict(o) for o in cell.get("outputs", [])]))
        )
        evalue = evalue and redact(evalue)
        return CellOutcome(
            status=status,
            outputs=tuple(outputs),
            execution_count=cell.get("execution_count"),
            duration_ms=int((monotonic() - started) * 1000),
            excerpt=redact(excerpt(outputs, status, ename, evalue, limit, sink)),
            error_name=ename,
            error_value=evalue,
            spilled=sink.spilled,
        )

    def _spill_target(self, spill_name: str | None) -> tuple[Path | None, str | None]:
        """The spill file for ``spill_name`` and how the marker names it; Nones for no spill."""
        if self.spill_dir is None or spill_name is None:
            return None, None
        path = self.spill_dir / f"cell-{spill_name}.txt"
        if path.name != f"cell-{spill_name}.txt":
            raise ValueError(f"spill_name must be a plain file name part: {spill_name!r}")
        try:
            return path, str(path.resolve().relative_to(self.cwd.resolve()))
        except ValueError:
            return path, str(path.resolve())
