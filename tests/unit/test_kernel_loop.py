"""The kernel package's ``run_sync`` after a Ctrl-C that landed as a call completed (the
teardown of an interrupted run failed with "Event loop stopped before Future completed": an
internal error, exit 1, where a Ctrl-C exits 130)."""

from __future__ import annotations

import asyncio

import pytest
from jupyter_core.utils import run_sync as plain_run_sync

from notebook_bcc.kernel.loop import run_sync


def _ctrl_c() -> None:
    raise KeyboardInterrupt


async def _finishes_as_ctrl_c_lands() -> int:
    asyncio.get_running_loop().call_soon(_ctrl_c)  # in the pass that completes this call
    return 1


async def _teardown() -> str:
    await asyncio.sleep(0.01)
    return "torn down"


@pytest.mark.parametrize("first", [plain_run_sync, run_sync])
def test_a_call_after_a_ctrl_c_that_landed_as_a_call_completed_runs(first) -> None:
    with pytest.raises(KeyboardInterrupt):
        first(_finishes_as_ctrl_c_lands)()
    assert run_sync(_teardown)() == "torn down"
    assert run_sync(_teardown)() == "torn down"  # and the loop stays usable


def test_without_settling_the_next_call_is_stopped_at_once() -> None:
    """What the settling is for: jupyter_core's own run_sync fails here."""
    with pytest.raises(KeyboardInterrupt):
        plain_run_sync(_finishes_as_ctrl_c_lands)()
    with pytest.raises(RuntimeError, match="Event loop stopped before Future completed"):
        plain_run_sync(_teardown)()
    assert run_sync(_teardown)() == "torn down"
