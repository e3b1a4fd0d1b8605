"""Observation: what an agent is shown at a transition. Frozen; ``build_observation`` builds it from the
run's state.

The same object feeds the prompt templates (for models) and the offline analyst, so the
offline analyst decides from exactly the facts a model would see. Each event sees what its
decision needs (docs/agents.md, "What each agent sees"): the step planner no behavior, the action
generator and the reflectors the behavior, the stage reflector the whole step's attempts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from notebook_bcc.contract.payloads import BehaviorPayload
from notebook_bcc.fsm import Event
from notebook_bcc.inputs.questions import Question, follow_up_questions
from notebook_bcc.kernel.figures import Figure
from notebook_bcc.rundir.ledger import LedgerView, VariableRecord
from notebook_bcc.rundir.state import CellFact, WorkflowState

__all__ = [
    "StepView",
    "StageView",
    "CellFact",
    "Figure",
    "Attempt",
    "Checks",
    "Observation",
    "build_observation",
]


@dataclass(frozen=True)
class StepView:
    id: str
    title: str
    goal: str
    status: str
    verified_artifacts: tuple[str, ...] = ()
    required_variables: tuple[str, ...] = ()
    comment: str = ""  # the behavior reflector's comment when it completed
    findings: tuple[tuple[str, str], ...] = ()  # (priority, text) from the stage reflector
    pcs: tuple[tuple[str, str], ...] = ()  # (aspect, text): predictability, computability, ...
    superseded: tuple[tuple[str, str], ...] = ()  # (text of a finding, "": all; why)


@dataclass(frozen=True)
class StageView:
    id: str
    title: str
    goal: str
    status: str
    verified_artifacts: tuple[str, ...] = ()
    required_variables: tuple[str, ...] = ()
    steps: tuple[StepView, ...] = ()
    focus: str = ""
    experience: str = ""


@dataclass(frozen=True)
class Checks:
    """The runner's checks of a behavior: its artifacts present or not, its criteria's verdicts
    (expression, passed | failed | error, detail), its notes."""

    artifacts: tuple[tuple[str, bool], ...] = ()
    criteria: tuple[tuple[str, str, str], ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attempt:
    """One behavior of the current step, as the step log recorded it."""

    behavior: str
    iteration: int
    task: str
    cells: tuple[CellFact, ...] = ()
    checks: Checks = Checks()
    verdict: str = ""  # "" (not reviewed yet) | complete | retry | failed
    reasoning: str = ""
    produced: tuple[tuple[str, str], ...] = ()
    recommendations: str = ""


@dataclass(frozen=True)
class Observation:
    event: Event
    problem: str
    files: tuple[str, ...]
    location: str
    iteration: int
    stages: tuple[StageView, ...] = ()
    stage_index: int = 0
    step_index: int = 0
    behavior: BehaviorPayload | None = None
    cells: tuple[CellFact, ...] = ()
    artifacts: tuple[tuple[str, bool], ...] = ()
    criteria: tuple[tuple[str, str, str], ...] = ()
    ledger: tuple[VariableRecord, ...] = ()
    ledger_view: LedgerView = LedgerView(())
    feedback: str = ""
    lessons: tuple[tuple[str, str], ...] = ()  # (stage id, lesson), oldest first
    behaviors_in_step: int = 0
    max_behaviors: int = 4
    notes: tuple[str, ...] = ()
    seed: int = 42
    questions: tuple[Question, ...] = ()
    focus: str = ""
    data_preview: tuple[str, ...] = ()
    attempts: tuple[Attempt, ...] = ()  # behaviors of the current step, oldest first
    figures: tuple[Figure, ...] = ()
    protected: tuple[tuple[str, str], ...] = ()  # (variable, why it may not be deprecated)
    modules: tuple[tuple[str, str], ...] = ()  # (name, module) imported in the kernel
    callables: tuple[tuple[str, str], ...] = ()  # (name, module) functions and classes
    environment: str = ""  # the kernel's Python and packages, one line ("" before it reported)
    supervised: bool = True  # the problem asks for a model of a target (final_metrics applies)
    follow_ups: tuple[str, ...] = ()  # questions asked of the completed run (bcc ask), in order
    follow_up_counts: tuple[int, ...] = ()  # questions each asked (they end ``questions``)
    max_alternatives: int = 1  # a fork's branches at most (1: the arranger may not fork)
    rounds: str = "full"  # "compact": the prompt offers the next transition's payload too
    branch: str = ""  # the fork's branch (its behavior id) this transition runs in
    branch_note: str = ""  # what the branch's agents are told about the fork

    @property
    def asked_questions(self) -> int:
        """How many of ``questions``, at their end, the follow-ups asked."""
        return sum(self.follow_up_counts)

    @property
    def stage(self) -> StageView | None:
        return self.stages[self.stage_index] if self.stage_index < len(self.stages) else None

    @property
    def step(self) -> StepView | None:
        stage = self.stage
        if stage is None or self.step_index >= len(stage.steps):
            return None
        return stage.steps[self.step_index]

    def variable(self, name: str) -> VariableRecord | None:
        return next((v for v in self.ledger if v.name == name), None)


def _checks(checks: dict[str, Any]) -> Checks:
    return Checks(
        tuple((n, bool(ok)) for n, ok in checks.get("artifacts", [])),
        tuple((e, s, d) for e, s, d in checks.get("criteria", [])),
        tuple(checks.get("notes", [])),
    )


def _attempt(entry: dict[str, Any]) -> Attempt:
    return Attempt(
        behavior=entry.get("behavior", ""),
        iteration=int(entry.get("iteration", 0)),
        task=entry.get("task", ""),
        cells=tuple(entry.get("cells", ())),
        checks=_checks(entry.get("checks", {})),
        verdict=entry.get("verdict", ""),
        reasoning=entry.get("reasoning", ""),
        produced=tuple(tuple(p) for p in entry.get("produced", [])),
        recommendations=entry.get("recommendations", ""),
    )


def _protected(s: WorkflowState) -> tuple[tuple[str, str], ...]:
    """Variables in the kernel that guard G5 will not let anyone deprecate, and why."""
    alive = {r.name for r in s.ledger.in_kernel()}
    return tuple((n, why) for n, why in s.remaining_required().items() if n in alive)


def _location(s: WorkflowState, event: Event) -> str:
    """Where the decision is taken: the arranger of a retry works in the step, not in the
    behavior it replaces (which ``s.path`` still names)."""
    if event == Event.START_BEHAVIOR and s.behavior_id:
        return s.path.rpartition("/")[0]
    return s.path


#: what each event is shown of the current position and the step's history
_SEES_BEHAVIOR = (Event.COMPLETE_ACTION, Event.COMPLETE_STEP)
_SEES_CELLS = (Event.COMPLETE_STEP,)
_SEES_CHECKS = (Event.COMPLETE_STEP, Event.COMPLETE_STAGE)


#: the stage reflector's, and the behavior reflector's for a stage reflection it may carry
_SEES_PROTECTED = (Event.COMPLETE_STAGE, Event.COMPLETE_STEP)


def build_observation(
    s: WorkflowState,
    event: Event,
    *,
    problem: str,
    files: tuple[str, ...],
    behavior: BehaviorPayload | None,
    max_behaviors: int,
    seed: int,
    questions: tuple[Question, ...] = (),  # the problem's; the follow-ups' are added
    data_preview: tuple[str, ...] = (),
    figures: tuple[Figure, ...] = (),
    supervised: bool = True,
    max_alternatives: int = 1,
    branch: tuple[str, str] = ("", ""),
    rounds: str = "full",
) -> Observation:
    """What the agent of ``event`` sees of the run in state ``s``.

    The action generator and the behavior reflector see the current behavior; the behavior
    reflector its cells, checks and figures; the stage reflector every attempt of the step
    (cells, checks, the behavior reflector's words). Nobody before the behavior arranger sees
    a behavior, so a planner is never shown the last one of an earlier step as current.
    """
    stages = tuple(
        StageView(
            st.id,
            st.title,
            st.goal,
            st.status,
            tuple(st.verified_artifacts),
            tuple(st.required_variables),
            tuple(
                StepView(
                    t.id,
                    t.title,
                    t.goal,
                    t.status,
                    tuple(t.verified_artifacts),
                    tuple(t.required_variables),
                    t.comment,
                    tuple((p, x) for p, x in t.findings),
                    tuple((a, x) for a, x in t.pcs),
                    tuple((x, why) for x, why in t.superseded),
                )
                for t in st.steps
            ),
            st.focus,
            st.experience,
        )
        for st in s.stages
    )
    planning = event == Event.START_STEP  # the step planner plans the stage: no step is current
    step = None if planning else s.step
    priority = [
        *(step.required_variables if step else ()),
        *(step.verified_artifacts if step else ()),
    ]
    upcoming = {st.id for st in s.stages if st.status in ("pending", "running")}
    upcoming |= {t.id for st in s.stages for t in st.steps if t.status in ("pending", "running")}
    checks = s.last_checks if event in _SEES_CHECKS else {}
    cells = s.last_execution if event in _SEES_CELLS else []
    attempts = () if planning else tuple(_attempt(e) for e in s.step_log)
    lessons = tuple((st.id, st.experience) for st in s.stages if st.experience)
    if not lessons:  # checkpoints written before stages kept their experience
        lessons = tuple(("", x) for x in s.lessons)
    asked = [follow_up_questions(f.text) for f in s.follow_ups_reached()]
    return Observation(
        event=event,
        problem=problem,
        files=files,
        location=_location(s, event),
        iteration=s.iteration if event in _SEES_BEHAVIOR else 0,
        stages=stages,
        stage_index=s.stage_index,
        step_index=len(s.stage.steps) if planning and s.stage else s.step_index,
        behavior=behavior if event in _SEES_BEHAVIOR else None,
        cells=tuple(cells),
        artifacts=tuple((a, ok) for a, ok in checks.get("artifacts", [])),
        criteria=tuple(tuple(c) for c in checks.get("criteria", [])),
        ledger=tuple(s.ledger.live()),
        ledger_view=s.ledger.prompt_view(priority, upcoming),
        feedback=s.feedback,
        lessons=lessons,
        behaviors_in_step=step.behaviors if step else 0,
        max_behaviors=max_behaviors,
        notes=tuple(checks.get("notes", [])),
        seed=seed,
        questions=questions + tuple(q for group in asked for q in group),
        focus=s.focus,
        data_preview=data_preview,
        attempts=attempts,
        figures=figures if event == Event.COMPLETE_STEP else (),
        protected=_protected(s) if event in _SEES_PROTECTED else (),
        modules=tuple((n, m) for n, m in s.kernel_code.get("modules", [])),
        callables=tuple((n, m) for n, m in s.kernel_code.get("callables", [])),
        environment=s.kernel_environment,
        supervised=supervised,
        follow_ups=tuple(f.text for f in s.follow_ups_reached()),
        follow_up_counts=tuple(len(group) for group in asked),
        max_alternatives=max_alternatives,
        rounds=rounds,
        branch=branch[0],
        branch_note=branch[1],
    )
