"""The end of a run: its exit code and message, then what it leaves for people and scripts
(the verification verdict, summary.json, report.html, and summary.md written last)."""

from __future__ import annotations

from typing import Any

from notebook_bcc.errors import StorageError
from notebook_bcc.inputs.problem import ProblemSpec
from notebook_bcc.inputs.questions import follow_up_questions
from notebook_bcc.kernel.shadow import ShadowRun
from notebook_bcc.rundir.report import write_report
from notebook_bcc.rundir.state import WorkflowState
from notebook_bcc.rundir.summary import (
    build_summary,
    does_not_rerun,
    render_summary_md,
    rounds_record,
)
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.verify import verify

__all__ = [
    "COMPLETED_WITH_FAILED_STEPS",
    "NOTEBOOK_DOES_NOT_RERUN",
    "finish",
    "verdict",
    "write_results",
]

#: the exit code of a run that completed with failed steps (docs/cli.md, "Exit codes")
COMPLETED_WITH_FAILED_STEPS = 9
#: the exit code of a run that completed but whose notebook failed its verification
NOTEBOOK_DOES_NOT_RERUN = 10


def verdict(
    state: WorkflowState,
    exit_code: int,
    message: str,
    verification: dict[str, Any] | None = None,
) -> tuple[int, str]:
    """The exit code and message of a run that reached ``state`` (an error's, if any, stays).
    A completed run whose ``verification`` failed is never a success: exit 10, said first."""
    if state.fsm_state == "WORKFLOW_COMPLETED":
        shortfall = state.shortfall()
        exit_code = COMPLETED_WITH_FAILED_STEPS if shortfall else 0
        message = "workflow completed" + (f" with {shortfall}" if shortfall else "")
        failed = does_not_rerun(verification or {})
        if failed:
            exit_code, message = NOTEBOOK_DOES_NOT_RERUN, f"{message}, but {failed}"
    elif state.fsm_state == "WORKFLOW_FAILED" and not message:
        exit_code, message = 1, f"workflow failed: {state.error}"
    return exit_code, message


def finish(
    ctx: RunContext,
    shadow: ShadowRun | None,
    artifacts: dict[str, Any],
    spec: ProblemSpec,
    exit_code: int,
    message: str,
) -> tuple[int, str, dict[str, Any]]:
    """The end of a run: the exit code and message (after the verification, when it runs)
    and the summary written."""
    summary = write_results(ctx, shadow, artifacts, spec)
    exit_code, message = verdict(ctx.state, exit_code, message, summary["verification"])
    return exit_code, message, summary


def write_results(
    ctx: RunContext, shadow: ShadowRun | None, artifacts: dict[str, Any], spec: ProblemSpec
) -> dict[str, Any]:
    """Verify (a completed run with ``shadow``), then write the summaries and the report;
    the summary."""
    s, doc, store, config = ctx.state, ctx.doc, ctx.store, ctx.config
    verification: dict[str, Any] = {"status": "skipped", "first_failing_cell": None}
    if s.fsm_state == "WORKFLOW_COMPLETED" and shadow is not None:  # --verify
        verification = verify(ctx, artifacts, shadow)
    elif s.follow_ups and (store.root / "summary.json").exists():
        # a follow-up that did not complete: the earlier answers stand (verified then)
        artifacts = artifacts or store.read_json("summary.json").get("artifacts") or {}
    doc.set_verification(verification)
    doc.set_variables(s.ledger.to_json())
    doc.save()
    store.redact_file("kernel.log")  # the kernels are gone: what a cell wrote to fd 1 or 2
    summary = build_summary(
        s,
        verification,
        artifacts,
        store.root,
        spec.text,
        spec.questions,
        sandboxed=config.sandbox,
        where=config.kernel_gateway or "local",
        follow_up_questions=[follow_up_questions(f.text) for f in s.follow_ups],
        rounds=rounds_record("full" if config.is_offline else config.rounds, store.events()),
    )
    store.write_json("summary.json", summary)
    try:
        write_report(store)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - a report that cannot be drawn never costs the run
        store.append_event({"type": "report_failed", "error": f"{type(exc).__name__}: {exc}"})
    # the last write: with both summaries on disk the run counts as finished
    store.write("summary.md", render_summary_md(summary))
    return summary
