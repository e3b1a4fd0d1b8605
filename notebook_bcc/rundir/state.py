"""WorkflowState: where the run is, its plan, counters and ledger; JSON round trip.

``state.json`` (docs/run-directory.md, "A run directory") is ``WorkflowState.to_json()``; the fixed keys outside checks read
are ``schema_version``, ``fsm_state`` and ``location``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from notebook_bcc.fsm import State
from notebook_bcc.rundir.ledger import VariableLedger
from notebook_bcc.rundir.records import (
    CellFact,
    Counters,
    FollowUp,
    Foreseen,
    StageRecord,
    StepRecord,
    Usage,
)
from notebook_bcc.rundir.results import RESULT_NAMES

__all__ = [
    "SCHEMA_VERSION",
    "Behavior",
    "CellFact",
    "StepRecord",
    "StageRecord",
    "Counters",
    "FollowUp",
    "Foreseen",
    "Usage",
    "WorkflowState",
]

SCHEMA_VERSION = 1


class Behavior(Protocol):
    """What the state reads of the current behavior (the contract's ``BehaviorPayload``)."""

    @property
    def id(self) -> str: ...

    @property
    def task(self) -> str: ...


@dataclass
class WorkflowState:
    run_id: str
    problem_title: str
    fsm_state: State = State.IDLE  # a string only in state.json
    seq: int = 0
    project_title: str = ""
    focus: str = ""
    stages: list[StageRecord] = field(default_factory=list)
    stage_index: int = 0
    step_index: int = 0
    behavior_id: str = ""
    iteration: int = 0
    behavior_xml: str = ""  # the current behavior payload, as validated (state.json keeps it)
    last_execution: list[CellFact] = field(default_factory=list)  # cells of last action
    last_checks: dict[str, Any] = field(default_factory=dict)
    #: variables in the kernel that only a failed or timed-out cell made (not in the notebook):
    #: name -> that cell, and how it failed (G1 counts them missing)
    made_by_failed_cells: dict[str, str] = field(default_factory=dict)
    #: one entry per behavior of the current step: behavior, iteration, task, cells, checks,
    #: verdict and the behavior reflector's words (what the stage reflector and a retry see);
    #: its "cells" are CellFacts
    step_log: list[dict[str, Any]] = field(default_factory=list)
    feedback: str = ""  # reflector's reasoning when a behavior is retried
    lessons: list[str] = field(default_factory=list)  # stage_experience of completed stages
    counters: Counters = field(default_factory=Counters)
    usage: Usage = field(default_factory=Usage)
    #: usage per location prefix: "stage", "stage/step", "stage/step/behavior"
    usage_by_location: dict[str, Usage] = field(default_factory=dict)
    ledger: VariableLedger = field(default_factory=VariableLedger)
    #: modules and callables in the kernel at the last inspection: {"modules": [[name, module]],
    #: "callables": [[name, module]]}; not variables, so not in the ledger
    kernel_code: dict[str, list[list[str]]] = field(default_factory=dict)
    #: the kernel's Python and analysis packages, as the kernel reported them when it started
    kernel_environment: str = ""
    elapsed_s: float = 0.0
    error: str = ""
    resume_from: str = ""  # the state an ABORT interrupted; ``bcc resume`` goes back to it
    follow_ups: list[FollowUp] = field(default_factory=list)  # oldest first
    #: one record per fork (FORK ... JOIN): seq, step, choose, better, and each branch's
    #: behavior, task, score, verdict, kept, why it was dropped and its cells (summary.json
    #: ``alternatives``, report.html)
    forks: list[dict[str, Any]] = field(default_factory=list)
    #: later transitions' payloads that earlier replies carried (compact rounds), unused yet
    foreseen: list[Foreseen] = field(default_factory=list)
    #: ``behavior_xml`` as read (not in state.json); None until read again after a load
    behavior: Behavior | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.fsm_state = State(self.fsm_state)  # from state.json, or a name a caller gave

    def resume_aborted(self) -> None:
        """Go back to the state an ABORT interrupted (``bcc resume``), if it said which."""
        if self.fsm_state == State.WORKFLOW_ABORTED and self.resume_from:
            self.fsm_state, self.resume_from, self.error = State(self.resume_from), "", ""

    # -- the current behavior ---------------------------------------------------------------
    def forget_behavior(self) -> None:
        """A new stage or step starts with no behavior, attempts, feedback or last cells."""
        self.behavior_id, self.iteration, self.feedback = "", 0, ""
        self.behavior_xml, self.behavior = "", None
        self.step_log, self.last_execution, self.last_checks = [], [], {}

    def next_behavior(self) -> None:
        """One more behavior of the current step (a fork counts as one): no behavior is
        current until :meth:`start_behavior`, and the last action's cells and checks go."""
        assert self.step is not None
        self.step.behaviors += 1
        self.iteration = self.step.behaviors
        self.behavior_id, self.behavior_xml, self.behavior = "", "", None
        self.last_execution, self.last_checks = [], {}

    def start_behavior(self, behavior: Behavior, xml: str) -> None:
        """``behavior`` (validated as ``xml``) is current, with an entry in the step log."""
        self.behavior_id, self.behavior_xml, self.behavior = behavior.id, xml, behavior
        self.step_log.append(
            {"behavior": behavior.id, "iteration": self.iteration, "task": behavior.task}
        )

    def take_foreseen(self, question: str) -> Foreseen | None:
        """The payload an earlier reply carried for ``question``, now used (compact rounds)."""
        found = next((f for f in self.foreseen if f.question == question), None)
        self.foreseen = [f for f in self.foreseen if f is not found]
        return found

    # -- the plan and the moves through it ---------------------------------------------------
    def plan(self, stages: list[StageRecord], title: str, focus: str) -> None:
        """The stage planner's plan (START_WORKFLOW); an empty ``title`` keeps the title."""
        self.stages, self.focus = stages, focus
        if title:
            self.project_title = title

    def plan_follow_up(self, stages: list[StageRecord], focus: str) -> FollowUp:
        """The asked follow-up's stages go after the plan's; the position moves to the first,
        with no behavior current. Returns the follow-up, now planned."""
        asked = self.asked
        assert asked is not None
        asked.first_stage, asked.seq = len(self.stages), self.seq + 1
        self.stages += stages
        self.focus = focus
        self.move_to(asked.first_stage)
        self.forget_behavior()
        return asked

    def plan_steps(self, steps: list[StepRecord], focus: str) -> None:
        """The step planner's steps of the current stage (START_STEP)."""
        assert self.stage is not None
        self.stage.steps, self.stage.focus = steps, focus

    def move_to(self, stage_index: int, step_index: int = 0) -> None:
        """Point at a stage and step (to enter it, or to skip it)."""
        self.stage_index, self.step_index = stage_index, step_index

    def enter_stage(self, index: int) -> StageRecord:
        """Stage ``index`` runs from its first step, with no behavior current."""
        self.move_to(index)
        self.forget_behavior()
        stage = self.stages[index]
        stage.status = "running"
        return stage

    def enter_step(self, index: int) -> StepRecord:
        """Step ``index`` of the current stage runs, with no behavior current."""
        self.move_to(self.stage_index, index)
        self.forget_behavior()
        step = self.stages[self.stage_index].steps[index]
        step.status = "running"
        return step

    def end_stage(self, status: str, experience: str = "") -> None:
        """The current stage ends (complete, partial or skipped); its experience, if any,
        becomes a lesson for the stages after it."""
        assert self.stage is not None
        self.stage.status = status
        if experience:
            self.stage.experience = experience
            self.lessons.append(experience)

    def review_behavior(self, **review: Any) -> None:
        """The reflector's verdict and words on the step's last behavior, in the step log."""
        if self.step_log:
            self.step_log[-1].update(review)

    def record_action(self, cells: list[CellFact], checks: dict[str, Any]) -> None:
        """The last action's cells and checks, for its reflector and in the step log."""
        self.last_execution, self.last_checks = cells, checks
        self.review_behavior(cells=cells, checks=checks)

    def count_forced(self) -> None:
        """A guard forced this transition (G3 or a capped plan)."""
        self.counters.forced_transitions += 1

    def complete_step(self, comment: str) -> None:
        """The behavior reflector completed the current step."""
        assert self.step is not None
        self.step.status, self.step.comment, self.feedback = "complete", comment, ""

    def retry_step(self, feedback: str) -> None:
        """The behavior did not complete the step: the next one is told why."""
        self.counters.failed_behaviors += 1
        self.feedback = feedback

    def fail_step(self, reason: str) -> None:
        """G3 ended the current step failed (a forced transition)."""
        assert self.step is not None
        self.count_forced()
        self.step.status, self.step.note = "failed", reason
        self.review_behavior(verdict="failed")

    @property
    def asked(self) -> FollowUp | None:
        """The first follow-up not planned yet, once the run has completed (``bcc ask``; a
        replay registers every recorded follow-up when it starts)."""
        if self.fsm_state != State.WORKFLOW_COMPLETED:
            return None
        return next((f for f in self.follow_ups if not f.seq), None)

    def follow_ups_reached(self) -> list[FollowUp]:
        """The follow-ups planned so far, and the one the completed run waits on."""
        asked = self.asked
        return [f for f in self.follow_ups if f.seq or f is asked]

    # -- location -------------------------------------------------------------------------
    @property
    def stage(self) -> StageRecord | None:
        return self.stages[self.stage_index] if self.stage_index < len(self.stages) else None

    @property
    def step(self) -> StepRecord | None:
        stage = self.stage
        if stage is None or self.step_index >= len(stage.steps):
            return None
        return stage.steps[self.step_index]

    @property
    def path(self) -> str:
        parts = [
            self.stage.id if self.stage and self.fsm_state != State.IDLE else "",
            self.step.id
            if self.step and self.fsm_state not in (State.IDLE, State.STAGE_RUNNING)
            else "",
            self.behavior_id,
        ]
        return "/".join(p for p in parts if p)

    def location(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "stage": self.stage.id if self.stage else None,
            "step": self.step.id if self.step else None,
            "behavior": self.behavior_id or None,
            "behavior_iteration": self.iteration,
        }

    def add_usage(self, usage: Usage) -> None:
        """Add to the run's totals and to each level of the current location."""
        self.usage.add(usage)
        parts = [p for p in self.path.split("/") if p] or ["(planning)"]
        for depth in range(1, len(parts) + 1):
            key = "/".join(parts[:depth])
            self.usage_by_location.setdefault(key, Usage()).add(usage)

    def failed_steps(self) -> list[str]:
        """``stage/step`` of every step that ended failed (a capped step, G3)."""
        return [f"{st.id}/{t.id}" for st in self.stages for t in st.steps if t.status == "failed"]

    def blocked(self) -> list[str]:
        """``stage`` or ``stage/step`` of everything skipped because it could not start (G8)."""
        out: list[str] = []
        for st in self.stages:
            if st.blocked_by:
                out.append(st.id)
            out += [f"{st.id}/{t.id}" for t in st.steps if t.blocked_by]
        return out

    def shortfall(self) -> str:
        """What a completed run did not do, in words ("" when it did everything it planned):
        the failed steps, and what was skipped because it could not start (G8)."""
        failed, blocked = self.failed_steps(), self.blocked()
        parts = []
        if failed:
            total = sum(len(st.steps) for st in self.stages)
            parts.append(f"{len(failed)} of {total} steps failed: {', '.join(failed)}")
        if blocked:
            parts.append(
                f"{len(blocked)} skipped because a variable they need was never made: "
                + ", ".join(blocked)
            )
        return "; ".join(parts)

    def unmade(self) -> dict[str, str]:
        """Variables that a failed or skipped step, or a partial or skipped stage, was to make
        and that the kernel does not hold: name -> what failed to make it (guard G8)."""
        held = {r.name for r in self.ledger.in_kernel()}
        out: dict[str, str] = {}
        for st in self.stages:
            for t in st.steps:
                if t.status in ("failed", "skipped"):
                    for name in t.verified_artifacts:
                        out.setdefault(name, f"step {st.id}/{t.id} {t.status}")
            if st.status in ("partial", "failed", "skipped"):
                for name in st.verified_artifacts:
                    out.setdefault(name, f"stage {st.id} {st.status}")
        return {name: why for name, why in out.items() if name not in held}

    def progress(self) -> dict[str, Any]:
        """What a progress display shows after a transition (``bcc run --json`` lines)."""
        return {
            "path": self.path,
            "plan": [
                {
                    "id": st.id,
                    "title": st.title,
                    "status": st.status,
                    "steps": [[t.id, t.status] for t in st.steps],
                }
                for st in self.stages
            ],
            "llm_calls": self.counters.llm_calls,
            "cost_usd": self.usage.cost_usd,
            "cells": self.counters.cells,
            "last_cell": self.last_execution[-1].status if self.last_execution else None,
            "elapsed_s": self.elapsed_s,
        }

    def remaining_required(self) -> dict[str, str]:
        """Variables that later steps or stages still list as required (guard G5), each with
        every reason, in plan order."""
        need: dict[str, list[str]] = {}
        for si, stage in enumerate(self.stages):
            if si > self.stage_index:
                for name in stage.required_variables:
                    need.setdefault(name, []).append(f"stage {stage.id}")
            for ti, step in enumerate(stage.steps):
                later = si > self.stage_index or (si == self.stage_index and ti > self.step_index)
                if later and step.status == "pending":
                    for name in step.required_variables:
                        need.setdefault(name, []).append(f"step {stage.id}/{step.id}")
        why = {name: "required by " + ", ".join(users) for name, users in need.items()}
        if self.stage:
            for name in self.stage.verified_artifacts:
                why.setdefault(name, f"verified artifact of stage {self.stage.id}")
        for name in RESULT_NAMES:
            why.setdefault(name, "a result the runner reads at the end of the run")
        return why

    # -- JSON -----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        data = asdict(replace(self, ledger=VariableLedger(), behavior=None))  # not copied whole
        del data["behavior"]  # ``behavior_xml`` is its durable form
        data["fsm_state"] = self.fsm_state.value
        data["ledger"] = self.ledger.to_json()
        return {"schema_version": SCHEMA_VERSION, "location": self.location(), **data}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkflowState:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ValueError(f"state.json schema_version {version!r}, expected {SCHEMA_VERSION}")
        data = {k: v for k, v in data.items() if k not in ("schema_version", "location")}
        stages = [
            StageRecord(
                **{
                    k: v
                    for k, v in s.items()
                    if k in StageRecord.__dataclass_fields__ and k != "steps"
                },
                steps=[StepRecord(**t) for t in s.get("steps", [])],
            )
            for s in data.pop("stages", [])
        ]
        counters = Counters(**data.pop("counters", {}))
        usage = Usage(**data.pop("usage", {}))
        data["usage_by_location"] = {
            k: Usage(**v) for k, v in data.pop("usage_by_location", {}).items()
        }
        ledger = VariableLedger.from_json(data.pop("ledger", []))
        data["follow_ups"] = [FollowUp(**f) for f in data.pop("follow_ups", [])]
        data["foreseen"] = [Foreseen(**f) for f in data.pop("foreseen", [])]
        data["last_execution"] = [CellFact.from_json(c) for c in data.get("last_execution", [])]
        data["step_log"] = [
            {**e, "cells": [CellFact.from_json(c) for c in e["cells"]]} if "cells" in e else e
            for e in data.get("step_log", [])
        ]
        return cls(stages=stages, counters=counters, usage=usage, ledger=ledger, **data)
