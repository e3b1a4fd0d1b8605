"""The workflow state machine as a table (pure: standard library only).

The table is data. It is validated when this module is imported: exactly one initial state,
terminal states have no exits, the success state has one (a follow-up question, ``bcc ask``),
every state is reachable from the initial state, and every state can reach the success state
but the terminals, and a fork's row (:data:`FORK_ROWS`) leaves a state whose regular row has
the same agent (a fork is that agent's other answer) or joins what a fork opened. A run stops in a terminal state or in the success state (:data:`STOPS`). ``render_markdown()`` produces the table that
docs/workflow.md embeds; a test keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "State",
    "Event",
    "Transition",
    "TRANSITIONS",
    "INITIAL",
    "SUCCESS",
    "TERMINALS",
    "STOPS",
    "FORK_ROWS",
    "InvalidTransition",
    "transition_for",
    "event_from",
    "render_markdown",
    "validate",
]


class State(str, Enum):
    IDLE = "IDLE"
    STAGE_RUNNING = "STAGE_RUNNING"
    STEP_RUNNING = "STEP_RUNNING"
    BEHAVIOR_RUNNING = "BEHAVIOR_RUNNING"
    BEHAVIOR_COMPLETED = "BEHAVIOR_COMPLETED"
    STEP_COMPLETED = "STEP_COMPLETED"
    STAGE_COMPLETED = "STAGE_COMPLETED"
    WORKFLOW_COMPLETED = "WORKFLOW_COMPLETED"
    WORKFLOW_FAILED = "WORKFLOW_FAILED"
    WORKFLOW_ABORTED = "WORKFLOW_ABORTED"


class Event(str, Enum):
    START_WORKFLOW = "START_WORKFLOW"
    START_STEP = "START_STEP"
    START_BEHAVIOR = "START_BEHAVIOR"
    COMPLETE_ACTION = "COMPLETE_ACTION"
    COMPLETE_STEP = "COMPLETE_STEP"
    COMPLETE_STAGE = "COMPLETE_STAGE"
    NEXT_STAGE = "NEXT_STAGE"
    FOLLOW_UP = "FOLLOW_UP"
    FORK = "FORK"
    JOIN = "JOIN"
    FAIL = "FAIL"
    ABORT = "ABORT"


@dataclass(frozen=True)
class Transition:
    """One row: ``event`` moves ``source`` to one of ``targets`` (the first is the default)."""

    event: Event
    source: State
    targets: tuple[State, ...]
    agent: str | None = None
    root: str | None = None
    note: str = ""


INITIAL = State.IDLE
SUCCESS = State.WORKFLOW_COMPLETED
#: states with no exit: WORKFLOW_ABORTED is resumed from its checkpoint, not by an event
TERMINALS = frozenset({State.WORKFLOW_FAILED, State.WORKFLOW_ABORTED})
#: where a run stops: a terminal, or the success state (left only by ``bcc ask``)
STOPS = TERMINALS | {State.WORKFLOW_COMPLETED}

_S = State
_E = Event

_CORE: tuple[Transition, ...] = (
    Transition(_E.START_WORKFLOW, _S.IDLE, (_S.STAGE_RUNNING,), "stage-planner", "stages"),
    Transition(
        _E.START_STEP,
        _S.STAGE_RUNNING,
        (_S.STEP_RUNNING, _S.STAGE_COMPLETED),
        "step-planner",
        "steps",
        "STAGE_COMPLETED = no planned step can start (G8)",
    ),
    Transition(
        _E.START_BEHAVIOR, _S.STEP_RUNNING, (_S.BEHAVIOR_RUNNING,), "behavior-arranger", "behavior"
    ),
    Transition(
        _E.COMPLETE_ACTION,
        _S.BEHAVIOR_RUNNING,
        (_S.BEHAVIOR_COMPLETED,),
        "action-generator",
        "actions",
    ),
    Transition(
        _E.COMPLETE_STEP,
        _S.BEHAVIOR_COMPLETED,
        (_S.STEP_COMPLETED, _S.STEP_RUNNING),
        "behavior-reflector",
        "reflection",
        "STEP_RUNNING = next behavior of the same step",
    ),
    Transition(
        _E.COMPLETE_STAGE,
        _S.STEP_COMPLETED,
        (_S.STEP_RUNNING, _S.STAGE_COMPLETED),
        "stage-reflector",
        "stage_reflection",
        "STEP_RUNNING = next step of the same stage",
    ),
    Transition(
        _E.NEXT_STAGE,
        _S.STAGE_COMPLETED,
        (_S.STAGE_RUNNING, _S.WORKFLOW_COMPLETED),
        None,
        None,
        "STAGE_RUNNING = next stage",
    ),
    Transition(
        _E.FOLLOW_UP,
        _S.WORKFLOW_COMPLETED,
        (_S.STAGE_RUNNING,),
        "stage-planner",
        "stages",
        "`bcc ask`: new stages for a follow-up question",
    ),
)


#: a fork: the behavior arranger answers with 2-3 alternative behaviors; each branch runs
#: COMPLETE_ACTION and COMPLETE_STEP in a kernel of its own, all at once, and JOIN keeps the
#: branch whose choice expression scores best (its reflection decides where the step goes)
FORK_ROWS: tuple[Transition, ...] = (
    Transition(
        _E.FORK,
        _S.STEP_RUNNING,
        (_S.BEHAVIOR_RUNNING,),
        "behavior-arranger",
        "alternatives",
        "2-3 branches, each in its own kernel, run COMPLETE_ACTION and COMPLETE_STEP at once",
    ),
    Transition(
        _E.JOIN,
        _S.BEHAVIOR_RUNNING,
        (_S.STEP_COMPLETED, _S.STEP_RUNNING),
        None,
        None,
        "keeps the best-scoring branch, whose reflection decides; STEP_RUNNING = no branch "
        "succeeded",
    ),
)


def _with_failure_edges(core: Iterable[Transition]) -> tuple[Transition, ...]:
    rows = list(core)
    for event, target in ((_E.FAIL, _S.WORKFLOW_FAILED), (_E.ABORT, _S.WORKFLOW_ABORTED)):
        for state in State:
            if state not in STOPS:
                rows.append(Transition(event, state, (target,)))
    return tuple(rows)


TRANSITIONS: tuple[Transition, ...] = _with_failure_edges(_CORE + FORK_ROWS)
_INDEX: dict[tuple[State, Event], Transition] = {(t.source, t.event): t for t in TRANSITIONS}


class InvalidTransition(ValueError):
    """An event that the table does not allow from a state, or a target it does not list."""


def transition_for(source: State, event: Event) -> Transition:
    """The row for ``event`` fired in ``source``; raises InvalidTransition when there is none."""
    try:
        return _INDEX[(State(source), Event(event))]
    except KeyError:
        raise InvalidTransition(f"{event} is not allowed from {source}") from None


def event_from(source: State) -> Transition:
    """The single agent-or-bookkeeping row leaving ``source`` (FAIL, ABORT and a fork's rows
    excluded)."""
    rows = [t for t in _CORE if t.source == source]
    if len(rows) != 1:
        raise InvalidTransition(f"no regular event leaves {source}")
    return rows[0]


def check_target(source: State, event: Event, target: State) -> Transition:
    """Validate that ``event`` may move ``source`` to ``target``; return the row."""
    row = transition_for(source, event)
    if State(target) not in row.targets:
        raise InvalidTransition(f"{event} from {source} cannot go to {target}")
    return row


def validate(rows: tuple[Transition, ...] = TRANSITIONS) -> None:
    """Raise ValueError unless the table is well formed (see module docstring)."""
    sources = {t.source for t in rows}
    targets = {s for t in rows for s in t.targets}
    initial = [s for s in State if s not in targets]
    if initial != [INITIAL]:
        raise ValueError(f"exactly one initial state expected, found {initial}")
    for terminal in TERMINALS:
        if terminal in sources:
            raise ValueError(f"terminal state {terminal} has exits")
    exits = [t.event for t in rows if t.source == SUCCESS]
    if exits != [Event.FOLLOW_UP]:
        raise ValueError(f"the success state's one exit is FOLLOW_UP, found {exits}")
    for fork in (t for t in rows if t.event == _E.FORK):
        other = [t for t in rows if t.source == fork.source and t.event not in _FORKING]
        if not other or other[0].agent != fork.agent:
            raise ValueError(f"FORK from {fork.source} is not the other answer of its agent")
    for join in (t for t in rows if t.event == _E.JOIN):
        forks = [t for t in rows if t.event == _E.FORK and join.source in t.targets]
        if not forks:
            raise ValueError(f"JOIN from {join.source} joins no fork")
    seen = {(t.source, t.event) for t in rows}
    if len(seen) != len(rows):
        raise ValueError("duplicate (state, event) rows")
    graph: dict[State, set[State]] = {s: set() for s in State}
    for t in rows:
        graph[t.source].update(t.targets)
    reached = _closure(graph, INITIAL)
    if reached != set(State):
        raise ValueError(f"unreachable states: {sorted(set(State) - reached)}")
    for state in State:
        if state not in TERMINALS and SUCCESS not in _closure(graph, state):
            raise ValueError(f"{state} cannot reach {SUCCESS}")


_FORKING = (_E.FORK, _E.JOIN, _E.FAIL, _E.ABORT)


def _closure(graph: dict[State, set[State]], start: State) -> set[State]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def render_markdown(rows: tuple[Transition, ...] = TRANSITIONS) -> str:
    """The table as markdown (FAIL/ABORT folded into one row each), for docs/workflow.md."""
    lines = [
        "| event | from | to | agent | payload root |",
        "|---|---|---|---|---|",
    ]
    for t in rows:
        if t.event in (_E.FAIL, _E.ABORT):
            continue
        to = ", or ".join(s.value for s in t.targets)
        if t.note:
            to += f" ({t.note})"
        agent = t.agent or "none"
        root = f"`<{t.root}>`" if t.root else "—"
        lines.append(f"| {t.event.value} | {t.source.value} | {to} | {agent} | {root} |")
    lines.append(
        "| FAIL | any but WORKFLOW_COMPLETED and the terminals | WORKFLOW_FAILED | none | — |"
    )
    lines.append(
        "| ABORT | any but WORKFLOW_COMPLETED and the terminals | WORKFLOW_ABORTED (resumable) "
        "| none | — |"
    )
    return "\n".join(lines) + "\n"


validate()
