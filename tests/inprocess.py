"""``bcc`` in this process, its kernels scripted (``tests/scripted_kernel.py``).

``bcc_in_process(*args)`` runs one command as ``bcc`` would (``cli.invoke``: the same options,
outcome lines and exit codes) and returns what ``subprocess.run`` would, without starting a
Python, a kernel or a verifier process: the workflow's logic runs at the speed of its own code.
The run's kernels come from ``kernels`` (a ``ScriptedKernels``; a fresh one when not given),
or are real ones with ``real_kernels`` (for tests about kernels whose ``bcc`` need not be a
process of its own: it saves a Python and its imports, litellm's 7 s of CPU among them).
As ``tests.conftest.run_bcc``: ``env`` adds to the environment for the call; ``environ``
replaces it whole, as a subprocess's ``env`` would.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from notebook_bcc import cli, failpoints
from notebook_bcc.workflow import runner
from tests.scripted_kernel import ScriptedKernels

__all__ = ["bcc_in_process", "scripted_kernels"]

ROOT = Path(__file__).resolve().parents[1]


def bcc_in_process(
    *args: str,
    env: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    kernels: ScriptedKernels | None = None,
    cwd: Path = ROOT,
    real_kernels: bool = False,
) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with (
        _environment({**(os.environ if environ is None else environ), **(env or {})}),
        contextlib.chdir(cwd),
        _signals_kept(),
        contextlib.nullcontext() if real_kernels else scripted_kernels(kernels),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        failpoints.reset()  # this command's, from its environment
        code = cli.invoke(list(args))
    failpoints.reset()  # and none for what follows
    return subprocess.CompletedProcess(["bcc", *args], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def scripted_kernels(factory: ScriptedKernels | None = None) -> Iterator[None]:
    """Within it, every run this process starts (``bcc`` in process, or the library's
    ``notebook_bcc.run``) takes its kernels from ``factory`` (a fresh ``ScriptedKernels``)."""
    before = runner.open_kernel
    runner.open_kernel = factory or ScriptedKernels()  # type: ignore[assignment]
    try:
        yield
    finally:
        runner.open_kernel = before


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    """``bcc`` sets its own SIGINT and SIGTERM handlers; pytest's come back after."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
