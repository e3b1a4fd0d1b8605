"""The action generator's payload carried out: each code cell in the kernel (its markdown
before it, once it ran), the G7 repeat guard, restarts after a dead or timed-out cell, then
the G1 facts (declared artifacts present, acceptance criteria evaluated) for the reflector.
"""

from __future__ import annotations

from dataclasses import replace

from notebook_bcc.contract.payloads import ActionsPayload, BehaviorPayload
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import KernelError
from notebook_bcc.kernel.figures import Figure, figures_in
from notebook_bcc.kernel.records import CellOutcome, CheckReport
from notebook_bcc.rundir.notebook import CellTag, NotebookDocument
from notebook_bcc.rundir.results import FINDINGS_NAMES, RESULT_NAMES
from notebook_bcc.rundir.state import CellFact
from notebook_bcc.workflow import guards
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.host import KernelHost

__all__ = ["LIVE_SAVE_S", "fact_from", "perform"]

#: a cell's own save is skipped when the notebook was saved less than this long ago (seconds)
LIVE_SAVE_S = 1.0


def perform(
    p: ActionsPayload,
    ctx: RunContext,
    host: KernelHost,
    tag: CellTag,
    behavior: BehaviorPayload | None,
    log: TransitionLog,
) -> tuple[Figure, ...]:
    """Run the action's cells and record what happened; the figures its cells drew."""
    kernel = host.ensure()
    s, step, doc = ctx.state, ctx.state.step, ctx.doc
    texts: list[str] = []
    facts: list[CellFact] = []
    notes: list[str] = []
    figures: list[Figure] = []
    failed = False
    made = _MadeBy(s.made_by_failed_cells, {r.name for r in s.ledger.in_kernel()})
    for n, action in enumerate(p.actions, 1):
        if action.kind == "title":
            s.project_title = action.content.strip()
            doc.set_title(s.project_title)
            continue
        if action.kind == "text":
            texts.append(action.content)
            continue
        cell_id = f"{s.seq + 1}-{n}"
        if failed:
            why = "not run: an earlier cell of this action failed"
            log.add_cell(cell_id, "skipped", 0, why)
            facts.append(CellFact("skipped", why, code=action.content))  # a retry sees it
            continue
        repeated = guards.repeated_code(action.content, step.failed_code)
        if repeated is not None:
            failed = True
            log.add_guard(repeated.name, repeated.effect, repeated.reason)
            notes.append(f"G7: {repeated.reason}")
            fact = CellFact("skipped", repeated.reason, "RepeatedCode", repeated.reason)
            facts.append(fact)
            continue
        restarts = kernel.restarts
        builds_results = any(n in action.content for n in (*RESULT_NAMES, *FINDINGS_NAMES))
        outcome = kernel.run_cell(
            action.content,
            spill_name=cell_id,
            excerpt_chars=ctx.config.output_cap_chars if builds_results else None,
        )
        s.counters.cells += 1
        log.add_cell(cell_id, outcome.status, outcome.duration_ms, outcome.excerpt)
        shown = figures_in(outcome.outputs, first=len(figures) + 1)
        figures += shown
        facts.append(fact_from(outcome, tuple(f.note for f in shown), action.content))
        made.ran(cell_id, outcome.status, action.content)
        if outcome.status == "ok":
            _flush_texts(doc, texts, tag)
            doc.add_code(action.content, tag, outcome.outputs, outcome.execution_count)
            doc.save(unless_within=LIVE_SAVE_S)
            continue
        failed = True
        step.failed_code.append(guards.code_digest(action.content))
        if ctx.config.keep_failed_cells:
            _flush_texts(doc, texts, tag)
            doc.add_code(action.content, tag, outcome.outputs, outcome.execution_count, failed=True)
            doc.save()
        texts.clear()
        if outcome.status in ("dead", "timeout"):
            notes.append(host.recover(outcome, kernel.restarts > restarts))
    if not failed:
        _flush_texts(doc, texts, tag)
        doc.save()
    names = [v.name for v in behavior.outputs] if behavior else []
    criteria = list(behavior.acceptance) if behavior else []
    try:
        report = host.check_and_inspect(f"{s.path}#{s.seq + 1}", names, criteria)
    except (TimeoutError, KernelError) as exc:
        notes.append(f"checks could not run: {exc}")
        report = CheckReport(tuple((n, False) for n in names), ())
    s.made_by_failed_cells = made.held({r.name for r in s.ledger.in_kernel()})
    report, unsaved = made.checked(report)
    notes += [
        f"{name} is in the kernel, but made only by {why}, so the notebook does not have "
        "it and it counts as MISSING: make it again in a cell that succeeds"
        for name, why in unsaved.items()
    ]
    notes += host.result_notes([a.content for a in p.actions if a.kind == "code"])
    for name, present in report.artifacts:
        log.add_artifact(name, present)
    for expr, status, detail in report.criteria:
        log.add_criterion(expr, status, detail)
    checks = {
        "artifacts": [list(a) for a in report.artifacts],
        "criteria": [list(c) for c in report.criteria],
        "notes": notes,
        **({"unsaved": unsaved} if unsaved else {}),
    }
    s.record_action(facts, checks)
    doc.save()
    return tuple(figures)


class _MadeBy:
    """Which variables only a failed or timed-out cell made (G1 counts them missing: the
    notebook, which keeps no failed cell, does not have them). ``made``: the run's record,
    name -> the cell that made it; ``before``: the names in the kernel before the action."""

    def __init__(self, made: dict[str, str], before: set[str]) -> None:
        self.made, self.before, self.kept = dict(made), before, set[str]()

    def ran(self, cell_id: str, status: str, code: str) -> None:
        bound = guards.names_bound(code)
        if status == "ok":
            self.kept |= bound
            for name in bound:
                self.made.pop(name, None)
            return
        how = {"timeout": "timed out", "dead": "killed the kernel"}.get(status, "failed")
        for name in bound - self.before - self.kept:
            self.made[name] = f"cell {cell_id}, which {how}"

    def held(self, in_kernel: set[str]) -> dict[str, str]:
        """The record, for the names still in the kernel."""
        self.made = {name: why for name, why in self.made.items() if name in in_kernel}
        return self.made

    def checked(self, report: CheckReport) -> tuple[CheckReport, dict[str, str]]:
        """The checks with an artifact only a failed cell made as missing; those artifacts."""
        unsaved = {n: self.made[n] for n, present in report.artifacts if present and n in self.made}
        artifacts = tuple((n, present and n not in unsaved) for n, present in report.artifacts)
        return replace(report, artifacts=artifacts), unsaved


def _flush_texts(doc: NotebookDocument, texts: list[str], tag: CellTag) -> None:
    for text in texts:
        doc.add_markdown(text, tag)
    texts.clear()


def fact_from(outcome: CellOutcome, figures: tuple[str, ...] = (), code: str = "") -> CellFact:
    return CellFact(
        outcome.status, outcome.excerpt, outcome.error_name, outcome.error_value, figures, code
    )
