"""``bcc`` in a process of its own, its kernels scripted (``tests/scripted_kernel.py``).

For tests that signal or kill ``bcc`` itself (the fault matrix): run it as
``python -m tests.scripted_bcc ARGS...`` from the repository's root. It is ``bcc``'s own entry
point (``cli.main``) with the Runner's default kernel factory replaced, so no kernel process
is started; the tests that are about kernels outliving ``bcc`` use the real one.
"""

from __future__ import annotations

from notebook_bcc import cli
from notebook_bcc.workflow import runner
from tests.scripted_kernel import ScriptedKernels

if __name__ == "__main__":
    runner.open_kernel = ScriptedKernels()  # type: ignore[assignment]
    cli.main()
