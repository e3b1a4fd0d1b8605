"""One handler per agent event: what a validated payload does to the state, the notebook and
the kernel, and where the machine goes next (docs/architecture.md, "One transition").

Each handler returns an :class:`Outcome`: the target state and whether a guard forced it; the
runner alone commits it (``commit.py``). The state's changes are WorkflowState's own methods.
The guards themselves are pure functions in ``guards.py``; a handler applies their verdict and
writes it to the transition log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from notebook_bcc.contract.payloads import (
    ActionsPayload,
    AlternativesPayload,
    BehaviorPayload,
    ParsedPayload,
    PlanRevision,
    ReflectionPayload,
    StageReflectionPayload,
    StagesPayload,
    StepsPayload,
    parse_payload,
)
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import PayloadError
from notebook_bcc.fsm import Event, State
from notebook_bcc.kernel.figures import Figure
from notebook_bcc.rundir.notebook import CellTag
from notebook_bcc.rundir.state import StageRecord, StepRecord
from notebook_bcc.workflow import guards, revisions
from notebook_bcc.workflow.actions import perform
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.guards import Guard
from notebook_bcc.workflow.host import KernelHost

__all__ = ["Handlers", "Outcome"]


@dataclass(frozen=True)
class Outcome:
    """Where a handled payload takes the machine, whether a guard forced it there, and the
    location it moved the run to (a plan's first stage, a new step, a new behavior), where its
    transition is filed (None: where it was asked)."""

    target: State
    forced: bool = False
    about: tuple[str, int] | None = None


def _log_guard(log: TransitionLog, guard: Guard) -> None:
    log.add_guard(guard.name, guard.effect, guard.reason)


class Handlers:
    """The payload handlers of one run, and the entry actions of stages and steps."""

    def __init__(self, ctx: RunContext, host: KernelHost) -> None:
        self.ctx = ctx
        self.host = host
        self.figures: tuple[Figure, ...] = ()  # the last action's figures, for its reflector

    def handle(self, event: Event, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        handler = {
            Event.START_WORKFLOW: self.on_stages,
            Event.FOLLOW_UP: self.on_follow_up,
            Event.START_STEP: self.on_steps,
            Event.START_BEHAVIOR: self.on_behavior,
            Event.COMPLETE_ACTION: self.on_actions,
            Event.COMPLETE_STEP: self.on_reflection,
            Event.COMPLETE_STAGE: self.on_stage_reflection,
        }[event]
        return handler(parsed, log)

    def check_payload(self, parsed: ParsedPayload) -> None:
        """Checks beyond the schema (PayloadError): a follow-up's stages have ids of their own;
        a behavior belongs to the current step; a plan revision changes only what is still to
        come."""
        value = parsed.value
        s = self.ctx.state
        if isinstance(value, StagesPayload) and s.asked is not None:
            taken = {st.id for st in s.stages} & {st.id for st in value.stages}
            if taken:
                raise PayloadError(
                    f"stage id {', '.join(sorted(taken))} is taken by an earlier stage; a "
                    "follow-up's stages need new ids",
                    kind="stages",
                )
        if isinstance(value, ReflectionPayload | StageReflectionPayload) and value.revision:
            revisions.check(value.revision, self.ctx.state, parsed.kind)
        if isinstance(value, BehaviorPayload | AlternativesPayload):
            step = self.ctx.state.step
            if step is not None and value.step_id != step.id:
                raise PayloadError(
                    f"behavior step_id '{value.step_id}' is not the current step '{step.id}'",
                    kind=parsed.kind,
                )

    # -- position -------------------------------------------------------------------------
    def current_behavior(self) -> BehaviorPayload | None:
        s = self.ctx.state
        if s.behavior is None and s.behavior_xml:  # a state read from state.json
            value = parse_payload(s.behavior_xml, "behavior").value
            assert isinstance(value, BehaviorPayload)
            s.behavior = value
        assert s.behavior is None or isinstance(s.behavior, BehaviorPayload)
        return s.behavior

    def tag(self) -> CellTag:
        s = self.ctx.state
        return CellTag(
            s.stage.id if s.stage else "",
            s.step.id if s.step else "",
            s.behavior_id,
            s.iteration,
            s.seq + 1,
        )

    def enter_stage(self, index: int) -> None:
        doc = self.ctx.doc
        stage = self.ctx.state.enter_stage(index)
        doc.add_stage_heading(stage.title, stage.goal, self.tag())
        doc.save()

    def enter_step(self, index: int) -> None:
        doc = self.ctx.doc
        step = self.ctx.state.enter_step(index)
        doc.add_step_heading(step.title, self.tag(), step.goal)
        doc.save()

    def start_step(self, order: Sequence[int], log: TransitionLog) -> bool:
        """Enter the first step of ``order`` that can start; those that cannot (G8) are
        skipped on the way, with a note in the notebook. False when none can start."""
        s = self.ctx.state
        for index in order:
            step = s.stage.steps[index]
            guard = guards.blocked("step", step.required_variables, s.unmade())
            if guard is None:
                self.enter_step(index)
                return True
            s.move_to(s.stage_index, index)
            self._skip(step, guard, log)
        self.ctx.doc.save()
        return False

    def _skip(self, record: StageRecord | StepRecord, guard: Guard, log: TransitionLog) -> None:
        """G8 at the current position: ``record`` is skipped, logged and noted in the notebook."""
        record.skip(guard.reason)
        _log_guard(log, guard)
        self.ctx.doc.add_skip_note(record.title, guard.reason, self.tag())

    def here(self) -> tuple[str, int]:
        """The run's location and iteration."""
        s = self.ctx.state
        return s.path, s.iteration

    def next_stage(self, log: TransitionLog) -> Outcome:
        """NEXT_STAGE (no agent): the next pending stage that can start (G8 skips the others),
        or the end of the workflow."""
        s = self.ctx.state
        for index in range(s.stage_index + 1, len(s.stages)):
            stage = s.stages[index]
            if stage.status != "pending":
                continue
            guard = guards.blocked("stage", stage.required_variables, s.unmade())
            if guard is None:
                self.enter_stage(index)
                return Outcome(State.STAGE_RUNNING, about=(s.path, 0))
            s.move_to(index)
            self.ctx.doc.add_stage_heading(stage.title, stage.goal, self.tag())
            self._skip(stage, guard, log)
            self.ctx.doc.save()
        return Outcome(State.WORKFLOW_COMPLETED)

    def _capped(self, items: Any, cap: int, what: str, log: TransitionLog) -> list[Any]:
        kept, guard = guards.cap_plan(items, cap, what)
        if guard is not None:
            _log_guard(log, guard)
            self.ctx.state.count_forced()
        return kept

    # -- planners -------------------------------------------------------------------------
    def on_stages(self, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        p = parsed.value
        assert isinstance(p, StagesPayload)
        s, doc = self.ctx.state, self.ctx.doc
        stages = self._capped(p.stages, self.ctx.config.max_stages, "stages", log)
        s.plan([_plan_record(StageRecord, st) for st in stages], p.title or "", p.focus or "")
        if p.title:
            doc.set_title(p.title)
        self.enter_stage(0)
        return Outcome(State.STAGE_RUNNING, about=self.here())

    def on_follow_up(self, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        """FOLLOW_UP: the follow-up's stages go after the plan's, under a ``## Follow-up``
        heading; the earlier stages, their findings and the kernel stay as they are."""
        p = parsed.value
        assert isinstance(p, StagesPayload)
        s, doc = self.ctx.state, self.ctx.doc
        stages = self._capped(p.stages, self.ctx.config.max_stages, "stages", log)
        records = [_plan_record(StageRecord, st) for st in stages]
        asked = s.plan_follow_up(records, (p.focus or "").strip())  # focus: the planner's intent
        # the heading is tagged with the follow-up's first stage
        doc.add_markdown(f"## Follow-up: {asked.title}", self.tag(), role="follow_up")
        self.enter_stage(asked.first_stage)
        return Outcome(State.STAGE_RUNNING, about=self.here())

    def on_steps(self, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        p = parsed.value
        assert isinstance(p, StepsPayload)
        s = self.ctx.state
        steps = self._capped(p.steps, self.ctx.config.max_steps_per_stage, "steps", log)
        records = [
            _plan_record(StepRecord, t, pcs=[[aspect, text] for aspect, text in t.pcs if text])
            for t in steps
        ]
        s.plan_steps(records, (p.focus or "").strip())
        if self.start_step(range(len(records)), log):
            return Outcome(State.STEP_RUNNING, about=self.here())
        s.end_stage("skipped" if records else "complete")
        return Outcome(State.STAGE_COMPLETED, forced=True, about=self.here())

    def on_behavior(self, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        p = parsed.value
        assert isinstance(p, BehaviorPayload)
        s = self.ctx.state
        s.next_behavior()
        s.start_behavior(p, parsed.xml)
        return Outcome(State.BEHAVIOR_RUNNING, about=self.here())

    def on_fork(self, parsed: ParsedPayload, log: TransitionLog) -> list[BehaviorPayload]:
        """FORK: the step's behavior count goes up by one for the whole fork and no behavior
        is current (each branch has its own); the alternatives beyond the cap are dropped."""
        p = parsed.value
        assert isinstance(p, AlternativesPayload)
        s = self.ctx.state
        kept = self._capped(p.behaviors, self.ctx.config.max_alternatives, "alternatives", log)
        s.next_behavior()
        return kept

    # -- the action: cells in the kernel, then the checks (G1 facts, G7): actions.py --------
    def on_actions(self, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        p = parsed.value
        assert isinstance(p, ActionsPayload)
        self.figures = perform(p, self.ctx, self.host, self.tag(), self.current_behavior(), log)
        return Outcome(State.BEHAVIOR_COMPLETED)

    def on_reflection(self, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        p = parsed.value
        assert isinstance(p, ReflectionPayload)
        self._revise(p.revision, log)
        ctx = self.ctx
        s, step, doc = ctx.state, ctx.state.step, ctx.doc
        missing = [a for a, ok in s.last_checks.get("artifacts", []) if not ok]
        complete = p.next_state == "STEP_COMPLETED"
        feedback = p.decision_reasoning
        overridden = guards.completion(complete, missing, s.last_checks.get("unsaved"))
        if overridden is not None:
            _log_guard(log, overridden)
            s.counters.guard_overrides += 1
            complete, feedback = False, f"{overridden.reason}. {feedback}"
        self.figures = ()
        s.review_behavior(
            verdict="complete" if complete else "retry",
            reasoning=" ".join(dict.fromkeys(x for x in (p.goal_reasoning, feedback) if x)),
            produced=[[v.name, v.description] for v in p.variables_produced],
            recommendations=(p.recommendations or "").strip(),
        )
        if complete:
            s.complete_step((p.comment or "").strip())
            if step.comment:
                doc.add_markdown(step.comment, self.tag(), role="comment")
                doc.save()
            return Outcome(State.STEP_COMPLETED)
        return self._retry(feedback, log)

    def no_branch_kept(self, feedback: str, log: TransitionLog) -> Outcome:
        """JOIN with no branch to keep: the step goes on as after a failed behavior."""
        return self._retry(f"No alternative completed the step. {feedback}", log)

    def _retry(self, feedback: str, log: TransitionLog) -> Outcome:
        """The behavior did not complete the step: another one, or (G3) the step failed."""
        ctx = self.ctx
        s, step, doc = ctx.state, ctx.state.step, ctx.doc
        s.retry_step(feedback)
        capped = guards.step_cap(step.behaviors, ctx.config.max_behaviors_per_step)
        if capped is None:
            return Outcome(State.STEP_RUNNING)
        _log_guard(log, capped)
        s.fail_step(capped.reason)
        doc.add_failure_note(step.title, capped.reason, feedback, self.tag())
        doc.save()
        return Outcome(State.STEP_COMPLETED, forced=True)

    def on_stage_reflection(self, parsed: ParsedPayload, log: TransitionLog) -> Outcome:
        p = parsed.value
        assert isinstance(p, StageReflectionPayload)
        self._revise(p.revision, log)
        s, stage = self.ctx.state, self.ctx.state.stage
        self._manage_variables(p, log)
        reviewed = next((t for t in stage.steps if t.id == p.step_id), s.step)
        if reviewed is not None:
            reviewed.findings = [[priority, text.strip()] for priority, text in p.findings]
        pending = [i for i, t in enumerate(stage.steps) if t.status == "pending"]
        wants_next, moved = guards.plan_move(
            p.next_state == "STEP_RUNNING", [stage.steps[i].id for i in pending]
        )
        if moved is not None:
            _log_guard(log, moved)
            if moved.effect == "steps_skipped":
                for i in pending:
                    stage.steps[i].skip()
        if wants_next:
            ids = {stage.steps[i].id: i for i in pending}
            first = ids.get(p.next_focus or "", pending[0])
            if self.start_step([first, *(i for i in pending if i != first)], log):
                return Outcome(State.STEP_RUNNING)
        done = all(t.status == "complete" for t in stage.steps)
        s.end_stage("complete" if done else "partial", (p.stage_experience or "").strip())
        return Outcome(State.STAGE_COMPLETED)

    def _revise(self, revision: PlanRevision | None, log: TransitionLog) -> None:
        """Apply a checked plan revision: the state, the log, and one line in the notebook."""
        if revision is None:
            return
        changes = revisions.apply(revision, self.ctx.state)
        log.add_revision(revision.reason, changes)
        self.ctx.doc.add_markdown(
            f"*Plan revised: {'; '.join(changes)}. Why: {revision.reason}*",
            self.tag(),
            role="revision",
        )
        self.ctx.doc.save()

    def _manage_variables(self, p: StageReflectionPayload, log: TransitionLog) -> None:
        """Retain, and deprecate under G5; free ``safe`` deprecations when so configured."""
        ctx = self.ctx
        s = ctx.state
        for var in p.retain:
            s.ledger.retain(var.name, var.next_use)
        protected = s.remaining_required()
        free: list[str] = []
        for var in p.deprecate:
            decision = s.ledger.deprecate(var.name, var.replacement, s.stage.id, protected)
            if not decision.applied:
                _log_guard(
                    log, Guard("G5", "deprecation_refused", f"{var.name}: {decision.reason}")
                )
            elif var.safe and ctx.config.free_deprecated:
                free.append(var.name)
        if free and self.host.kernel is not None:
            self.host.kernel.delete(free)
            s.ledger.mark_deleted(free, f"{s.path}#{s.seq + 1}")
            ctx.store.append_event({"type": "freed", "variables": free})
        ctx.doc.set_variables(s.ledger.to_json())
        ctx.doc.save()


def _plan_record(cls: type[Any], spec: Any, **more: Any) -> Any:
    """A StageRecord or StepRecord from a planned StageSpec or StepSpec."""
    return cls(
        spec.id,
        spec.title,
        spec.goal,
        [v.name for v in spec.verified_artifacts],
        [v.name for v in spec.required_variables],
        **more,
    )
