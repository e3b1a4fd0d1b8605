"""Typed payloads: the frozen dataclasses the XML contract (``payloads.py``) produces."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "VariableSpec",
    "StageSpec",
    "StagesPayload",
    "StepSpec",
    "StepsPayload",
    "BehaviorPayload",
    "Action",
    "ActionsPayload",
    "AlternativesPayload",
    "ArtifactClaim",
    "ReflectionPayload",
    "StageReflectionPayload",
    "Payload",
    "ParsedPayload",
    "Part",
]


@dataclass(frozen=True)
class VariableSpec:
    name: str
    description: str = ""
    next_use: str | None = None
    replacement: str | None = None
    safe: bool = False


@dataclass(frozen=True)
class StageSpec:
    id: str
    title: str
    goal: str
    verified_artifacts: tuple[VariableSpec, ...]
    required_variables: tuple[VariableSpec, ...] = ()


@dataclass(frozen=True)
class StagesPayload:
    stages: tuple[StageSpec, ...]
    title: str | None = None
    focus: str | None = None


@dataclass(frozen=True)
class StepSpec:
    id: str
    title: str
    goal: str
    verified_artifacts: tuple[VariableSpec, ...]
    required_variables: tuple[VariableSpec, ...] = ()
    pcs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class StepsPayload:
    steps: tuple[StepSpec, ...]
    focus: str | None = None


@dataclass(frozen=True)
class BehaviorPayload:
    id: str
    step_id: str
    agent: str
    task: str
    inputs: tuple[VariableSpec, ...]
    outputs: tuple[VariableSpec, ...]
    acceptance: tuple[str, ...]


@dataclass(frozen=True)
class AlternativesPayload:
    """A fork: alternative behaviors of the current step, run at once in kernels of their own;
    ``choose`` is evaluated in each branch's kernel and the best (``better``: higher | lower)
    is kept."""

    step_id: str
    behaviors: tuple[BehaviorPayload, ...]
    choose: str
    better: str


@dataclass(frozen=True)
class Action:
    kind: str  # "title" | "text" | "code"
    content: str


@dataclass(frozen=True)
class ActionsPayload:
    actions: tuple[Action, ...]


@dataclass(frozen=True)
class ArtifactClaim:
    name: str
    status: str
    text: str = ""


@dataclass(frozen=True)
class PlanChange:
    """One change of a ``<plan_revision>``: ``kind`` is revise_step, add_step, drop_step or
    revise_stage; None leaves a field as it was."""

    kind: str
    id: str
    title: str | None = None
    goal: str | None = None
    verified_artifacts: tuple[VariableSpec, ...] | None = None
    required_variables: tuple[VariableSpec, ...] | None = None
    why: str = ""  # a dropped step's reason
    after: str = ""  # an added step's place: after this step ("": at the end of the stage)


@dataclass(frozen=True)
class PlanRevision:
    """A reflector's change to what is still to come, and earlier findings it supersedes."""

    reason: str
    changes: tuple[PlanChange, ...] = ()
    superseded: tuple[tuple[str, str], ...] = ()  # (stage/step, text of the finding; "": all)


@dataclass(frozen=True)
class ReflectionPayload:
    step_complete: bool
    next_state: str
    goal_status: str
    goal_reasoning: str
    decision_reasoning: str
    artifacts: tuple[ArtifactClaim, ...] = ()
    criteria: tuple[tuple[str, str], ...] = ()
    variables_produced: tuple[VariableSpec, ...] = ()
    recommendations: str | None = None
    comment: str | None = None
    revision: PlanRevision | None = None


@dataclass(frozen=True)
class StageReflectionPayload:
    stage_complete: bool
    next_state: str
    step_id: str
    completion_status: str
    reasoning: str
    findings: tuple[tuple[str, str], ...] = ()
    goal_status: str | None = None
    next_focus: str | None = None
    retain: tuple[VariableSpec, ...] = ()
    deprecate: tuple[VariableSpec, ...] = ()
    stage_experience: str | None = None
    revision: PlanRevision | None = None


Payload = (
    StagesPayload
    | StepsPayload
    | BehaviorPayload
    | AlternativesPayload
    | ActionsPayload
    | ReflectionPayload
    | StageReflectionPayload
)


@dataclass(frozen=True)
class Part:
    """A later transition's payload carried inside a reply (docs/agents.md, "Compact
    rounds"): a stage's ``<steps>`` in ``<stages>``, the ``<actions>`` of a ``<behavior>``,
    the ``<stage_reflection>`` of a ``<reflection>`` that completes its step, the next
    ``<behavior>`` of one that retries it or of a ``<stage_reflection>`` that goes on to the
    next step (its ``<actions>`` a part of its own once it is taken). Checked on its own:
    ``error`` says why it is invalid ("" when it is valid); the transition it answers repairs
    it alone."""

    kind: str  # steps | actions | stage_reflection | behavior
    key: str  # the stage id of a <steps>; "" for the others (the next transition's)
    text: str  # its XML as the reply wrote it
    error: str = ""


@dataclass(frozen=True)
class ParsedPayload:
    kind: str
    value: Payload
    xml: str  # the root without its parts
    hardened: bool
    parts: tuple[Part, ...] = ()
