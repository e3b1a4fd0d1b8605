"""The records a WorkflowState holds: the plan's stages and steps, a cell as it ran, the
follow-ups, the counters and the model usage (``state.json`` keeps each as its fields)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CellFact", "StepRecord", "StageRecord", "FollowUp", "Foreseen", "Counters", "Usage"]


@dataclass(frozen=True)
class CellFact:
    """One cell of an action as it ran (or was skipped), for the reflector and a retry."""

    status: str  # ok | error | timeout | dead | skipped
    excerpt: str
    error_name: str | None = None
    error_value: str | None = None
    figures: tuple[str, ...] = ()  # one text note per figure the cell displayed
    code: str = ""  # the cell's source, for the behavior reflector

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellFact:
        data = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**data, "figures": tuple(data.get("figures", ()))})


@dataclass
class StepRecord:
    id: str
    title: str
    goal: str
    verified_artifacts: list[str] = field(default_factory=list)
    required_variables: list[str] = field(default_factory=list)
    status: str = "pending"  # pending | running | complete | failed | skipped
    behaviors: int = 0
    failed_code: list[str] = field(default_factory=list)  # hashes of code that failed (G7)
    note: str = ""
    comment: str = ""  # the behavior reflector's comment when the step completed
    pcs: list[list[str]] = field(default_factory=list)  # [aspect, text] the step planner wrote
    findings: list[list[str]] = field(default_factory=list)  # [priority, text] (stage reflector)
    #: findings a later reflector marked superseded: [text, why] ("" text: all of the step's)
    superseded: list[list[str]] = field(default_factory=list)
    blocked_by: str = ""  # why it was skipped before it started (G8: a required variable unmade)

    def skip(self, blocked_by: str = "") -> None:
        """Skipped: before it started (G8, ``blocked_by`` says why), or by a plan move."""
        self.status = "skipped"
        if blocked_by:
            self.blocked_by = blocked_by


@dataclass
class StageRecord:
    id: str
    title: str
    goal: str
    verified_artifacts: list[str] = field(default_factory=list)
    required_variables: list[str] = field(default_factory=list)
    status: str = "pending"  # pending | running | complete | partial | failed | skipped
    steps: list[StepRecord] = field(default_factory=list)
    experience: str = ""  # stage_experience of the stage reflection that completed it
    note: str = ""
    focus: str = ""  # the step planner's <focus>
    blocked_by: str = ""  # why it was skipped before it started (G8: a required variable unmade)

    def skip(self, blocked_by: str) -> None:
        """Skipped before it started (G8): ``blocked_by`` says why."""
        self.status, self.blocked_by = "skipped", blocked_by


@dataclass
class FollowUp:
    """A question asked of the completed run (``bcc ask``): its text is kept in
    ``follow_ups/<n>.md``; ``seq`` is 0 until the stage planner has planned it."""

    text: str
    first_stage: int = 0  # index in ``stages`` of its first stage
    seq: int = 0  # the FOLLOW_UP transition

    @property
    def title(self) -> str:
        """Its first line, for a heading."""
        lines = (line.strip().lstrip("#").strip() for line in self.text.splitlines())
        return next((line for line in lines if line), "")[:200]


@dataclass
class Counters:
    transitions: int = 0
    llm_calls: int = 0
    cells: int = 0
    failed_behaviors: int = 0
    forced_transitions: int = 0
    guard_overrides: int = 0
    kernel_restarts: int = 0


@dataclass
class Usage:
    prompt_tokens: int = 0  # every prompt token, cached ones included
    completion_tokens: int = 0
    cost_usd: float = 0.0  # litellm's price, with the provider's cache discounts
    cached_tokens: int = 0  # prompt tokens read from the provider's prompt cache
    cache_write_tokens: int = 0  # prompt tokens written to it (Anthropic bills them apart)

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.cost_usd = round(self.cost_usd + other.cost_usd, 6)


@dataclass(frozen=True)
class Foreseen:
    """A later transition's payload that an earlier reply carried (compact rounds,
    docs/agents.md): used for that transition without a call, once."""

    question: str  # the transition it answers: "EVENT location #iteration"
    kind: str  # its payload kind
    text: str  # its XML as the reply wrote it
    seq: int  # the transition whose reply carried it
    agent: str  # that reply's agent
    error: str = ""  # why it is invalid ("" when valid): its transition repairs it alone
