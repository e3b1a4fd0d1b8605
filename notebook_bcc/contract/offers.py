"""Compact rounds' offers (docs/agents.md, "Compact rounds"): where a reply may carry a later
transition's payload, its prompt says so in one line (``prompts/PHRASES.md``, ``offer_*``),
then gives that agent's format and rules, read from the agent's own template (one copy in the
repository). ``workflow/exchange.py`` keeps what a reply carried; this module only asks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from string import Template

from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.phrases import phrase
from notebook_bcc.contract.plan_view import pending_steps, pending_steps_text
from notebook_bcc.contract.reply import resource_dir
from notebook_bcc.fsm import Event

__all__ = ["COMPACT_STEP_CALLS", "offers_text", "part_format"]

#: what a step costs in compact rounds, as the planners' prompts say it (``$step_calls``)
COMPACT_STEP_CALLS = "one or two"

#: the parts a reply may carry, by the asking event, in the order the prompt offers them
_OFFERS: dict[Event, tuple[str, ...]] = {
    Event.START_WORKFLOW: ("steps",),
    Event.FOLLOW_UP: ("steps",),
    Event.START_BEHAVIOR: ("actions",),
    Event.COMPLETE_STEP: ("behavior", "stage_reflection", "next_behavior"),
    Event.COMPLETE_STAGE: ("next_behavior",),
}

#: whose format a part is written in (a retry's behavior carries its actions inside it)
_FORMATS: dict[str, tuple[Event, ...]] = {
    "steps": (Event.START_STEP,),
    "actions": (Event.COMPLETE_ACTION,),
    "behavior": (Event.START_BEHAVIOR, Event.COMPLETE_ACTION),
    "stage_reflection": (Event.COMPLETE_STAGE,),
    "next_behavior": (Event.START_BEHAVIOR, Event.COMPLETE_ACTION),
}


def _applies(kind: str, obs: Observation) -> bool:
    """Offer a part only where it can be used: a step's first behavior carries its actions, a
    reflection a retry's behavior while the step may have another, a stage reflection when
    there is a stage, the next step's first behavior while a step of the stage is to come."""
    if kind == "actions":
        return not obs.behaviors_in_step
    if kind == "behavior":
        return obs.behaviors_in_step < obs.max_behaviors
    if kind == "stage_reflection":
        return obs.stage is not None
    if kind == "next_behavior":
        return bool(pending_steps(obs))
    return True


def offers_text(obs: Observation, stage_reflector_sees: Callable[[Observation], str]) -> str:
    """The ``$combined`` of ``obs``'s prompt: each offer that applies, its line then the
    formats it needs (a stage reflection also what its own prompt shows beside the format,
    from ``stage_reflector_sees``). Nothing in full rounds or in a fork's branch."""
    if obs.rounds != "compact" or obs.branch:
        return ""
    texts, shown = [], set()
    for kind in _OFFERS.get(obs.event, ()):
        if not _applies(kind, obs):
            continue
        formats = [e for e in _FORMATS[kind] if e not in shown]  # each format once a prompt
        given = "" if formats else " Their formats and rules are the ones given above."
        shown.update(formats)
        text = "\n\n".join([phrase(f"offer_{kind}") + given, *map(part_format, formats)])
        if kind == "stage_reflection":
            text += "\n\n" + stage_reflector_sees(obs)
        if kind == "next_behavior":
            text += "\n\nSteps of this stage still to come:\n" + pending_steps_text(obs)
        texts.append(text)
    return "\n\n".join(texts)


@functools.cache
def part_format(event: Event) -> str:
    """An agent's format and rules, from its template: the system part without its first
    paragraph (who it is), its "Answer with one ..." line, or its own placeholders."""
    text = (resource_dir() / f"{event.value}.md").read_text(encoding="utf-8")
    system = text.partition("<!-- user -->")[0].strip()
    rest = "\n\n".join(system.split("\n\n")[1:])
    rest = Template(rest).safe_substitute(
        step_calls=COMPACT_STEP_CALLS, alternatives="", combined=""
    )
    rest = re.sub(r"\n{3,}", "\n\n", rest).strip()
    return re.sub(r"Answer with one (`<\w+>`) element", r"If you give it: one \1 element", rest)
