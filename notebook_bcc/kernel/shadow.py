"""Verify as you go: a second, fresh kernel runs the notebook's code cells as they are committed.

``ShadowRun`` owns a ``KernelSession`` in a worker thread of its own (the session's zmq
sockets live on that thread's event loop). ``submit`` hands it the notebook's cells after each
committed transition and returns at once; the worker runs the cells it has not run yet, in
order, while the run goes on. When a submitted list is not an extension of what it ran (a
rollback removed cells), it restarts its kernel and runs from the top again. ``finish`` waits
for the last cells and returns the verdict of the saved notebook run top to bottom in one
fresh kernel: it fails at its first failing cell or passes, with the values of the ``fetch``
names it left. When the verification kernel itself fails (it does not start, does not finish
in time, or its values cannot be read), the verdict says so (``verifier_failed``) and says
nothing about the notebook.

``close`` stops it from any thread: a local kernel is killed by its pid (also while it boots),
and from then on the worker starts and restarts no kernel (``_Refused``); it ends its session.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from time import monotonic
from typing import Any

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel import processes
from notebook_bcc.kernel.session import FETCH_CHARS, KernelSession
from notebook_bcc.kernel.verification import VerificationResult, failure_text

__all__ = ["Cells", "ShadowRun"]

#: The cells to verify: (index in the notebook, source) of each code cell to run, in order.
Cells = tuple[tuple[int, str], ...]

_POLL_S = 0.05  # how often ``close`` looks for a kernel to kill while it waits for the worker


class _Refused(KernelError):
    """A kernel (re)start the verifier no longer wants: it is closing, or the session is
    done with (e.g. a kernel that died while its values were read is not started again)."""


class ShadowRun:
    """A fresh kernel, in a worker thread, that follows the notebook as it grows."""

    def __init__(
        self,
        make_session: Callable[[], KernelSession],
        *,
        disposable: bool = False,
        fetch_timeout: float = 30,
    ) -> None:
        self._make_session = make_session
        #: its kernel works on files of its own: at the end it is killed, not asked to exit
        self.disposable = disposable
        self.fetch_timeout = fetch_timeout  # seconds to read the ``fetch`` values at the end
        self._inbox: queue.Queue[Cells | None] = queue.Queue()
        self._ran: list[tuple[int, str]] = []  # what the kernel ran, all ok but maybe the last
        self._failure: tuple[int, str] | None = None  # (notebook index, error) of the first
        self._busy_ms = 0
        self._values: dict[str, Any] = {}
        self._fetch: list[str] = []
        self._whole: dict[str, int] = {}  # names fetched part by part (``fetch_json``'s whole)
        self._fetch_error: str | None = None  # why the values could not be read
        self._error: BaseException | None = None  # a kernel that could not start, say
        self._closing = False
        self._thread = threading.Thread(target=self._work, name="bcc-verify", daemon=True)
        #: the worker's current session, published before it starts (``close`` kills its pid)
        self._session: KernelSession | None = None
        self._thread.start()

    # -- the run's side ----------------------------------------------------------------------
    def submit(self, cells: Cells) -> None:
        """The notebook's cells after a committed transition; returns at once."""
        self._inbox.put(cells)

    def finish(
        self, fetch: Mapping[str, int] | Sequence[str], timeout: float
    ) -> VerificationResult:
        """Wait (at most ``timeout`` seconds) until the last submitted cells have run; the
        verdict, with the values of ``fetch`` when every cell passed. Stops the worker.
        ``fetch``: name -> a part's limit (as ``fetch_json``'s ``whole``: never dropped whole),
        or names (each fetched when small and JSON, as ``fetch_json`` does)."""
        started = monotonic()
        self._fetch = list(fetch)
        self._whole = dict(fetch) if isinstance(fetch, Mapping) else {}
        self._inbox.put(None)  # after the cells: fetch the values, then stop
        self._thread.join(timeout)
        why = None
        if self._thread.is_alive():
            why = "did not finish in time"
            self.close()
        elif self._error is not None:
            why = str(self._error)
        elif self._fetch_error is not None:
            why = f"could not read the results: {self._fetch_error}"
        duration_ms = int((monotonic() - started) * 1000)
        if why is not None:  # the verifier failed, not (as far as anyone knows) the notebook
            error = f"verification kernel: {why}"
            return VerificationResult("failed", None, error, duration_ms, verifier_failed=True)
        failing, error = self._failure or (None, None)
        return VerificationResult(
            status="passed" if failing is None else "failed",
            first_failing_cell=failing,
            error=error,
            duration_ms=duration_ms,
            values=self._values,
            ran_during_run_ms=self._busy_ms,
        )

    def close(self, timeout: float = 10) -> None:
        """Stop soon (an aborted run), waiting at most ``timeout`` seconds: queued cells are
        dropped, a local kernel (running a cell, or still booting) is killed, and the worker
        shuts its session down without starting another kernel. A gateway kernel has no pid
        here: the worker ends it after its current request (or its boot)."""
        self._closing = True
        self._inbox.put(None)
        deadline = monotonic() + timeout
        killed: set[int] = set()
        while self._thread.is_alive() and (remaining := deadline - monotonic()) > 0:
            pid, pgid = _process_of(self._session)
            if pid and pid not in killed:  # the session itself belongs to the worker
                processes.kill_kernel(pid, pgid)
                killed.add(pid)
            self._thread.join(min(_POLL_S, remaining))

    @property
    def stopped(self) -> bool:
        """The worker has ended (after ``finish``, or a ``close`` within its timeout)."""
        return not self._thread.is_alive()

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
                self._session = session = self._make_session()  # published before it boots
                self._guard(session)
                session.start()
                if self._closing:  # booted while closing: _stop shuts it down at once
                    return
            outcome = self._session.run_cell(source)
            self._ran.append((index, source))
            if outcome.status != "ok":
                self._failure = (index, failure_text(outcome))
                break
        self._busy_ms += int((monotonic() - started) * 1000)

    def _guard(self, session: KernelSession) -> None:
        """Make every (re)start of ``session``'s kernel, and each process it spawns, ask first
        (``KernelSession.before_start``): none once closing or once the session is done with.
        Its own restarts (after a kernel died, say one ``close`` killed) go through ``start``;
        a failed ipc boot spawns again for tcp within one ``start``, hence the spawn too."""

        def check() -> None:
            if self._closing:
                raise _Refused("the verification was closed")
            if self._session is not session:
                raise _Refused("the verification kernel is done with; it is not started again")

        session.before_start = check

    def _stop(self, now: bool = False) -> None:
        session, self._session = self._session, None  # done with: never started again
        if session is None:
            return
        now = now or self._closing
        if not now and self._failure is None and self._fetch:
            try:
                self._values = session.fetch_json(
                    self._fetch,
                    max_chars=FETCH_CHARS,
                    timeout=self.fetch_timeout,
                    whole=self._whole,
                )
            except (TimeoutError, KernelError) as exc:  # the verifier failed, not the notebook
                self._fetch_error = str(exc) or type(exc).__name__
        session.shutdown(now=now or self.disposable)


def _process_of(session: KernelSession | None) -> tuple[int | None, int]:
    """(pid, process group) of a session's local kernel, read from another thread; (None, 0)
    when it has none (yet, or any more)."""
    if session is None:
        return None, 0
    with contextlib.suppress(AttributeError):  # its worker may be tearing it down meanwhile
        return session.pid, session.pgid or 0
    return None, 0
