"""The verification's verdict, and the cells a top-to-bottom run of a notebook executes (run in
a fresh kernel by ``shadow.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import nbformat

from notebook_bcc.kernel.records import CellOutcome

__all__ = ["VerificationResult", "cells_to_verify", "failure_text"]


@dataclass(frozen=True)
class VerificationResult:
    status: str  # "passed" | "failed"
    first_failing_cell: int | None
    error: str | None
    duration_ms: int
    values: dict[str, Any] = field(default_factory=dict)  # the ``fetch`` names' JSON values
    ran_during_run_ms: int = 0  # verified as it went (``shadow.py``): time spent during the run
    #: the verification kernel itself failed (did not start, did not finish in time, its values
    #: could not be read): ``failed`` then says nothing about the notebook
    verifier_failed: bool = False


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
