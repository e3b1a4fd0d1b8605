"""RunContext: what the parts of one run share (settings, run directory, notebook, state)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notebook_bcc.config import RunConfig
from notebook_bcc.rundir.notebook import NotebookDocument
from notebook_bcc.rundir.state import WorkflowState
from notebook_bcc.rundir.store import RunStore
from notebook_bcc.workflow.kernels import KernelFactory, open_kernel

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
    kernels: KernelFactory = open_kernel  # where the run's kernels come from (``kernels.py``)


@dataclass(frozen=True)
class RunResult:
    """How a run ended: its directory, final state, exit code, one-line message, summary."""

    run_dir: Path
    final_state: str
    exit_code: int
    message: str
    summary: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The ``type: result`` line of ``bcc run --json``."""
        counts = self.summary.get("counts", {})
        return {
            "type": "result",
            "run_dir": str(self.run_dir),
            "final_state": self.final_state,
            "exit_code": self.exit_code,
            "message": self.message,
            "outcome": self.summary.get("outcome"),
            "failed_steps": counts.get("failed_steps"),
            "skipped": counts.get("skipped"),
            "verification": self.summary.get("verification"),
            "answers": self.summary.get("answers", []),
            "key_results": self.summary.get("key_results"),
        }

    def outcome(self) -> str:
        """The final state, with the failed and skipped steps it carries if any, and a failed
        verification."""
        counts = self.summary.get("counts", {})
        failed, skipped = counts.get("failed_steps") or 0, counts.get("skipped") or 0
        short = [f"{failed} failed step(s)"] if failed else []
        short += [f"{skipped} skipped"] if skipped else []
        line = self.final_state + (f" with {', '.join(short)}" if short else "")
        if (self.summary.get("verification") or {}).get("status") == "failed":
            line += ", but the notebook does not re-run (verification failed)"
        return line
