"""Requests to the kernel that leave no trace in the notebook.

A silent ``execute_request`` whose ``user_expressions`` do the work: the in-kernel helper's
calls (``helper_source.py``), the wait for an interrupted kernel to be idle again, and a gateway
kernel's preparation and its check that the gateway did not restart it behind our back
(``remote.py``). The user namespace, the history and the execution count are left untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from queue import Empty
from time import monotonic
from typing import Any

from nbclient.exceptions import DeadKernelError

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel.helper_source import call_expression
from notebook_bcc.syntax import literal

__all__ = ["helper_expressions", "helper_values", "silent_request"]


async def silent_request(
    kc: Any, km: Any, expressions: dict[str, str], timeout: float
) -> dict[str, Any] | None:
    """Send a silent execute_request; return its reply content, None past the deadline.
    Raises DeadKernelError when the kernel died."""
    msg_id = kc.execute(
        "", silent=True, store_history=False, user_expressions=expressions, allow_stdin=False
    )
    deadline = monotonic() + timeout
    while (remaining := deadline - monotonic()) > 0:
        try:
            msg = await kc.get_shell_msg(timeout=min(1.0, remaining))
        except Empty:
            if not await km.is_alive():
                raise DeadKernelError("Kernel died") from None
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg["content"]
    return None


def helper_expressions(calls: dict[str, tuple[str, Any]]) -> dict[str, str]:
    """key -> the user expression that calls the helper's ``func(json payload)``."""
    return {key: call_expression(func, payload) for key, (func, payload) in calls.items()}


def helper_values(content: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """key -> the JSON value the helper answered. Raises KernelError for a helper's error."""
    values = {}
    for key in keys:
        result = content.get("user_expressions", {}).get(key, {})
        if result.get("status") != "ok":
            raise KernelError(f"inspection failed: {result.get('ename')}: {result.get('evalue')}")
        values[key] = json.loads(literal(result["data"]["text/plain"]))
    return values
