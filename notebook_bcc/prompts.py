"""Renders ``prompts/<EVENT>.md`` from an Observation into a (system, user) pair.

A template is markdown with ``$name`` placeholders (``string.Template``); the line
``<!-- user -->`` separates the system part from the user part. Every field has a size bound,
so a prompt's size does not grow with the length of the workflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from string import Template

from .observation import Observation
from .payloads import resource_dir

__all__ = ["RenderedPrompt", "render", "template_path"]

SEPARATOR = "<!-- user -->"
BOUNDS = {
    "problem": 6_000,
    "plan": 3_000,
    "ledger": 4_000,
    "current": 2_500,
    "execution": 4_000,
    "checks": 1_500,
    "feedback": 1_500,
    "lessons": 1_500,
}


@dataclass(frozen=True)
class RenderedPrompt:
    event: str
    system: str
    user: str

    @property
    def size(self) -> int:
        return len(self.system) + len(self.user)


def template_path(event: str):  # -> Path
    return resource_dir() / f"{event}.md"


@lru_cache(maxsize=16)
def _template(event: str) -> tuple[Template, Template]:
    text = template_path(event).read_text(encoding="utf-8")
    system, _, user = text.partition(SEPARATOR)
    return Template(system.strip() + "\n"), Template(user.strip() + "\n")


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head - 40
    return f"{text[:head]}\n... [{len(text) - head - tail} chars omitted] ...\n{text[-tail:]}"


def _plan(obs: Observation) -> str:
    if not obs.stages:
        return "(no plan yet)"
    lines = []
    for i, stage in enumerate(obs.stages):
        mark = "→" if i == obs.stage_index else " "
        lines.append(f"{mark} stage {stage.id} [{stage.status}]: {stage.title}")
        if i == obs.stage_index:
            for j, step in enumerate(stage.steps):
                smark = "→" if j == obs.step_index else " "
                lines.append(f"    {smark} step {step.id} [{step.status}]: {step.title}")
    return "\n".join(lines)


def _current(obs: Observation) -> str:
    parts = []
    if obs.stage:
        s = obs.stage
        parts.append(f"Stage `{s.id}` — {s.title}\nGoal: {s.goal}")
        if s.verified_artifacts:
            parts.append("Stage artifacts: " + ", ".join(s.verified_artifacts))
    if obs.step:
        t = obs.step
        parts.append(f"Step `{t.id}` — {t.title}\nGoal: {t.goal}")
        if t.verified_artifacts:
            parts.append("Step artifacts: " + ", ".join(t.verified_artifacts))
        if t.required_variables:
            parts.append("Step needs: " + ", ".join(t.required_variables))
    if obs.behavior:
        b = obs.behavior
        outs = ", ".join(v.name for v in b.outputs)
        parts.append(f"Behavior `{b.id}` (iteration {obs.iteration}): {b.task}\nOutputs: {outs}")
        if b.acceptance:
            parts.append("Acceptance: " + "; ".join(b.acceptance))
    return "\n".join(parts) or "(nothing started yet)"


def _execution(obs: Observation) -> str:
    if not obs.cells:
        return "(no code ran in this behavior)"
    lines = []
    for i, cell in enumerate(obs.cells, 1):
        head = f"cell {i}: {cell.status}"
        if cell.error_name:
            head += f" — {cell.error_name}: {cell.error_value or ''}"
        lines.append(f"{head}\n{cell.excerpt.strip()}")
    return "\n\n".join(lines)


def _checks(obs: Observation) -> str:
    lines = [f"artifact {n}: {'present' if ok else 'MISSING'}" for n, ok in obs.artifacts]
    lines += [f"criterion `{e}`: {s}" + (f" ({d})" if d else "") for e, s, d in obs.criteria]
    lines += [f"note: {n}" for n in obs.notes]
    return "\n".join(lines) or "(no checks)"


def render(obs: Observation) -> RenderedPrompt:
    """Render the template for ``obs.event``."""
    fields = {
        "problem": obs.problem,
        "files": ", ".join(obs.files),
        "location": obs.location or "(start)",
        "iteration": str(obs.iteration),
        "plan": _plan(obs),
        "ledger": obs.ledger_text or "(no variables yet)",
        "current": _current(obs),
        "execution": _execution(obs),
        "checks": _checks(obs),
        "feedback": obs.feedback or "(none)",
        "lessons": "\n".join(f"- {x}" for x in obs.lessons) or "(none yet)",
        "behaviors_in_step": str(obs.behaviors_in_step),
        "max_behaviors": str(obs.max_behaviors),
    }
    bounded = {k: _bound(v, BOUNDS.get(k, 500)) for k, v in fields.items()}
    system_t, user_t = _template(obs.event)
    return RenderedPrompt(
        obs.event, system_t.safe_substitute(bounded), user_t.safe_substitute(bounded)
    )


def with_repair(prompt: RenderedPrompt, error: Exception, root: str) -> RenderedPrompt:
    """The same prompt plus the exact validation error of the previous reply."""
    note = (
        "\n\n## Your previous reply was rejected\n"
        f"{error}\n"
        f"Answer again with exactly one <{root}> element that fixes this; put code in CDATA.\n"
    )
    return RenderedPrompt(prompt.event, prompt.system, prompt.user + note)
