"""Observation: what an agent is shown at a transition. Frozen; built by the runner.

The same object feeds the prompt templates (for models) and the offline analyst, so the
offline analyst decides from exactly the facts a model would see.
"""

from __future__ import annotations

from dataclasses import dataclass

from .payloads import BehaviorPayload
from .variables import VariableRecord

__all__ = ["StepView", "StageView", "CellFact", "Observation"]


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
