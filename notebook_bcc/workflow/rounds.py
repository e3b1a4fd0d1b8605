"""Compact rounds: the parts of a reply that answer later transitions (docs/agents.md).

A stage planner's ``<stage>`` may carry the stage's ``<steps>``, an arranger's ``<behavior>``
its ``<actions>``, a behavior reflector's ``<reflection>`` the stage reflection (when it
completes the step) or the next ``<behavior>`` with its ``<actions>`` (when it retries), a
stage reflection the next step's first ``<behavior>`` (when the stage goes on). The reply's
own transition is handled as always; each part is kept on the state under the question of
the transition it answers (``"EVENT location #iteration"``, as ``exchange.question`` names
it), committed with that transition, and used once, without a call, when the question comes.
A part whose transition does not come next is not kept (a reflection that retries the step
drops its stage reflection), nor a stage reflection whose reflection revised the plan (the
stage reflector is asked, and sees the new plan).
"""

from __future__ import annotations

from notebook_bcc.contract.payloads import ParsedPayload
from notebook_bcc.fsm import Event, State
from notebook_bcc.rundir.state import Foreseen, WorkflowState
from notebook_bcc.workflow.exchange import question

__all__ = ["foreseen_parts"]

#: the transition a part answers, and the state the reply's transition must reach for it to
#: come next (None: any; a stage's steps wait for their stage)
_ANSWERS = {
    "steps": (Event.START_STEP, None),
    "actions": (Event.COMPLETE_ACTION, State.BEHAVIOR_RUNNING),
    "behavior": (Event.START_BEHAVIOR, State.STEP_RUNNING),
    "stage_reflection": (Event.COMPLETE_STAGE, State.STEP_COMPLETED),
}


def foreseen_parts(
    parsed: ParsedPayload, s: WorkflowState, target: State, forced: bool, seq: int, agent: str
) -> list[Foreseen]:
    """The parts of ``parsed`` to keep, once its transition is handled (``s`` as it left it,
    moved to ``target``)."""
    kept = []
    for part in parsed.parts:
        event, needs = _ANSWERS[part.kind]
        if needs is not None and (target != needs or forced):
            continue
        if part.kind == "stage_reflection" and getattr(parsed.value, "revision", None):
            continue  # the plan changed under it: the stage reflector sees the new plan
        if part.kind == "steps":  # a stage is entered at its id, iteration 0
            if part.key not in {st.id for st in s.stages if st.status in ("pending", "running")}:
                continue
            asks = question(event, part.key, 0)
        else:  # the next transition's: the state's location stays as the handler left it
            asks = question(event, s.path, s.iteration)
        kept.append(Foreseen(asks, part.kind, part.text, seq, agent, part.error))
    return kept
