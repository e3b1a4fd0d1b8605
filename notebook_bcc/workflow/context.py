"""RunContext: what the parts of one run share (settings, run directory, notebook, state)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notebook_bcc.config import RunConfig
from notebook_bcc.rundir.notebook import NotebookDocument
from notebook_bcc.rundir.state import WorkflowState
from notebook_bcc.rundir.store import RunStore

__all__ = ["RunContext", "RunResult"]


@dataclass
class RunContext:
    """Shared by the runner, its transition handlers and its kernel host.

    Mutable on purpose: an abort swaps ``state`` for the last checkpoint, and every part sees
    the swap because each reads ``ctx.state`` when it acts.
    """

    config: RunConfig
    store: RunStore
    doc: NotebookDocument
    state: WorkflowState


@dataclass(frozen=True)
class RunResult:
    """How a run ended: its directory, final state, exit code, one-line message, summary."""

    run_dir: Path
    final_state: str
    exit_code: int
    message: str
    summary: dict[str, Any]
