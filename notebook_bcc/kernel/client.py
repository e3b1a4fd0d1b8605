"""``StreamingClient``: nbclient's client for one cell at a time, its stream text bounded while
it arrives and every output the cell sent read before the next request.

Draining lives here, whole. nbclient waits ``iopub_timeout`` after a cell's reply for the rest
of its outputs, then cancels its IOPub poll. On a client starved of CPU (one loaded core) that
wait ran out with the end of a progress bar still queued, and a cancel can drop the message
just read. So the poll here is shielded from nbclient's cancel and ``execute`` reads on after
the reply up to the kernel's ``idle`` status for the request (ipykernel publishes it after
the reply, so it is coming unless the kernel died), however long the client takes to get to
them: while the kernel lives, at most ``LATE_DRAIN_CAP_S``. (Reading on only while messages
kept coming, each within 15 s, still lost the end under a busy loop: the reply can overtake
outputs the kernel's IOPub thread has yet to send.) Then the poll is stopped, so it never reads the next request's
messages. That nothing is dropped before it reaches this client is ``stream.py``'s part (the
kernel's IOPub queue) and ``ready.py``'s (this client's).
"""

from __future__ import annotations

import asyncio
import contextlib
from time import monotonic
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete, DeadKernelError
from nbclient.util import ensure_async

from notebook_bcc.kernel.loop import run_sync
from notebook_bcc.kernel.outputs import StreamSink

__all__ = [
    "ALIVE_CHECK_S",
    "IOPUB_DRAIN_S",
    "LATE_DRAIN_CAP_S",
    "StreamingClient",
    "new_client",
]

#: Seconds nbclient itself waits for a cell's outputs after its reply (its default).
IOPUB_DRAIN_S = 4
#: Then, after a real reply, outputs are read up to the idle, the kernel checked alive this
#: often ...
ALIVE_CHECK_S = 1.0
#: ... and at most this long in all (a kernel that never sends it).
LATE_DRAIN_CAP_S = 120.0


class StreamingClient(NotebookClient):
    """A NotebookClient that hands the running cell's stream messages to ``sink``.

    nbclient appends every stream message to the cell's outputs and offers no hook for them
    (output hooks are for Output widgets, keyed by a msg_id not known before the request), so
    this overrides ``output``, where they all pass.
    """

    sink: StreamSink | None = None
    #: the running cell's output poll, shielded from nbclient's cancel (see ``finish_outputs``)
    poll: asyncio.Task[None] | None = None
    idle_seen: bool = False
    #: the last cell's execute_reply (nbclient's synthetic one, without a header, on a timeout)
    last_reply: dict[str, Any] | None = None

    def execute(self, cell: Any, sink: StreamSink) -> bool:
        """Run ``cell`` (the notebook's only one) with ``sink`` taking its stream text; read
        its late outputs after a real reply (see the module). False when the kernel died.
        Raises what nbclient raises otherwise."""
        self.nb.cells = [cell]
        self.clear_display_id_mapping(0)
        self.last_reply, self.sink = None, sink
        try:
            self.execute_cell(cell, 0)
            return True
        except DeadKernelError:
            return False
        finally:
            # a real reply: the kernel is done, its late outputs are read; else (a timeout, a
            # dead kernel) the poll just stops
            real = "header" in (self.last_reply or {})
            with contextlib.suppress(Exception):  # the loop may be gone with a dead kernel
                self.finish_outputs(until_idle=real)
            self.sink = None
            sink.finish(cell.get("outputs", []))

    async def _async_poll_output_msg(self, parent_msg_id: str, cell: Any, cell_index: int) -> None:
        self.idle_seen = False
        self.poll = asyncio.ensure_future(self._poll_outputs(parent_msg_id, cell, cell_index))
        # nbclient waits for this at most iopub_timeout after the reply, then cancels it; a
        # cancel could drop a message just read, so the poll itself runs on, shielded
        await asyncio.shield(self.poll)

    async def _poll_outputs(self, parent_msg_id: str, cell: Any, cell_index: int) -> None:
        assert self.kc is not None
        while True:
            msg = await ensure_async(self.kc.iopub_channel.get_msg(timeout=None))
            if msg["parent_header"].get("msg_id") != parent_msg_id:
                continue
            try:
                self.process_message(msg, cell, cell_index)
            except CellExecutionComplete:
                self.idle_seen = True
                return

    def finish_outputs(self, until_idle: bool, cap_s: float = LATE_DRAIN_CAP_S) -> bool:
        """After ``execute_cell``: with ``until_idle``, let the cell's output poll read on up
        to the kernel's idle for the request (while the kernel lives, ``cap_s`` at most); then
        stop it. True when idle was reached."""
        return bool(run_sync(self._finish_outputs)(until_idle, cap_s))

    async def _finish_outputs(self, until_idle: bool, cap_s: float) -> bool:
        poll, self.poll = self.poll, None
        if poll is None or poll.done():
            return self.idle_seen
        deadline = monotonic() + cap_s
        while until_idle and (left := deadline - monotonic()) > 0:
            done, _ = await asyncio.wait({poll}, timeout=min(ALIVE_CHECK_S, left))
            if done:
                return self.idle_seen
            if not await self._kernel_alive():  # its idle is not coming
                break
        poll.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poll
        return False

    async def _kernel_alive(self) -> bool:
        if self.km is None:
            return True
        try:
            return bool(await ensure_async(self.km.is_alive()))
        except Exception:  # noqa: BLE001 - a manager that cannot tell: the kernel is gone
            return False

    def on_cell_executed_hook(self, cell: Any, cell_index: int, execute_reply: Any) -> None:
        self.last_reply = execute_reply

    def output(
        self, outs: list, msg: dict[str, Any], display_id: str | None, cell_index: int
    ) -> Any:
        sink = self.sink
        if (
            sink is None
            or msg["msg_type"] != "stream"
            or self.output_hook_stack.get(msg["parent_header"].get("msg_id"))  # an Output widget
            or outs is not self.nb.cells[cell_index].outputs  # a straggler of an earlier cell
        ):
            return super().output(outs, msg, display_id, cell_index)
        if self.clear_before_next_output:  # what super().output() does before appending
            outs.clear()
            self.clear_display_id_mapping(cell_index)
            self.clear_before_next_output = False
        sink.write(outs, msg["content"]["name"], msg["content"]["text"])
        return None


def new_client(
    km: Any, extra_arguments: list[str], cell_timeout: float, startup_timeout: float
) -> StreamingClient:
    """The client bcc drives a kernel (``km``, its manager) with, for one cell at a time."""
    client = StreamingClient(
        nbformat.v4.new_notebook(),
        km=km,
        timeout_func=lambda _cell: cell_timeout or None,
        interrupt_on_timeout=True,
        # Makes nbclient stop waiting right after the interrupt; its reply has no header.
        error_on_timeout={"ename": "TimeoutError", "evalue": "", "traceback": []},
        allow_errors=True,
        startup_timeout=max(1, round(startup_timeout)),
        record_timing=False,
        iopub_timeout=IOPUB_DRAIN_S,
        coalesce_streams=False,  # its \r regex is quadratic on long lines; see merge_streams
        extra_arguments=extra_arguments,
    )
    client.on_cell_executed = client.on_cell_executed_hook
    return client
