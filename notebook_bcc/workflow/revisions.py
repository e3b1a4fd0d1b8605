"""Plan revisions: a reflector changes what is still to come (docs/agents.md, "Plans adapt").

The behavior reflector (after an attempt) and the stage reflector may send a
``<plan_revision>``: revise the goal, the artifacts or the needs of the current step or of a
later step of the stage, or of the current or a later stage, add a step, drop a pending step,
and mark earlier findings as superseded. ``check`` refuses, as a repair message the
model answers, any change to what is done (a completed, failed or skipped step; an earlier
stage) and
any change that names nothing; ``apply`` then changes the state and says, one line per
change, what it did (for the transition log, events.jsonl and the notebook).
"""

from __future__ import annotations

from notebook_bcc.contract.types import PlanChange, PlanRevision
from notebook_bcc.errors import PayloadError
from notebook_bcc.fsm import Event
from notebook_bcc.rundir.state import StageRecord, StepRecord, WorkflowState
from notebook_bcc.workflow.exchange import question

__all__ = ["apply", "check"]

OPEN = ("pending", "running")  # a step that is still to come (or under way)


def check(revision: PlanRevision, state: WorkflowState, kind: str) -> None:
    """Raise PayloadError when the revision touches what is done or names what is not there."""

    def refuse(message: str) -> PayloadError:
        done = ", ".join(f"{t.id} [{t.status}]" for t in steps) or "none"
        return PayloadError(
            f"<plan_revision>: {message}. A revision changes only what is still to come: the "
            f"current step (if not complete) and the later steps of stage '{stage.id}' "
            f"(its steps: {done}), and the goals of this and later stages",
            kind=kind,
        )

    stage = state.stage
    assert stage is not None
    steps = stage.steps
    known = {t.id for t in steps}
    for change in revision.changes:
        step = next((t for t in steps if t.id == change.id), None)
        if change.kind == "revise_stage":
            open_stages = [st.id for st in state.stages[state.stage_index :]]
            if change.id not in open_stages:
                where = "an earlier" if _is_stage(state, change.id) else "no"
                raise refuse(f"'{change.id}' is {where} stage (open: {', '.join(open_stages)})")
            if _changes_nothing(change):
                raise refuse(_nothing_changed(change))
        elif change.kind == "add_step":
            if change.id in known:
                raise refuse(f"step '{change.id}' already exists; use <revise_step>")
            known.add(change.id)
            after = change.after
            if after and after not in {t.id for t in steps if t.status in OPEN}:
                raise refuse(f"add_step after='{after}' names no step still to come")
        elif step is None:
            raise refuse(f"no step '{change.id}' in stage '{stage.id}'")
        elif change.kind == "drop_step" and step.status != "pending":
            raise refuse(f"step '{change.id}' is {step.status}; only a pending step is dropped")
        elif step.status not in OPEN:
            raise refuse(f"step '{change.id}' is {step.status}")
        elif change.kind == "revise_step" and _changes_nothing(change):
            raise refuse(_nothing_changed(change))
    for path, text in revision.superseded:
        target = _step_at(state, path)
        if target is None:
            message = f"<supersede step='{path}'> names no step (use stage_id/step_id)"
            raise PayloadError(f"<plan_revision>: {message}", kind=kind)
        if text and not any(text.lower() in f.lower() for _, f in target.findings):
            listed = "; ".join(f for _, f in target.findings) or "none"
            raise PayloadError(
                f"<plan_revision>: no finding of {path} contains {text!r}: the text must be a "
                f"part of one of its findings as written (its findings: {listed})",
                kind=kind,
            )


def apply(revision: PlanRevision, state: WorkflowState) -> list[str]:
    """Change the plan; one line per change, in the order given."""
    stage = state.stage
    assert stage is not None
    done: list[str] = []
    for change in revision.changes:
        if change.kind == "revise_stage":
            target = next(st for st in state.stages if st.id == change.id)
            line = f"stage {target.id}: {_revise(target, change)} revised"
            given = question(Event.START_STEP, target.id, 0)  # steps the plan gave it
            if any(f.question == given for f in state.foreseen) and (
                change.goal is not None or change.verified_artifacts is not None
            ):  # its steps were written for another goal: its step planner plans it again
                state.foreseen = [f for f in state.foreseen if f.question != given]
                line += " (the steps given with the plan are dropped: it is planned again)"
            done.append(line)
            continue
        if change.kind == "add_step":
            record = StepRecord(
                change.id,
                change.title or change.id.replace("_", " ").capitalize(),
                change.goal or "",
                [v.name for v in change.verified_artifacts or ()],
                [v.name for v in change.required_variables or ()],
            )
            after = change.after
            ids = [t.id for t in stage.steps]
            at = ids.index(after) + 1 if after in ids else len(ids)
            stage.steps.insert(at, record)
            done.append(f"step {change.id} added" + (f" after {after}" if after else ""))
            continue
        step = next(t for t in stage.steps if t.id == change.id)
        if change.kind == "drop_step":
            step.status, step.note = "skipped", f"dropped: {change.why or revision.reason}"
            done.append(f"step {step.id} dropped")
            continue
        done.append(f"step {step.id}: {_revise(step, change)} revised")
    for path, text in revision.superseded:
        target = _step_at(state, path)
        assert target is not None
        target.superseded.append([text, revision.reason])
        done.append(f"findings of {path} superseded" + (f" ({text!r})" if text else ""))
    return done


def _is_stage(state: WorkflowState, stage_id: str) -> bool:
    return any(st.id == stage_id for st in state.stages)


def _step_at(state: WorkflowState, path: str) -> StepRecord | None:
    stage_id, _, step_id = path.partition("/")
    for st in state.stages:
        if st.id == stage_id:
            return next((t for t in st.steps if t.id == step_id), None)
    return None


def _nothing_changed(change: PlanChange) -> str:
    return (
        f"<{change.kind} id='{change.id}'> changes nothing: give <goal>, "
        "<verified_artifacts> or <required_variables>"
    )


def _changes_nothing(change: PlanChange) -> bool:
    return (
        change.goal is None and not change.verified_artifacts and change.required_variables is None
    )


def _revise(target: StageRecord | StepRecord, change: PlanChange) -> str:
    """A stage's or step's goal, artifacts and needs, each where the change gives it; what
    changed, as words ("goal and needs")."""
    what = []
    if change.goal is not None:
        target.goal = change.goal
        what.append("goal")
    if change.verified_artifacts:  # a step or stage always leaves something
        target.verified_artifacts = [v.name for v in change.verified_artifacts]
        what.append("artifacts")
    if change.required_variables is not None:
        target.required_variables = [v.name for v in change.required_variables]
        what.append("needs")
    return " and ".join(what)
