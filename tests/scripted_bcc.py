"""``bcc`` in a process of its own, its kernels scripted (``tests/scripted_kernel.py``).

For tests that signal or kill ``bcc`` itself (the fault matrix): run it as
``python -m tests.scripted_bcc ARGS...`` from the repository's root. It is ``bcc``'s own entry
point (``cli.main``) with the Runner's default kernel factory replaced, so no kernel process
is started; the tests that are about kernels outliving ``bcc`` use the real one.

``$BCC_SCRIPTED_SLOW_CELL``, when set, is a text: a cell whose code holds it first creates the
file ``$BCC_SCRIPTED_SLOW_MARK``, then sleeps 60 s before it runs (a test signals ``bcc``
while that cell runs, as while a long cell runs in a real kernel).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from notebook_bcc import cli
from notebook_bcc.workflow import runner
from tests.scripted_kernel import ScriptedKernel, ScriptedKernels

SLOW_S = 60.0


def _slow(source: str, kernel: ScriptedKernel) -> None:
    """The slow cell of ``$BCC_SCRIPTED_SLOW_CELL`` (see the module's docstring)."""
    if os.environ.get("BCC_SCRIPTED_SLOW_CELL", "\0") in source:
        Path(os.environ["BCC_SCRIPTED_SLOW_MARK"]).touch()
        time.sleep(SLOW_S)


if __name__ == "__main__":
    runner.open_kernel = ScriptedKernels(_slow)  # type: ignore[assignment]
    cli.main()
