"""Verify as you go: a second, fresh kernel runs the notebook's code cells as they are committed.

``ShadowRun`` owns a ``KernelSession`` in a worker thread of its own (the session's zmq
sockets live on that thread's event loop). ``submit`` hands it the notebook's cells after each
committed transition and returns at once; the worker runs the cells it has not run yet, in
order, while the run goes on. When a submitted list is not an extension of what it ran (a
rollback removed cells), it restarts its kernel and runs from the top again. ``finish`` waits
for the last cells and returns the same verdict as ``execute_notebook``: the saved notebook,
run top to bottom in one fresh kernel, fails at its first failing cell or passes, with the
values of the ``fetch`` names it left.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from time import monotonic
from typing import Any

from notebook_bcc.kernel import processes
from notebook_bcc.kernel.session import FETCH_CHARS, KernelSession
from notebook_bcc.kernel.verification import VerificationResult, failure_text

__all__ = ["Cells", "ShadowRun"]

#: The cells to verify: (index in the notebook, source) of each code cell to run, in order.
Cells = tuple[tuple[int, str], ...]


class ShadowRun:
    """A fresh kernel, in a worker thread, that follows the notebook as it grows."""

    def __init__(
        self, make_session: Callable[[], KernelSession], *, disposable: bool = False
    ) -> None:
        self._make_session = make_session
        #: its kernel works on files of its own: at the end it is killed, not asked to exit
        self.disposable = disposable
        self._inbox: queue.Queue[Cells | None] = queue.Queue()
        self._ran: list[tuple[int, str]] = []  # what the kernel ran, all ok but maybe the last
        self._failure: tuple[int, str] | None = None  # (notebook index, error) of the first
        self._busy_ms = 0
        self._values: dict[str, Any] = {}
        self._fetch: Sequence[str] = ()
        self._error: BaseException | None = None  # a kernel that could not start, say
        self._closing = False
        self._thread = threading.Thread(target=self._work, name="bcc-verify", daemon=True)
        self._session: KernelSession | None = None
        self._thread.start()

    # -- the run's side ----------------------------------------------------------------------
    def submit(self, cells: Cells) -> None:
        """The notebook's cells after a committed transition; returns at once."""
        self._inbox.put(cells)

    def finish(self, fetch: Sequence[str], timeout: float) -> VerificationResult:
        """Wait (at most ``timeout`` seconds) until the last submitted cells have run; the
        verdict, with the values of ``fetch`` when every cell passed. Stops the worker."""
        started = monotonic()
        self._fetch = tuple(fetch)
        self._inbox.put(None)  # after the cells: fetch the values, then stop
        self._thread.join(timeout)
        if self._thread.is_alive() or self._error is not None:
            why = "did not finish in time" if self._thread.is_alive() else str(self._error)
            self.close()
            return VerificationResult("failed", None, f"verification kernel: {why}", 0)
        failing, error = self._failure or (None, None)
        return VerificationResult(
            status="passed" if failing is None else "failed",
            first_failing_cell=failing,
            error=error,
            duration_ms=int((monotonic() - started) * 1000),
            values=self._values,
            ran_during_run_ms=self._busy_ms,
        )

    def close(self, timeout: float = 10) -> None:
        """Stop soon (an aborted run): queued cells are dropped, a running local cell is cut
        short by killing its kernel, and the worker shuts its kernel down."""
        self._closing = True
        self._inbox.put(None)
        session = self._session
        if session is not None and session.pid:  # the session itself belongs to the worker
            processes.kill_kernel(session.pid, session.pgid or 0)
        self._thread.join(timeout)

    # -- the worker's side -------------------------------------------------------------------
    def _work(self) -> None:
        try:
            while True:
                cells = self._inbox.get()
                while not self._inbox.empty():  # only the newest list matters
                    nxt = self._inbox.get()
                    if nxt is None:
                        self._catch_up(cells)
                        self._stop()
                        return
                    cells = nxt
                if cells is None:
                    self._stop()
                    return
                self._catch_up(cells)
        except BaseException as exc:  # noqa: BLE001 - reported by finish() as the verdict
            self._error = exc
            self._stop(now=True)

    def _catch_up(self, cells: Cells | None) -> None:
        if cells is None:
            return
        if tuple(self._ran) != cells[: len(self._ran)]:  # a rollback: start again from the top
            self._stop(now=True)
            self._ran, self._failure = [], None
        if self._failure is not None:
            return  # the notebook fails there; later cells do not change the verdict
        started = monotonic()
        for index, source in cells[len(self._ran) :]:
            if self._closing:
                return
            if self._session is None:
                self._session = self._make_session()
                self._session.start()
            outcome = self._session.run_cell(source)
            self._ran.append((index, source))
            if outcome.status != "ok":
                self._failure = (index, failure_text(outcome))
                break
        self._busy_ms += int((monotonic() - started) * 1000)

    def _stop(self, now: bool = False) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        if not now and self._failure is None and self._fetch:
            with contextlib.suppress(Exception):
                self._values = session.fetch_json(self._fetch, max_chars=FETCH_CHARS)
        session.shutdown(now=now or self.disposable)
