"""Failpoints: faults that tests inject at named points, through the environment.

Inert unless ``$BCC_FAILPOINTS`` is set (it never is in normal use). The points:

``write``  every durable write and every ``events.jsonl`` append of a run (counted once the
           runner starts; setting up a new run directory is not counted)
``agent``  every agent call of a transition (before the model is asked)
``abort``  the start of the clean-up after an error or interrupt (before the abort checkpoint)
``create`` every file written while a new run directory is set up, before the runner starts
           (the problem, each data file, then the writes; not traced)

``BCC_FAILPOINTS`` is a comma-separated list of ``POINT@N=ACTION``: at the Nth hit of POINT,
or ``POINT:NAME@N=ACTION``: at its Nth hit on a file named NAME (``write:state.json@9``; the
notebook's live saves depend on timing, so a plain write count is not the same in every run),

``enospc``  raise ``OSError(ENOSPC)`` (the write then fails as on a full disk)
``bug``     raise ``RuntimeError`` (an unexpected error, as a bug would raise)
``pause``   create the file ``$BCC_FAILPOINTS_MARK`` and sleep 120 s (a test kills bcc there)

``$BCC_FAILPOINTS_TRACE``, when set, names a file that gets one line ``POINT N PATH`` per hit,
so a test can count the writes of a reference run.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

__all__ = ["arm", "hit", "reset"]

PAUSE_S = 120.0


def _parse(spec: str) -> dict[tuple[str, int], str]:
    """``{("write", 10): "enospc", ("write:state.json", 9): "pause"}`` from the variable."""
    rules: dict[tuple[str, int], str] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        where, _, action = item.partition("=")
        point, _, nth = where.partition("@")
        rules[(point, int(nth))] = action
    return rules


_RULES = _parse(os.environ.get("BCC_FAILPOINTS", ""))
_TRACE = os.environ.get("BCC_FAILPOINTS_TRACE", "")
_counts: dict[str, int] = {}
_armed = False


def reset() -> None:
    """Read the environment again and count from zero: one command's faults, in a process
    that runs several (the tests' ``bcc`` in process, ``tests/inprocess.py``)."""
    global _RULES, _TRACE, _armed
    _RULES = _parse(os.environ.get("BCC_FAILPOINTS", ""))
    _TRACE = os.environ.get("BCC_FAILPOINTS_TRACE", "")
    _counts.clear()
    _armed = False


def arm() -> None:
    """Start counting hits (the runner calls this when its loop begins)."""
    global _armed
    _armed = True


def hit(point: str, path: Path | str = "") -> None:
    """Count one hit of ``point``; perform the configured action for this hit, if any."""
    if not _armed:  # setting up a run directory: its writes are ``create`` hits
        if point in ("write", "create") and _RULES:
            _setting_up(path)
        return
    if not (_RULES or _TRACE):
        return
    n = _counts[point] = _counts.get(point, 0) + 1
    named = f"{point}:{Path(path).name}"
    n_named = _counts[named] = _counts.get(named, 0) + 1
    if _TRACE:
        with open(_TRACE, "a", encoding="utf-8") as fh:
            fh.write(f"{point} {n} {path}\n")
    action = _RULES.get((point, n)) or _RULES.get((named, n_named))
    if action == "enospc":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    if action == "bug":
        raise RuntimeError(f"failpoint {point}@{n}")
    if action == "pause":
        Path(os.environ["BCC_FAILPOINTS_MARK"]).touch()
        _pause(PAUSE_S)


def _setting_up(path: Path | str) -> None:
    n = _counts["create"] = _counts.get("create", 0) + 1
    named = f"create:{Path(path).name}"
    n_named = _counts[named] = _counts.get(named, 0) + 1
    if (_RULES.get(("create", n)) or _RULES.get((named, n_named))) == "enospc":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _pause(seconds: float) -> None:
    """Sleep in short slices: a signal that lands just before a long ``sleep`` starts, or on
    another thread, would otherwise wait for the whole sleep before its handler runs."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(0.1, left))
