"""The late-output drain (``kernel/client.py``) against a scripted IOPub channel: a cell's
outputs are read up to its idle, however long the client takes to get to them; without an
idle, reading stops at the deadline, or as soon as the kernel is found dead."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nbformat

from notebook_bcc.kernel.client import new_client
from notebook_bcc.kernel.loop import run_sync
from notebook_bcc.kernel.outputs import StreamSink

PARENT = "cell-request"


def _msg(msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
    header = {"msg_type": msg_type, "msg_id": f"m-{id(content)}"}
    return {"msg_type": msg_type, "content": content, "header": header, "metadata": {},
            "parent_header": {"msg_id": PARENT}}  # fmt: skip


class _StarvedChannel:
    """IOPub with ``messages`` queued that hands each over only ``delay`` s after asked:
    a client that gets the CPU rarely. ``empty`` says whether any still waits."""

    def __init__(self, messages: list[dict[str, Any]], delay: float) -> None:
        self.messages, self.delay = list(messages), delay

    def empty(self) -> bool:
        return not self.messages

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:
        if not self.messages:
            await asyncio.sleep(3600)  # nothing more is coming
        await asyncio.sleep(self.delay)
        return self.messages.pop(0)


class _Kc:
    def __init__(self, channel: _StarvedChannel) -> None:
        self.iopub_channel = channel


class _Km:
    def __init__(self, alive: bool) -> None:
        self.alive = alive

    async def is_alive(self) -> bool:
        return self.alive


def _drained(
    messages: list[dict[str, Any]], delay: float, cap_s: float = 60, alive: bool = True
) -> tuple[bool, Any, float]:
    client = new_client(_Km(alive), [], cell_timeout=10, startup_timeout=10)
    client.clear_before_next_output = False  # as nbclient sets it before a cell
    client.kc = _Kc(_StarvedChannel(messages, delay))  # type: ignore[assignment]
    cell = nbformat.v4.new_code_cell("")
    client.nb.cells = [cell]
    client.sink = StreamSink(1_000, 1_000)

    async def start_poll() -> None:
        client.poll = asyncio.ensure_future(client._poll_outputs(PARENT, cell, 0))
        await asyncio.sleep(0)

    run_sync(start_poll)()
    started = time.monotonic()
    idle = client.finish_outputs(until_idle=True, cap_s=cap_s)
    return idle, cell.outputs, time.monotonic() - started


def test_queued_outputs_are_read_up_to_idle_however_slowly_they_come() -> None:
    progress = [_msg("stream", {"name": "stderr", "text": f"\r{i}/3"}) for i in (1, 2, 3)]
    done = _msg("stream", {"name": "stdout", "text": "done\n"})
    idle = _msg("status", {"execution_state": "idle"})
    # each message takes longer to be read than the kernel's liveness check (ALIVE_CHECK_S):
    # a rule of "stop after a gap without one" stops early; the idle is coming, so it waits
    reached, outputs, _ = _drained([*progress, done, idle], delay=1.5)
    assert reached
    assert [(o["name"], "".join(o["text"])) for o in outputs] == [
        ("stderr", "\r1/3\r2/3\r3/3"), ("stdout", "done\n")
    ]  # fmt: skip


def test_without_an_idle_reading_stops_at_the_deadline() -> None:
    line = _msg("stream", {"name": "stdout", "text": "partial\n"})
    reached, outputs, took = _drained([line], delay=0.0, cap_s=1.5)  # its idle never comes
    assert not reached and 1.5 <= took < 10
    assert ["".join(o["text"]) for o in outputs] == ["partial\n"]


def test_a_dead_kernel_is_not_waited_for() -> None:
    reached, _, took = _drained([], delay=0.0, cap_s=60, alive=False)
    assert not reached and took < 10
