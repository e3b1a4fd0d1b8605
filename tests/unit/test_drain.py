"""The late-output drain (``kernel/client.py``) against a scripted IOPub channel: messages
still queued for the client are read up to the cell's idle, however long the client takes to
get to them; a channel with nothing queued and nothing coming is given up on."""

from __future__ import annotations

import asyncio
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


def _drained(messages: list[dict[str, Any]], delay: float, quiet_s: float) -> tuple[bool, Any]:
    client = new_client(None, [], cell_timeout=10, startup_timeout=10)
    client.clear_before_next_output = False  # as nbclient sets it before a cell
    client.kc = _Kc(_StarvedChannel(messages, delay))  # type: ignore[assignment]
    cell = nbformat.v4.new_code_cell("")
    client.nb.cells = [cell]
    client.sink = StreamSink(1_000, 1_000)

    async def start_poll() -> None:
        client.poll = asyncio.ensure_future(client._poll_outputs(PARENT, cell, 0))
        await asyncio.sleep(0)

    run_sync(start_poll)()
    idle = client.finish_outputs(quiet_s)
    return idle, cell.outputs


def test_queued_outputs_are_read_up_to_idle_however_slowly_they_come() -> None:
    progress = [_msg("stream", {"name": "stderr", "text": f"\r{i}/3"}) for i in (1, 2, 3)]
    done = _msg("stream", {"name": "stdout", "text": "done\n"})
    idle = _msg("status", {"execution_state": "idle"})
    # each message takes 3x the quiet gap to be read: a rule of "stop after quiet_s without
    # one" would stop at the first; they are queued, so they are read
    reached, outputs = _drained([*progress, done, idle], delay=0.3, quiet_s=0.1)
    assert reached
    assert [(o["name"], "".join(o["text"])) for o in outputs] == [
        ("stderr", "\r1/3\r2/3\r3/3"), ("stdout", "done\n")
    ]  # fmt: skip


def test_nothing_queued_and_nothing_coming_is_given_up_after_the_gap() -> None:
    line = _msg("stream", {"name": "stdout", "text": "partial\n"})
    reached, outputs = _drained([line], delay=0.0, quiet_s=0.2)  # its idle was never sent
    assert not reached
    assert ["".join(o["text"]) for o in outputs] == ["partial\n"]
