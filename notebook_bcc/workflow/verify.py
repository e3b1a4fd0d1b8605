"""The end of a completed run: the verdict of the fresh kernel that ran the notebook top to
bottom as it grew (``kernel/shadow.py``), and whether it reproduces the results
(``final_answers``, ``final_metrics``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from notebook_bcc.kernel.protocol import Kernel
from notebook_bcc.kernel.shadow import ShadowRun
from notebook_bcc.kernel.verification import cells_to_verify
from notebook_bcc.rundir.results import RESULT_LIMITS, RESULT_NAMES, compare
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.kernels import KernelRequest, gateway_of

__all__ = ["SCRATCH", "discard_scratch", "make_shadow", "verification_session", "verify"]

#: The verification kernel's own working directory in the run directory (a local kernel's):
#: ``assets/`` (hard links to the run's) and an empty ``outputs/``, made afresh for each of its
#: kernels, so its cells never write over the run's files while the run reads them, a file a
#: removed cell left behind does not help it, and it can be killed at the end rather than
#: waited for. Removed when the verification ends.
SCRATCH = ".verify"


def make_shadow(ctx: RunContext) -> ShadowRun:
    """The run's verify-as-you-go kernel: in ``SCRATCH`` for a local kernel (killed at the
    end), in a remote directory of its own on a gateway (asked to remove it and exit)."""
    local = gateway_of(ctx.config) is None
    return ShadowRun(lambda: verification_session(ctx), disposable=local)


def verification_session(ctx: RunContext) -> Kernel:
    """A fresh kernel like the run's (sandboxed, or on the gateway, as it is). On a gateway
    it works in ``bcc-runs/<run id>.verify`` there (the data sent or linked again), not in the
    run kernel's directory, and removes it when it is shut down (``Gateway.cleanup_code``)."""
    root = ctx.store.root
    cwd = root if gateway_of(ctx.config) is not None else _scratch(root)
    return ctx.kernels(KernelRequest(ctx.config, root, cwd, "verify"))


def _scratch(root: Path) -> Path:
    scratch = root / SCRATCH
    discard_scratch(root)
    (scratch / "assets").mkdir(parents=True)
    (scratch / "outputs").mkdir()
    for source in sorted((root / "assets").iterdir()):
        target = scratch / "assets" / source.name
        try:
            os.link(source, target)
        except OSError:  # a file system without hard links
            shutil.copy2(source, target)
    return scratch


def discard_scratch(root: Path) -> None:
    """Remove the verification kernel's working directory (if any)."""
    shutil.rmtree(root / SCRATCH, ignore_errors=True)


def verify(ctx: RunContext, results: dict[str, Any], shadow: ShadowRun) -> dict[str, Any]:
    """The verification record of summary.json; ``results`` are the run's own values.
    ``shadow`` verified as the run went: only the cells it has not run yet run now. When the
    verification kernel itself failed, the record is ``failed`` with ``verifier_failed`` and the
    kernel's error ("verification kernel: ..."), never "results differ"."""
    cells = cells_to_verify(ctx.doc.nb)
    shadow.submit(cells)
    deadline = ctx.config.cell_timeout * max(1, len(cells)) + 60
    result = shadow.finish(RESULT_LIMITS, timeout=deadline)
    discard_scratch(ctx.store.root)
    verification: dict[str, Any] = {
        "status": result.status,
        "first_failing_cell": result.first_failing_cell,
        "error": result.error,
        "duration_ms": result.duration_ms,
        "during_run_ms": result.ran_during_run_ms,
    }
    if result.verifier_failed:  # the verification kernel failed, not the notebook
        verification["verifier_failed"] = True
    ours = {k: v for k, v in results.items() if k in RESULT_NAMES}
    if result.status == "passed" and ours:  # compared only with values the verifier read
        mismatches = compare(ours, result.values)
        verification["results"] = "differ" if mismatches else "reproduced"
        verification["mismatches"] = mismatches
        if mismatches:  # the notebook re-runs, but not to the same results
            verification["status"] = "failed"
            verification["error"] = "results differ on re-execution: " + mismatches[0]
    ctx.store.append_event({"type": "verification", **verification})
    return verification
