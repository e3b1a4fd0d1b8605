"""Re-executing a notebook top to bottom in a fresh kernel (the end-of-run verification)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import Any

import nbformat

from notebook_bcc.kernel.gateway import Gateway
from notebook_bcc.kernel.records import CellOutcome
from notebook_bcc.kernel.session import FETCH_CHARS, KernelSession

__all__ = ["VerificationResult", "cells_to_verify", "execute_notebook", "failure_text"]


@dataclass(frozen=True)
class VerificationResult:
    status: str  # "passed" | "failed"
    first_failing_cell: int | None
    error: str | None
    duration_ms: int
    values: dict[str, Any] = field(default_factory=dict)  # the ``fetch`` names' JSON values
    ran_during_run_ms: int = 0  # verified as it went (``shadow.py``): time spent during the run


def failure_text(outcome: CellOutcome) -> str:
    """The verdict's one-line error for a failed cell ("NameError: name 'x' ...")."""
    value = (outcome.error_value or "").split(";")[0]  # drop "it was restarted"
    return " ".join(f"{outcome.error_name}: {value}".split())


def cells_to_verify(nb: nbformat.NotebookNode) -> tuple[tuple[int, str], ...]:
    """(index, source) of the code cells a top-to-bottom run executes: every code cell with
    some code and no ``skip-execution`` tag."""
    return tuple(
        (index, cell.source)
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and cell.source.strip()
        and "skip-execution" not in cell.get("metadata", {}).get("tags", [])
    )


def execute_notebook(
    nb: nbformat.NotebookNode,
    cwd: Path,
    *,
    cell_timeout: float = 600,
    env: Mapping[str, str] | None = None,
    fetch: Sequence[str] = (),
    sandboxed: bool = False,
    gateway: Gateway | None = None,
) -> tuple[VerificationResult, nbformat.NotebookNode]:
    """Re-execute a copy of ``nb`` top to bottom in a fresh kernel; stop at the first failure.

    Returns the verdict (with the JSON values of the ``fetch`` variables the re-execution
    left, when every cell passed) and the executed copy (outputs capped like a session's).
    Raises KernelError when the kernel cannot start.
    """
    values: dict[str, Any] = {}
    executed = copy.deepcopy(nb)
    started = monotonic()
    failing: int | None = None
    error: str | None = None
    with KernelSession(
        Path(cwd), cell_timeout=cell_timeout, env=env, sandboxed=sandboxed, gateway=gateway
    ) as session:
        for index, _ in cells_to_verify(executed):
            cell = executed.cells[index]
            outcome = session.run_cell(cell.source)
            cell.outputs = [nbformat.from_dict(o) for o in outcome.outputs]
            cell.execution_count = outcome.execution_count
            if outcome.status != "ok":
                failing, error = index, failure_text(outcome)
                break
        if failing is None and fetch:
            values = session.fetch_json(fetch, max_chars=FETCH_CHARS)
    return (
        VerificationResult(
            status="passed" if failing is None else "failed",
            first_failing_cell=failing,
            error=error,
            duration_ms=int((monotonic() - started) * 1000),
            values=values,
        ),
        executed,
    )
