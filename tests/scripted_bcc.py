"""``bcc`` in a process of its own, its kernels scripted (``tests/scripted_kernel.py``).

For tests that signal or kill ``bcc`` itself (the fault matrix): run it as
``python -m tests.scripted_bcc ARGS...`` from the repository's root. It is ``bcc``'s own entry
point (``cli.main``) with the Runner's default kernel factory replaced, so no kernel process
is started; the tests that are about kernels outliving ``bcc`` use the real one.

``$BCC_SCRIPTED_SLOW_CELL``, when set, is a text: a cell whose code holds it first adds its
process's pid as a line to the file ``$BCC_SCRIPTED_SLOW_MARK``, then sleeps 60 s (or
``$BCC_SCRIPTED_SLOW_S``) before it runs (a test signals ``bcc`` while that cell runs, as while
a long cell runs in a real kernel).

A ``bcc batch`` run so starts each row's ``bcc`` as this one (``scripted_runs``), from any
working directory; ``dask_setup`` does the same on the workers of a Dask cluster.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from notebook_bcc import cli
from notebook_bcc.batch import attempt
from notebook_bcc.workflow import runner
from tests.scripted_kernel import ScriptedKernel, ScriptedKernels

SLOW_S = 60.0


def _slow(source: str, kernel: ScriptedKernel) -> None:
    """The slow cell of ``$BCC_SCRIPTED_SLOW_CELL`` (see the module's docstring)."""
    if os.environ.get("BCC_SCRIPTED_SLOW_CELL", "\0") in source:
        with open(os.environ["BCC_SCRIPTED_SLOW_MARK"], "a", encoding="utf-8") as mark:
            mark.write(f"{os.getpid()}\n")
        time.sleep(float(os.environ.get("BCC_SCRIPTED_SLOW_S", SLOW_S)))


ROOT = Path(__file__).resolve().parents[1]
COMMAND = (sys.executable, "-m", "tests.scripted_bcc")


def scripted_runs() -> None:
    """The rows of a batch started from this process run ``COMMAND`` (this ``bcc``)."""
    attempt.BCC_COMMAND = COMMAND
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")


def dask_setup(worker: Any) -> None:
    """A Dask worker that preloads this module (``preload=["tests.scripted_bcc"]``) runs its
    rows as scripted ``bcc``s; a worker started to replace a lost one preloads it too."""
    scripted_runs()


if __name__ == "__main__":
    runner.open_kernel = ScriptedKernels(_slow)  # type: ignore[assignment]
    scripted_runs()
    cli.main()
