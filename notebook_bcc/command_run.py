"""Running a command to its end: the signals (SIGTERM, a first and a second Ctrl-C), the
progress view, the final line, and every error turned into one line with a remedy and its
exit code (``--debug`` shows the traceback too). ``cli.py`` declares the commands."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

import typer

from notebook_bcc.errors import BccError, SigtermReceived

__all__ = ["fail", "run_command"]


def fail(exc: BaseException, debug: bool) -> None:
    """Print ``exc`` as one line and exit with its code."""
    if debug:
        traceback.print_exception(exc)
    if isinstance(exc, SigtermReceived):
        exc = BccError.from_exception(exc)
    if isinstance(exc, BccError):
        typer.echo(exc.one_line(), err=True)
        raise typer.Exit(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        typer.echo("error: interrupted (fix: `bcc resume RUN_DIR` continues)", err=True)
        raise typer.Exit(130)
    cause = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    typer.echo(f"error: internal error: {cause} (fix: re-run with --debug and report it)", err=True)
    raise typer.Exit(1)


def _report(result: Any, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(result.as_json()) + "\n")
    else:
        report = Path(result.run_dir) / "report.html"
        shown = f" (report: {report})" if report.exists() else ""
        typer.echo(f"{result.outcome()}: {result.run_dir}/notebook.ipynb{shown}")
        if result.exit_code:
            typer.echo(result.message, err=True)
    raise typer.Exit(result.exit_code)


def _on_sigterm(signum: int, frame: Any) -> None:
    raise SigtermReceived("terminated")


_interrupts = 0


def _on_sigint(signum: int, frame: Any) -> None:
    """First Ctrl-C: interrupt, checkpoint, exit 130. Second: kill the kernels, exit now."""
    global _interrupts
    _interrupts += 1
    if _interrupts == 1:
        raise KeyboardInterrupt
    from notebook_bcc.kernel.processes import kill_live_kernels

    kill_live_kernels()
    os.write(2, b"error: interrupted twice; stopped at once (fix: `bcc resume RUN_DIR` ")
    os.write(2, b"continues from the last checkpoint)\n")
    os._exit(130)


def run_command(make: Any, quiet: bool, as_json: bool, debug: bool) -> None:
    """``make(progress_hook)`` returns a Runner; run it, print its outcome, exit with its
    code."""
    from notebook_bcc.progress import ProgressView

    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, _on_sigint)
    # an interrupted cell leaves nbclient tasks behind; their late errors are not news
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)

    try:
        with ProgressView(quiet=quiet, as_json=as_json) as view:
            runner = make(view)
            result = runner.run()
    except (typer.Exit, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - translated at the edge
        fail(exc, debug)
    _report(result, as_json)
