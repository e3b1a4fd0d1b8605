"""The plan and the current position, as prompt text.

The plan (:func:`plan_text`) changes only when the plan does (a stage's steps are planned, a
revision, a stage completes), so consecutive prompts share it as a cacheable prefix: it shows
no statuses and no marker of the current step. Where the run stands is :func:`position_text`,
near the end of a prompt. Prompts without the plan show the current step in full and its stage
by title (:func:`step_text`, the same for every behavior of the step, so it comes before the
variables) and the behavior apart (:func:`behavior_text`, last): goals and tasks are decision
text and are never cut.

Compact rounds' offers (docs/agents.md, "Compact rounds") come last: where a reply may answer a
later transition of the plan ahead, its prompt says so in one line (``prompts/PHRASES.md``,
``offer_*``), then gives that agent's format and rules, read from the agent's own template (one
copy in the repository). ``workflow/exchange.py`` keeps what a reply carried; this only asks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from string import Template

from notebook_bcc.contract.observation import Observation, StageView, StepView
from notebook_bcc.contract.phrases import phrase
from notebook_bcc.contract.reply import resource_dir
from notebook_bcc.fsm import Event

__all__ = [
    "COMPACT_STEP_CALLS",
    "behavior_text",
    "focus_text",
    "offers_text",
    "part_format",
    "pending_steps",
    "pending_steps_text",
    "plan_text",
    "position_text",
    "step_text",
]

_DONE = ("complete", "failed", "skipped")


def _needs(obs: Observation, names: tuple[str, ...]) -> str:
    """Required variables, each marked when it is no longer in the kernel."""
    gone = {g.split(" ", 1)[0] for g in obs.ledger_view.deleted}
    return ", ".join(f"{n} (deleted since)" if n in gone else n for n in names)


def plan_text(obs: Observation) -> str:
    """Every stage not yet done with its goal, and its steps with their goals, what they leave
    and what they need; a done stage and its steps by title (its findings and lesson say what
    it found). The behavior arranger, which works inside the current stage, sees the other
    stages by title."""
    if not obs.stages:
        return "(no plan yet)"
    lines = []
    arranging = obs.event == Event.START_BEHAVIOR  # the arranger works in one stage
    for i, stage in enumerate(obs.stages, 1):
        done = stage.status in _DONE
        if done or (arranging and i != obs.stage_index + 1):
            lines.append(f"stage {i} `{stage.id}`: {stage.title}")
            lines += [f"    step `{t.id}`: {t.title}" for t in stage.steps if done]
            continue
        lines.append(f"stage {i} `{stage.id}`: {stage.title} — {stage.goal}")
        if stage.verified_artifacts:
            lines.append(f"    artifacts: {', '.join(stage.verified_artifacts)}")
        if stage.required_variables:
            lines.append(f"    needs: {_needs(obs, stage.required_variables)}")
        for step in stage.steps:
            lines.append(f"    step `{step.id}`: {step.title} — {step.goal}")
            if step.verified_artifacts:
                lines.append(f"        artifacts: {', '.join(step.verified_artifacts)}")
            if step.required_variables:
                lines.append(f"        needs: {_needs(obs, step.required_variables)}")
    return "\n".join(lines)


def _progress(obs: Observation) -> list[str]:
    """Where the run stands: the stages' statuses, then the current stage's steps'."""
    n = len(obs.stages)
    stage = obs.stage
    if stage is None:
        return []
    last = obs.stage_index == n - 1
    lines = [
        f"Stage {obs.stage_index + 1} of {n}: `{stage.id}`"
        + (" (the last stage of the plan; the run ends when it completes)" if last else ""),
        "Stages: " + ", ".join(f"{st.id} [{st.status}]" for st in obs.stages),
    ]
    if obs.event == Event.START_STEP:
        lines.append("Its steps are planned now.")
    elif stage.steps:
        lines.append(
            "Steps of this stage: " + ", ".join(f"{t.id} [{t.status}]" for t in stage.steps)
        )
    if obs.step:
        lines.append(f"Current step {obs.step_index + 1} of {len(stage.steps)}: `{obs.step.id}`")
    return lines


def _pcs(step: StepView) -> list[str]:
    return (
        ["PCS considerations: " + "; ".join(f"{a}: {x}" for a, x in step.pcs)] if step.pcs else []
    )


def position_text(obs: Observation) -> str:
    """The current position for a prompt that shows the plan: no goal is repeated."""
    lines = _progress(obs)
    if obs.step and obs.event == Event.START_BEHAVIOR:  # the arranger shapes the work by them
        lines += _pcs(obs.step)
    return "\n".join(lines) or "(nothing started yet)"


def _planned(obs: Observation, label: str, item: StageView | StepView) -> list[str]:
    """A stage or step of the plan: its goal, its artifacts, what it needs."""
    parts = [f"{label} `{item.id}` — {item.title}\nGoal: {item.goal}"]
    if item.verified_artifacts:
        parts.append(f"{label} artifacts: " + ", ".join(item.verified_artifacts))
    if item.required_variables:
        parts.append(f"{label} needs: " + _needs(obs, item.required_variables))
    return parts


def pending_steps(obs: Observation) -> list[StepView]:
    """The steps of the current stage still to come."""
    return [] if obs.stage is None else [t for t in obs.stage.steps if t.status == "pending"]


def pending_steps_text(obs: Observation) -> str:
    """The steps of the current stage still to come, in full ("" when none is)."""
    return "\n\n".join("\n".join(_planned(obs, "Step", t)) for t in pending_steps(obs))


def step_text(obs: Observation) -> str:
    """The current step in full and its stage by title, for a prompt without the plan (the
    generator and the behavior reflector work on the step)."""
    parts = []
    if obs.stage:  # by title: the step's goal is the stage's, planned into this step
        parts.append(f"Stage `{obs.stage.id}` — {obs.stage.title}")
        n = len(obs.stages)
        last = obs.stage_index == n - 1
        parts.append(
            f"Stage {obs.stage_index + 1} of {n}"
            + (": the last stage of the plan; the run ends when it completes" if last else "")
        )
        if obs.stage.steps:  # what comes before and after this step (trial H)
            steps = ", ".join(f"`{t.id}` ({t.title}) [{t.status}]" for t in obs.stage.steps)
            parts.append(f"Steps of this stage: {steps}")
    if obs.step:
        parts += _planned(obs, "Step", obs.step)
        if obs.event != Event.COMPLETE_STEP:  # how to work: the generator's, not the judge's
            parts += _pcs(obs.step)
    return "\n".join(parts) or "(nothing started yet)"


def behavior_text(obs: Observation) -> str:
    """The current behavior: its task, inputs, outputs and (unless the checks list them)
    its acceptance criteria."""
    b = obs.behavior
    if b is None:
        return "(no behavior yet)"
    parts = [f"Behavior `{b.id}` (agent {b.agent})\nTask: {b.task}"]
    if b.inputs:
        parts.append("Inputs: " + ", ".join(v.name for v in b.inputs))
    parts.append("Outputs (create exactly these names): " + ", ".join(v.name for v in b.outputs))
    checked = {c[0] for c in obs.criteria}
    if b.acceptance and not set(b.acceptance) <= checked:  # else the checks list them
        parts.append(
            "Acceptance criteria (each evaluated by the runner as a Python expression in "
            "the kernel's namespace after the cells run):\n"
            + "\n".join(f"- `{c}`" for c in b.acceptance)
        )
    return "\n".join(parts)


def focus_text(obs: Observation) -> str:
    """What the planners said to focus on, labelled as their intent when they planned (a
    planner's guess about the data is not a finding)."""
    parts = []
    if obs.focus:
        parts.append(f"Plan focus (the stage planner's intent, before any cell ran): {obs.focus}")
    if obs.stage and obs.stage.focus:
        parts.append(
            f"Focus of stage {obs.stage.id} (the step planner's intent when it planned the "
            f"stage; what the cells printed since overrides it): {obs.stage.focus}"
        )
    return "\n".join(parts) or "(none given)"


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
