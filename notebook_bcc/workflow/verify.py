"""The end of a completed run: re-execute the notebook top to bottom in a fresh kernel, and
check that it reproduces the results (``final_answers``, ``final_metrics``)."""

from __future__ import annotations

from typing import Any

from notebook_bcc.kernel.verification import execute_notebook
from notebook_bcc.rundir.results import RESULT_NAMES, compare
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.host import gateway_of

__all__ = ["verify"]


def verify(ctx: RunContext, results: dict[str, Any]) -> dict[str, Any]:
    """The verification record of summary.json; ``results`` are the run's own values."""
    result, _ = execute_notebook(
        ctx.doc.nb,
        ctx.store.root,
        cell_timeout=ctx.config.cell_timeout,
        fetch=RESULT_NAMES,
        sandboxed=ctx.config.sandbox,
        gateway=gateway_of(ctx.config),
    )
    verification: dict[str, Any] = {
        "status": result.status,
        "first_failing_cell": result.first_failing_cell,
        "error": result.error,
        "duration_ms": result.duration_ms,
    }
    ours = {k: v for k, v in results.items() if k in RESULT_NAMES}
    if result.status == "passed" and ours:
        mismatches = compare(ours, result.values)
        verification["results"] = "differ" if mismatches else "reproduced"
        verification["mismatches"] = mismatches
        if mismatches:  # the notebook re-runs, but not to the same results
            verification["status"] = "failed"
            verification["error"] = "results differ on re-execution: " + mismatches[0]
    ctx.store.append_event({"type": "verification", **verification})
    return verification
