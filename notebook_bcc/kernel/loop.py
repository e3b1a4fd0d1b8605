"""``run_sync`` for the kernel package: jupyter_core's, on a loop settled first.

Every blocking call into the async kernel clients runs on this thread's one event loop
(jupyter_core keeps it). A Ctrl-C or SIGTERM raises in the main thread wherever it lands; when
it lands in the loop pass that completes the awaited future, ``run_until_complete`` leaves
that future's stop request queued on the loop, and the *next* call on the loop stops at once
with "Event loop stopped before Future completed" (the teardown of an interrupted run failed
that way: an internal error, exit 1, instead of exit 130). :func:`settle` spends such a stop
on a no-op before each call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, TypeVar

from jupyter_core.utils import ensure_event_loop
from jupyter_core.utils import run_sync as _run_sync

__all__ = ["run_sync", "settle"]

T = TypeVar("T")
SETTLE_TRIES = 3  # each try spends one stop left behind; one is the most seen


def settle() -> None:
    """Run this thread's loop through a no-op until it completes, so a stop request an
    interrupted call left queued is spent here (nothing to do inside a running loop)."""
    try:
        asyncio.get_running_loop()
        return
    except RuntimeError:
        pass
    loop = ensure_event_loop()
    for _ in range(SETTLE_TRIES):
        try:
            loop.run_until_complete(asyncio.sleep(0))  # done a pass later: its own stop is spent
            return
        except RuntimeError:  # a stop left behind ended the pass: spent, try again
            continue


def run_sync(coro: Callable[..., Awaitable[T]]) -> Callable[..., T]:
    """jupyter_core's ``run_sync``, on a settled loop."""
    inner = _run_sync(coro)

    @wraps(coro)
    def wrapped(*args: Any, **kwargs: Any) -> T:
        settle()
        return inner(*args, **kwargs)

    return wrapped
