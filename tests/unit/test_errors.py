"""Signals reach bcc's code as BaseExceptions and become their exit codes at the edge."""

from __future__ import annotations

import pytest

from notebook_bcc.errors import BccError, Interrupted, SigtermReceived, Terminated


def _through_a_library(exc: BaseException) -> BaseException:
    """What a provider's client does with what it meets: catches every ``Exception``."""
    try:
        try:
            raise exc
        except Exception:  # noqa: BLE001 - the library's retry loop
            pytest.fail(f"{type(exc).__name__} was taken for an error of the library's")
    except BaseException as caught:  # noqa: BLE001 - the edge
        return caught
    raise AssertionError("unreachable")


def test_a_sigterm_passes_every_except_exception_and_ends_as_exit_143():
    caught = _through_a_library(SigtermReceived("terminated"))
    err = BccError.from_exception(caught)
    assert isinstance(err, Terminated) and err.exit_code == 143
    assert err.one_line() == (
        "error: terminated (SIGTERM) (fix: continue with `bcc resume RUN_DIR`)"
    )


def test_ctrl_c_ends_as_exit_130_and_a_bug_as_exit_1():
    err = BccError.from_exception(_through_a_library(KeyboardInterrupt()))
    assert type(err) is Interrupted and err.exit_code == 130
    bug = BccError.from_exception(ZeroDivisionError("division by zero"))
    assert bug.exit_code == 1 and "ZeroDivisionError: division by zero" in str(bug)
