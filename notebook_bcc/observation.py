"""Observation: what an agent is shown at a transition. Frozen; ``observe`` builds it from the
run's state.

The same object feeds the prompt templates (for models) and the offline analyst, so the
offline analyst decides from exactly the facts a model would see.
"""

from __future__ import annotations

from dataclasses import dataclass

from .payloads import BehaviorPayload
from .state import WorkflowState
from .variables import VariableRecord

__all__ = ["StepView", "StageView", "CellFact", "Observation", "observe"]


@dataclass(frozen=True)
class StepView:
    id: str
    title: str
    goal: str
    status: str
    verified_artifacts: tuple[str, ...] = ()
    required_variables: tuple[str, ...] = ()


@dataclass(frozen=True)
class StageView:
    id: str
    title: str
    goal: str
    status: str
    verified_artifacts: tuple[str, ...] = ()
    required_variables: tuple[str, ...] = ()
    steps: tuple[StepView, ...] = ()


@dataclass(frozen=True)
class CellFact:
    status: str  # ok | error | timeout | dead | skipped
    excerpt: str
    error_name: str | None = None
    error_value: str | None = None


@dataclass(frozen=True)
class Observation:
    event: str
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
    ledger_text: str = ""
    feedback: str = ""
    lessons: tuple[str, ...] = ()
    behaviors_in_step: int = 0
    max_behaviors: int = 4
    notes: tuple[str, ...] = ()
    seed: int = 42

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


def observe(
    s: WorkflowState,
    event: str,
    *,
    problem: str,
    files: tuple[str, ...],
    behavior: BehaviorPayload | None,
    max_behaviors: int,
    seed: int,
) -> Observation:
    """What the agent of ``event`` sees of the run in state ``s``.

    Reflectors see the last checks; the action generator and the behavior reflector see the
    last action's cells. The ledger slice puts the current step's variables first.
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
                )
                for t in st.steps
            ),
        )
        for st in s.stages
    )
    step = s.step
    priority = [
        *(step.required_variables if step else ()),
        *(step.verified_artifacts if step else ()),
    ]
    checks = s.last_checks if event in ("COMPLETE_STEP", "COMPLETE_STAGE") else {}
    cells = s.last_execution if event in ("COMPLETE_STEP", "COMPLETE_ACTION") else []
    return Observation(
        event=event,
        problem=problem,
        files=files,
        location=s.path,
        iteration=s.iteration,
        stages=stages,
        stage_index=s.stage_index,
        step_index=s.step_index,
        behavior=behavior,
        cells=tuple(CellFact(**c) for c in cells),
        artifacts=tuple((a, ok) for a, ok in checks.get("artifacts", [])),
        criteria=tuple(tuple(c) for c in checks.get("criteria", [])),
        ledger=tuple(s.ledger.live()),
        ledger_text=s.ledger.prompt_slice(priority),
        feedback=s.feedback,
        lessons=tuple(s.lessons[-8:]),
        behaviors_in_step=step.behaviors if step else 0,
        max_behaviors=max_behaviors,
        notes=tuple(checks.get("notes", [])),
        seed=seed,
    )
